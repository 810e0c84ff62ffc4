package simnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

var (
	alice = netip.MustParseAddrPort("10.0.0.1:7373")
	bob   = netip.MustParseAddrPort("10.0.0.2:7373")
	carol = netip.MustParseAddrPort("[fd00::3]:7373")
)

type arrival struct {
	at       time.Duration
	from, to netip.AddrPort
	data     string
}

// recorder returns a receive function appending to log.
func recorder(log *[]arrival, to netip.AddrPort) RecvFunc {
	return func(now time.Duration, from netip.AddrPort, p []byte) {
		*log = append(*log, arrival{now, from, to, string(p)})
	}
}

func TestDeliveryAfterEachDirectionsDelay(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetPath(alice, bob, impair.Profile{Delay: 40 * time.Millisecond})
	n.SetPath(bob, alice, impair.Profile{Delay: 10 * time.Millisecond})
	var pongAt time.Duration
	var b *Node
	a := n.Attach(alice, func(now time.Duration, from netip.AddrPort, p []byte) {
		if from != bob || string(p) != "pong" {
			t.Errorf("alice got %q from %v", p, from)
		}
		pongAt = now
	})
	b = n.Attach(bob, func(now time.Duration, from netip.AddrPort, p []byte) {
		if now != 5*time.Millisecond+40*time.Millisecond {
			t.Errorf("ping arrived at %v, want 45ms", now)
		}
		if err := b.Send(from, []byte("pong")); err != nil {
			t.Error(err)
		}
	})
	s.At(5*time.Millisecond, func() {
		if err := a.Send(bob, []byte("ping")); err != nil {
			t.Error(err)
		}
	})
	s.Run(nil)
	if pongAt != 55*time.Millisecond {
		t.Fatalf("pong arrived at %v, want 55ms (5 + 40 + 10)", pongAt)
	}
	if a.LocalAddr() != alice {
		t.Fatalf("LocalAddr = %v", a.LocalAddr())
	}
}

func TestSendCopiesTheDatagram(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetDefault(impair.Profile{Delay: time.Millisecond, Dup: 1})
	var log []arrival
	a := n.Attach(alice, recorder(&log, alice))
	n.Attach(bob, recorder(&log, bob))
	buf := []byte("first")
	a.Send(bob, buf)
	copy(buf, "XXXXX")
	a.Send(bob, buf)
	s.Run(nil)
	var got []string
	for _, l := range log {
		got = append(got, l.data)
	}
	slices.Sort(got)
	if want := []string{"XXXXX", "XXXXX", "first", "first"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %q, want each datagram twice as sent", got)
	}
}

// Loss happens on the way, after the sender numbered its datagrams, so the
// receiver sees real gaps in the sequence — exactly as many as the path
// dropped (SPEC L2).
func TestLossLeavesGapsTheReceiverCanSee_L2(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 3)
	n.SetPath(alice, bob, impair.Profile{Delay: 20 * time.Millisecond, Loss: 0.05})
	const sent = 10_000
	seen := make([]bool, sent)
	a := n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {})
	n.Attach(bob, func(_ time.Duration, _ netip.AddrPort, p []byte) {
		seen[binary.LittleEndian.Uint32(p)] = true
	})
	for i := range sent {
		s.At(time.Duration(i)*time.Millisecond, func() {
			a.Send(bob, binary.LittleEndian.AppendUint32(nil, uint32(i)))
		})
	}
	s.Run(nil)
	gaps := 0
	for _, ok := range seen {
		if !ok {
			gaps++
		}
	}
	st := n.PathStats(alice, bob)
	if st.Offered != sent || uint64(gaps) != st.Dropped {
		t.Fatalf("receiver saw %d gaps, path says offered %d dropped %d", gaps, st.Offered, st.Dropped)
	}
	if gaps < 400 || gaps > 600 {
		t.Fatalf("%d gaps in %d datagrams at 5 %% loss", gaps, sent)
	}
}

