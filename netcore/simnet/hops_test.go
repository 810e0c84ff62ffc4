package simnet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// hopWorld is a and b on a 20 ms core; a's access link (30 ms) lists
// routers, b's none unless the test gives it some.
func hopWorld(t *testing.T, hops []Hop) (*Network, *Node, *Node, *[]time.Duration) {
	t.Helper()
	s := NewScheduler()
	n := NewNetwork(s, 7)
	var arrivals []time.Duration
	a := n.Attach(netip.MustParseAddrPort("127.77.0.1:7373"), func(time.Duration, netip.AddrPort, []byte) {})
	b := n.Attach(netip.MustParseAddrPort("127.77.0.2:7373"), func(now time.Duration, _ netip.AddrPort, _ []byte) { arrivals = append(arrivals, now) })
	n.SetDefault(profileDelay(10 * time.Millisecond))
	n.SetAccess(a.addr, profileDelay(15*time.Millisecond), profileDelay(15*time.Millisecond))
	n.SetAccessHops(a.addr, hops)
	return n, a, b, &arrivals
}

// A datagram with hop limit h dies at the h-th router, which answers after
// its round trip quoting the datagram; a silent router answers nothing;
// past the routers the datagram reaches the peer as any datagram does.
func TestSendHopLimitDiesAtItsHop(t *testing.T) {
	hops := []Hop{
		{Addr: netip.MustParseAddr("192.168.1.1"), RTT: time.Millisecond},
		{RTT: 5 * time.Millisecond},
		{Addr: netip.MustParseAddr("10.0.0.1"), RTT: 20 * time.Millisecond},
	}
	n, a, b, arrivals := hopWorld(t, hops)
	for ttl := 1; ttl <= 4; ttl++ {
		if err := a.SendHopLimit(b.addr, []byte{byte(ttl), 1, 2}, ttl); err != nil {
			t.Fatal(err)
		}
		n.sched.RunUntil(n.sched.now + time.Second)
	}
	got := a.TakeICMP(nil)
	if len(got) != 2 {
		t.Fatalf("answers %+v, want hops 1 and 3", got)
	}
	for i, want := range []struct {
		from string
		rtt  time.Duration
		ttl  byte
	}{{"192.168.1.1", time.Millisecond, 1}, {"10.0.0.1", 20 * time.Millisecond, 3}} {
		g := got[i]
		sent := time.Duration(want.ttl-1) * time.Second
		if g.From != netip.MustParseAddr(want.from) || g.At-sent != want.rtt || g.To != b.addr || g.Quote[0] != want.ttl {
			t.Errorf("answer %d: %+v, want from %s after %v quoting ttl %d", i, g, want.from, want.rtt, want.ttl)
		}
	}
	// The fourth went past the routers: a one-way trip of 15 + 10 ms.
	if len(*arrivals) != 1 || (*arrivals)[0] != 3*time.Second+25*time.Millisecond {
		t.Fatalf("arrivals at b %v, want one at 3.025 s", *arrivals)
	}
	if a.SendHopLimit(b.addr, nil, 0) == nil {
		t.Fatal("hop limit 0 accepted")
	}
}

// A router answers at most one datagram per ICMPEvery, on the virtual
// clock; its loss drops what goes past it, game datagrams included, and
// nothing that stops at it.
func TestHopRateLimitAndForwardLoss(t *testing.T) {
	hops := []Hop{
		{Addr: netip.MustParseAddr("192.168.1.1"), RTT: time.Millisecond, ICMPEvery: 2500 * time.Millisecond, Loss: 0.5},
		{Addr: netip.MustParseAddr("10.0.0.1"), RTT: 10 * time.Millisecond},
	}
	n, a, b, arrivals := hopWorld(t, hops)
	const probes = 100
	for range probes {
		_ = a.SendHopLimit(b.addr, []byte{1}, 1)
		_ = a.SendHopLimit(b.addr, []byte{2}, 2)
		_ = a.Send(b.addr, []byte{3})
		n.sched.RunUntil(n.sched.now + time.Second)
	}
	var first, second int
	for _, g := range a.TakeICMP(nil) {
		switch g.Quote[0] {
		case 1:
			first++
		case 2:
			second++
		}
	}
	// Probes a second apart, answers at least 2.5 s apart: every third
	// probe is answered, from the first: 34 of 100.
	if first != 34 {
		t.Errorf("the rate-limited router answered %d of %d, want 34", first, probes)
	}
	if second < 35 || second > 65 || len(*arrivals) < 35 || len(*arrivals) > 65 {
		t.Errorf("past a router losing half: %d answers from the next, %d datagrams at b, want about 50", second, len(*arrivals))
	}
}

// The peer's home router answers from the peer's address, one hop before
// the peer, after the round trip to it: the core, the tracer's access and
// the peer's access less the router's own round trip.
func TestFarRouterAnswersFromThePeer(t *testing.T) {
	n, a, b, _ := hopWorld(t, []Hop{{Addr: netip.MustParseAddr("192.168.1.1"), RTT: time.Millisecond}})
	n.SetAccess(b.addr, profileDelay(5*time.Millisecond), profileDelay(5*time.Millisecond))
	n.SetAccessHops(b.addr, []Hop{{Addr: netip.MustParseAddr("192.168.7.1"), RTT: 2 * time.Millisecond}})
	_ = a.SendHopLimit(b.addr, []byte{1}, 2)
	n.sched.RunUntil(time.Second)
	got := a.TakeICMP(nil)
	// 2 × (15 + 10 + 5 − 1) ms.
	if len(got) != 1 || got[0].From != b.addr.Addr() || got[0].At != 58*time.Millisecond {
		t.Fatalf("answers %+v, want one from %v at 58 ms", got, b.addr.Addr())
	}
}

// Routers without loss draw nothing: a network whose access links list
// them delivers game datagrams exactly as one without.
func TestHopsWithoutLossDrawNothing(t *testing.T) {
	times := func(hops []Hop) []time.Duration {
		n, a, b, arrivals := hopWorld(t, hops)
		n.SetAccess(a.addr, profileJitter(15*time.Millisecond, 5*time.Millisecond, 0.2), profileDelay(15*time.Millisecond))
		for range 200 {
			_ = a.Send(b.addr, []byte{1})
			n.sched.RunUntil(n.sched.now + 10*time.Millisecond)
		}
		n.sched.RunUntil(n.sched.now + time.Second)
		return *arrivals
	}
	plain, routed := times(nil), times([]Hop{{Addr: netip.MustParseAddr("192.168.1.1"), RTT: time.Millisecond}, {RTT: 2 * time.Millisecond}})
	if len(plain) == 0 || len(plain) != len(routed) {
		t.Fatalf("%d datagrams without routers, %d with", len(plain), len(routed))
	}
	for i := range plain {
		if plain[i] != routed[i] {
			t.Fatalf("datagram %d: %v without routers, %v with", i, plain[i], routed[i])
		}
	}
}

func profileDelay(d time.Duration) impair.Profile { return impair.Profile{Delay: d} }

func profileJitter(d, j time.Duration, loss float64) impair.Profile {
	return impair.Profile{Delay: d, Jitter: j, Loss: loss}
}
