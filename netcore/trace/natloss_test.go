package trace

import (
	"net/netip"
	"testing"
	"time"
)

// The peer at hop limit 8 behind its NAT router at 7 (answering from the
// peer's address). The first probe at 8 is lost; the one at 9 reaches
// the peer and it answers: end 9, answered 9, hop 8 unknown. The next
// probe at 8 (unknown, below answered; its answer lost too, so the end
// stays) spent no peer budget, and the probe at 9 (the peer's, by end)
// followed 50 ms later: the incident's pair.
func TestScheduleNATPeerLostAtItsHop(t *testing.T) {
	routers := []netip.Addr{r1, r2, pub1, pub2, pub3, pub4, peerA} // NAT router at 7
	const peerHop = 8
	s := makeScheduler()
	s.AddLink(linkA, peerA)
	s.Pin(linkA, true)
	var log []sent
	type pending struct {
		due time.Duration
		o   outcome
	}
	var queue []pending
	lost := 0
	for now := time.Duration(0); now < 10*time.Second; now += 5 * time.Millisecond {
		rest := queue[:0]
		for _, p := range queue {
			if p.due <= now {
				s.Done(p.o)
			} else {
				rest = append(rest, p)
			}
		}
		queue = rest
		for {
			link, ttl, untold, ok := s.Next(now)
			if !ok {
				break
			}
			r := simRoute{peer: peerA, routers: routers, peerAnswers: true}
			to, _, peer := r.hit(ttl)
			log = append(log, sent{now, link, ttl, to, untold})
			o := outcome{Link: link, TTL: ttl, Sent: now, RTT: msec(20), Addr: to, Reached: peer}
			due := now + msec(20)
			if ttl == peerHop && lost < 2 {
				lost++
				o = outcome{Link: link, TTL: ttl, Sent: now, Lost: true}
				due = now + schedTimeout
			}
			queue = append(queue, pending{due, o})
		}
	}
	var last sent
	seen := false
	for _, p := range log {
		t.Logf("%v ttl %d to %v untold %v", p.at, p.ttl, p.to, p.untold)
		if p.ttl < peerHop {
			continue
		}
		if seen && p.at-last.at < perHopInterval {
			t.Fatalf("the peer heard hop limits %d and %d at %v and %v", last.ttl, p.ttl, last.at, p.at)
		}
		last, seen = p, true
	}
}