// The network's own counts are loss that was asked for, reported as such and
// apart from what arrived (SPEC L7).
func TestStatsAreAskedForNotMeasured_L7(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 5)
	n.SetDefault(impair.Profile{Delay: 3 * time.Millisecond, Loss: 0.2, Dup: 0.1})
	delivered := 0
	count := func(time.Duration, netip.AddrPort, []byte) { delivered++ }
	a := n.Attach(alice, count)
	b := n.Attach(bob, count)
	for range 1000 {
		a.Send(bob, []byte{1})
		b.Send(alice, []byte{2})
	}
	s.Run(nil)
	st := n.Stats()
	ab, ba := n.PathStats(alice, bob), n.PathStats(bob, alice)
	if st.Stats != ab.Add(ba) {
		t.Fatalf("network stats %+v are not the sum of its paths %+v + %+v", st, ab, ba)
	}
	if st.Offered != 2000 || st.Delivered != uint64(delivered) || st.Delivered != st.Offered-st.Dropped+st.Duplicated {
		t.Fatalf("stats %+v, receivers counted %d", st, delivered)
	}
	if n.PathStats(alice, carol) != (impair.Stats{}) {
		t.Fatal("an unused path has counts")
	}
}

// runScenario drives three nodes through every kind of impairment: a
// ping-pong between alice and bob and a periodic stream from carol, with a
// profile change halfway. It returns everything that arrived, in order.
func runScenario(seed uint64) []arrival {
	s := NewScheduler()
	n := NewNetwork(s, seed)
	n.SetDefault(impair.Profile{Delay: 15 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05})
	n.SetLink(alice, bob, impair.Profile{Delay: 30 * time.Millisecond, Jitter: 8 * time.Millisecond, Loss: 0.1,
		Dup: 0.05, Reorder: 0.05, ReorderDelay: 25 * time.Millisecond})
	n.SetPath(carol, bob, impair.Profile{Delay: 5 * time.Millisecond, Jitter: 5 * time.Millisecond,
		Burst: &impair.GilbertElliott{PGoodToBad: 0.05, PBadToGood: 0.3, LossBad: 0.8}})

	var log []arrival
	var a, b, c *Node
	a = n.Attach(alice, func(now time.Duration, from netip.AddrPort, p []byte) {
		log = append(log, arrival{now, from, alice, string(p)})
		a.Send(from, append([]byte("re:"), p[len(p)-1]))
	})
	b = n.Attach(bob, func(now time.Duration, from netip.AddrPort, p []byte) {
		log = append(log, arrival{now, from, bob, string(p)})
		if from == alice {
			b.Send(alice, p)
		}
	})
	c = n.Attach(carol, recorder(&log, carol))
	for i := range 2000 {
		s.At(time.Duration(i)*7*time.Millisecond, func() {
			b.Send(alice, []byte{'b', byte(i)})
			c.Send(bob, []byte{'c', byte(i)})
			c.Send(alice, []byte{'c', byte(i)})
		})
	}
	s.At(7*time.Second, func() { n.SetDefault(impair.Profile{Delay: 50 * time.Millisecond, Loss: 0.3}) })
	s.At(10*time.Second, func() { n.Detach(carol) })
	s.Run(nil)
	return log
}

// Same seed and same calls: the same datagrams arrive at the same virtual
// times in the same order — the determinism `lagscope sim` relies on.
func TestSameSeedSameDeliveries(t *testing.T) {
	first, second := runScenario(99), runScenario(99)
	if len(first) < 1000 {
		t.Fatalf("only %d deliveries: the scenario is not exercising the network", len(first))
	}
	if !slices.Equal(first, second) {
		for i := range min(len(first), len(second)) {
			if first[i] != second[i] {
				t.Fatalf("delivery %d differs: %+v vs %+v", i, first[i], second[i])
			}
		}
		t.Fatalf("runs delivered %d and %d datagrams", len(first), len(second))
	}
	if slices.Equal(first, runScenario(100)) {
		t.Fatal("a different seed delivered exactly the same")
	}
}

// A path's stream depends on the seed and its two addresses only, not on
// which other paths were used first.
func TestPathStreamIndependentOfOtherTraffic(t *testing.T) {
	prof := impair.Profile{Delay: 10 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.3}
	run := func(noise bool) []arrival {
		s := NewScheduler()
		n := NewNetwork(s, 4)
		n.SetDefault(prof)
		var log []arrival
		a := n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {})
		n.Attach(bob, recorder(&log, bob))
		c := n.Attach(carol, func(time.Duration, netip.AddrPort, []byte) {})
		for i := range 300 {
			if noise {
				c.Send(alice, []byte("noise"))
			}
			a.Send(bob, []byte{byte(i)})
		}
		s.Run(nil)
		return log
	}
	if !slices.Equal(run(false), run(true)) {
		t.Fatal("traffic on another path changed alice→bob's decisions")
	}
}

