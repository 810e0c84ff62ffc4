package simnet

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// A datagram a→b crosses a's access up, the path, then b's access down:
// the delays add (the scenario key `access`).
func TestAccessDelaysAdd(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetPath(alice, bob, impair.Profile{Delay: 10 * time.Millisecond})
	n.SetAccess(alice, impair.Profile{Delay: 75 * time.Millisecond}, impair.Profile{Delay: 75 * time.Millisecond})
	n.SetAccess(bob, impair.Profile{Delay: 5 * time.Millisecond}, impair.Profile{Delay: 3 * time.Millisecond})
	var log []arrival
	a := n.Attach(alice, recorder(&log, alice))
	n.Attach(bob, recorder(&log, bob))
	if err := a.Send(bob, []byte("x")); err != nil {
		t.Fatal(err)
	}
	s.Run(nil)
	if len(log) != 1 || log[0].at != 75*time.Millisecond+10*time.Millisecond+3*time.Millisecond {
		t.Fatalf("arrivals %v, want one at 88ms (75 up + 10 path + 3 down)", log)
	}
}

// Losses compound: survival is the product of the three stages'. Each
// stage's loss is also counted where it happened, as asked-for loss (L7).
func TestAccessLossesCompound_L7(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 42)
	n.SetPath(alice, bob, impair.Profile{Loss: 0.1})
	n.SetAccess(alice, impair.Profile{Loss: 0.2}, impair.Profile{})
	n.SetAccess(bob, impair.Profile{}, impair.Profile{Loss: 0.3})
	got := 0
	a := n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {})
	n.Attach(bob, func(time.Duration, netip.AddrPort, []byte) { got++ })
	const sent = 40000
	for i := 0; i < sent; i++ {
		a.Send(bob, []byte("x"))
	}
	s.Run(nil)
	want := sent * 0.8 * 0.9 * 0.7
	// 4 standard deviations of a binomial count.
	if tol := 4 * math.Sqrt(want*(1-want/sent)); math.Abs(float64(got)-want) > tol {
		t.Fatalf("%d of %d arrived, want %.0f ± %.0f", got, sent, want, tol)
	}
	up, _ := n.accessStats(alice)
	_, down := n.accessStats(bob)
	if up.Offered != sent || down.Offered == 0 || down.Offered >= up.Offered {
		t.Fatalf("access stats up %+v down %+v", up, down)
	}
	st := n.Stats()
	if dropped := st.Dropped; dropped != uint64(sent-got) {
		t.Fatalf("network dropped %d, want %d (every stage's drops)", dropped, sent-got)
	}
}

// A network with no access links draws exactly what it drew before they
// existed, and an access link on one node leaves other nodes' paths alone.
func TestAccessLeavesOtherDrawsAlone(t *testing.T) {
	run := func(withAccess bool) []time.Duration {
		s := NewScheduler()
		n := NewNetwork(s, 7)
		n.SetDefault(impair.Profile{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.2})
		if withAccess {
			n.SetAccess(carol, impair.Profile{Delay: time.Second, Loss: 0.5}, impair.Profile{Delay: time.Second})
		}
		var at []time.Duration
		a := n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {})
		n.Attach(bob, func(now time.Duration, _ netip.AddrPort, _ []byte) { at = append(at, now) })
		c := n.Attach(carol, func(time.Duration, netip.AddrPort, []byte) {})
		for i := 0; i < 200; i++ {
			a.Send(bob, []byte("x"))
			c.Send(alice, []byte("y"))
		}
		s.Run(nil)
		return at
	}
	plain, with := run(false), run(true)
	if len(plain) == 0 || len(plain) != len(with) {
		t.Fatalf("%d vs %d arrivals", len(plain), len(with))
	}
	for i := range plain {
		if plain[i] != with[i] {
			t.Fatalf("arrival %d at %v without carol's access, %v with it", i, plain[i], with[i])
		}
	}
}

// A timeline change keeps the access link's random streams.
func TestSetAccessTwiceKeepsTheStream(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetAccess(alice, impair.Profile{Loss: 0.5}, impair.Profile{})
	first := n.access[alice].up
	n.SetAccess(alice, impair.Profile{}, impair.Profile{})
	if n.access[alice].up != first {
		t.Fatal("SetAccess replaced the path")
	}
}
