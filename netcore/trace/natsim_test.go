package trace

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/longtest"
)

// natWorld is a randomized world: links through shared first routers,
// some peers behind NAT routers that answer from the peer's address one
// hop before it, lossy probes and answers, late and misattributed answers,
// links removed and re-added, bursts and pins, NextAt-driven or polled.
type natLinkWorld struct {
	peer    netip.Addr
	routers []netip.Addr // by hop limit - 1; invalid: silent
	nat     bool         // the last router answers from the peer's address
	answers bool
}

func (w natLinkWorld) phys(id Link, ttl int) string {
	if ttl > len(w.routers) {
		return "peer " + w.peer.String()
	}
	if w.nat && ttl == len(w.routers) {
		return "nat of " + w.peer.String()
	}
	if a := w.routers[ttl-1]; a.IsValid() {
		return a.String()
	}
	return fmt.Sprintf("silent %d/%d", id, ttl)
}

// runNatWorld runs one randomized world for d and says the first time a
// machine heard two probes within a second ("": never).
func runNatWorld(seed uint64, d time.Duration) string {
	rng := rand.New(rand.NewPCG(seed, 99))
	world := map[Link]natLinkWorld{}
	nl := 2 + rng.IntN(4)
	for id := Link(1); id <= Link(nl); id++ {
		peer := netip.AddrFrom4([4]byte{83, 0, 0, byte(id)})
		if id > 1 && rng.IntN(4) == 0 {
			world[id] = world[id-1] // another link to the same peer, same path
			continue
		}
		hops := []netip.Addr{r1}
		if rng.IntN(3) > 0 {
			hops = append(hops, r2)
		} else {
			hops = append(hops, netip.AddrFrom4([4]byte{82, byte(id), 1, 2}))
		}
		if rng.IntN(2) == 0 {
			hops = append(hops, pub1)
		}
		for i := range rng.IntN(6) {
			if rng.IntN(6) == 0 {
				hops = append(hops, netip.Addr{})
			} else {
				hops = append(hops, netip.AddrFrom4([4]byte{82, byte(id), 0, byte(i + 1)}))
			}
		}
		nat := rng.IntN(3) > 0
		if nat {
			hops = append(hops, peer)
		}
		world[id] = natLinkWorld{peer: peer, routers: hops, nat: nat, answers: rng.IntN(8) > 0}
	}
	lossP := 0.10
	lateP := 0.05
	mis := 0.03
	voidP := 0.02
	s := makeScheduler()
	active := map[Link]bool{}
	for id := range world {
		s.AddLink(id, world[id].peer)
		active[id] = true
	}
	type pending struct {
		due time.Duration
		o   outcome
	}
	var queue []pending
	last := map[string]sent{}
	useNextAt := rng.IntN(2) == 0
	for now := time.Duration(0); now < d; now += 5 * time.Millisecond {
		if now%(250*time.Millisecond) == 0 && rng.IntN(8) == 0 {
			id := Link(1 + rng.IntN(nl))
			switch rng.IntN(5) {
			case 0:
				s.RemoveLink(id)
			case 1:
				s.AddLink(id, world[id].peer)
			case 2:
				v := rng.IntN(2) == 0
				s.Pin(id, v)
			default:
				u := now + time.Duration(rng.IntN(20))*time.Second
				s.Burst(id, now, u)
			}
		}
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
			if useNextAt {
				at, ok := s.NextAt(now)
				if !ok || at > now {
					break
				}
			}
			link, ttl, untold, ok := s.Next(now)
			if !ok {
				break
			}
			if rng.IntN(50) == 0 {
				s.Cancel(link, ttl)
				continue
			}
			w := world[link]
			key := w.phys(link, ttl)
			if p, ok := last[key]; ok && now-p.at < time.Second {
				return fmt.Sprintf("seed %d: %s heard link %d ttl %d at %v and link %d ttl %d at %v (route %v nat %v)",
					seed, key, p.link, p.ttl, p.at, link, ttl, now, w.routers, w.nat)
			}
			last[key] = sent{at: now, link: link, ttl: ttl}
			rtt := msec(float64(5 + rng.IntN(60)))
			wait := 600 * time.Millisecond
			var o outcome
			var due time.Duration
			peerHit := ttl > len(w.routers)
			answers := peerHit && w.answers || !peerHit && w.routers[ttl-1].IsValid()
			lost := ttl > 3 && (rng.Float64() < lossP || rng.Float64() < lossP)
			switch {
			case !answers || lost:
				o = outcome{Link: link, TTL: ttl, Sent: now, Lost: true}
				due = now + wait
			case rng.Float64() < voidP:
				o = outcome{Link: link, TTL: ttl, Sent: now, Void: true}
				due = now + wait
			default:
				addr := w.peer
				if !peerHit {
					addr = w.routers[ttl-1]
				}
				o = outcome{Link: link, TTL: ttl, Sent: now, RTT: rtt, Addr: addr, Reached: peerHit}
				if peerHit && w.nat && untold && rng.Float64() < mis {
					o.Reached = false // the NAT router's header-only answer taken for it
				}
				due = now + rtt
				if rng.Float64() < lateP {
					due = now + time.Duration(rng.IntN(2000))*time.Millisecond
					o.RTT = due - now
				}
			}
			queue = append(queue, pending{due, o})
		}
	}
	return ""
}

// TestScheduleNATWorld: in randomized worlds (natWorld) no machine on any
// path — router, NAT router or peer — hears two probes within a second.
// The seeds are fixed; 40 by default, 200 under LAGSCOPE_LONG.
func TestScheduleNATWorld(t *testing.T) {
	n := uint64(longtest.Count(40, 200))
	fails := 0
	for seed := range n {
		if msg := runNatWorld(seed, 2*time.Minute); msg != "" {
			fails++
			if fails <= 15 {
				t.Error(msg)
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d seeds failed", fails, n)
	}
}