func TestDetachLikeAKilledProcess(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetDefault(impair.Profile{Delay: 10 * time.Millisecond})
	var log []arrival
	a := n.Attach(alice, recorder(&log, alice))
	b := n.Attach(bob, recorder(&log, bob))
	a.Send(bob, []byte("to bob, in flight when he dies"))
	b.Send(alice, []byte("from bob, already on the wire"))
	s.At(5*time.Millisecond, func() { b.detach() })
	s.Run(nil)
	if len(log) != 1 || log[0].to != alice {
		t.Fatalf("deliveries %+v, want only bob's last datagram to alice", log)
	}
	if st := n.Stats(); st.Unreachable != 1 || st.Delivered != 1 || st.Dropped != 0 {
		t.Fatalf("stats %+v: the datagram to a vanished node is unreachable, not impairment loss", st)
	}
	if err := b.Send(alice, []byte("ghost")); !errors.Is(err, errDetached) {
		t.Fatalf("Send after Detach: %v", err)
	}
	// The address is free again: a new process may take it.
	n.Attach(bob, recorder(&log, bob))
	a.Send(bob, []byte("hello again"))
	s.Run(nil)
	if last := log[len(log)-1]; last.to != bob || last.data != "hello again" {
		t.Fatalf("re-attached node got %+v", last)
	}
}

func TestSetDefaultReachesPathsInUseButNotExplicitOnes(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	var log []arrival
	a := n.Attach(alice, recorder(&log, alice))
	n.Attach(bob, recorder(&log, bob))
	n.Attach(carol, recorder(&log, carol))
	n.SetPath(alice, carol, impair.Profile{Delay: 7 * time.Millisecond})
	a.Send(bob, []byte("1"))
	a.Send(carol, []byte("1"))
	s.Run(nil)
	n.SetDefault(impair.Profile{Delay: 100 * time.Millisecond})
	start := s.Now()
	a.Send(bob, []byte("2"))
	a.Send(carol, []byte("2"))
	s.Run(nil)
	got := map[string]time.Duration{}
	for _, l := range log {
		if l.data == "2" {
			got[l.to.String()] = l.at - start
		}
	}
	if got[bob.String()] != 100*time.Millisecond || got[carol.String()] != 7*time.Millisecond {
		t.Fatalf("delays after SetDefault: %v", got)
	}
}

func TestRefusals(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	a := n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {})
	if err := a.Send(bob, make([]byte, maxPayload+1)); err == nil {
		t.Error("Send accepted a datagram larger than UDP carries")
	}
	for name, f := range map[string]func(){
		"attach twice":    func() { n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {}) },
		"nil recv":        func() { n.Attach(carol, nil) },
		"invalid profile": func() { n.SetPath(alice, bob, impair.Profile{Loss: -1}) },
		"invalid default": func() { n.SetDefault(impair.Profile{Jitter: -1}) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "simnet") && !strings.Contains(fmt.Sprint(r), "impair") {
					t.Errorf("%s: no panic (%v)", name, r)
				}
			}()
			f()
		}()
	}
}

// BenchmarkSendDeliver is one datagram through the network: copy, impairment
// decision, scheduling, delivery. Steady state does not allocate.
func BenchmarkSendDeliver(b *testing.B) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetDefault(impair.Profile{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01, Dup: 0.01})
	a := n.Attach(alice, func(time.Duration, netip.AddrPort, []byte) {})
	n.Attach(bob, func(time.Duration, netip.AddrPort, []byte) {})
	payload := make([]byte, 200)
	// A standing queue of 64 datagrams in flight, as on a busy link.
	for range 64 {
		a.Send(bob, payload)
	}
	b.ReportAllocs()
	for b.Loop() {
		a.Send(bob, payload)
		s.Step()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "datagrams/s")
}
