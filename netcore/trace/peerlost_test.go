package trace

import (
	"testing"
	"time"
)

// The peer at hop limit 2, its first probe there lost, and the one at 3
// answered by the peer: the end is 3, the farthest hop that answered 3,
// and hop limit 2 is still unknown. Its next probe reaches the peer as
// the one at 3 does, so it spends the peer's budget although a hop past
// it answered (the peer, not a router): the probe at 3 waits a second.
func TestScheduleLostPeerHopSpendsThePeersBudget(t *testing.T) {
	s := makeScheduler()
	s.AddLink(linkA, peerA)
	s.Pin(linkA, true)
	next := func(now time.Duration, want int) {
		t.Helper()
		if link, ttl, _, ok := s.Next(now); !ok || link != linkA || ttl != want {
			t.Fatalf("Next(%v) = link %d hop %d (%v), want hop %d", now, link, ttl, ok, want)
		}
	}
	next(0, 1)
	s.Done(outcome{Link: linkA, TTL: 1, Sent: 0, RTT: msec(5), Addr: r1})
	next(msec(50), 2) // reaches the peer: its answer lost
	s.Done(outcome{Link: linkA, TTL: 2, Sent: msec(50), Lost: true})
	next(msec(1000), 1)
	s.Done(outcome{Link: linkA, TTL: 1, Sent: msec(1000), RTT: msec(5), Addr: r1})
	next(msec(1050), 3) // the peer answers it
	s.Done(outcome{Link: linkA, TTL: 3, Sent: msec(1050), RTT: msec(5), Addr: peerA, Reached: true})
	next(msec(2000), 1)
	s.Done(outcome{Link: linkA, TTL: 1, Sent: msec(2000), RTT: msec(5), Addr: r1})
	// Reaches the peer; its answer is lost or slower than 50 ms, so the
	// end stays at 3 while the probe is in flight.
	next(msec(2050), 2)
	for now := msec(2100); now < msec(3050); now += 5 * time.Millisecond {
		if _, ttl, _, ok := s.Next(now); ok && ttl >= 2 {
			t.Fatalf("the peer (hop limit 2) heard hop limit 2 at 2.05s and hop limit %d at %v", ttl, now)
		}
	}
}
