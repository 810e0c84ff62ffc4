package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// BenchmarkSessionSecond is the engine's side of a live session's cost: one
// op is one second of a running session of N players on a clean LAN link,
// every machine's Session, Peer and Endpoint included, on the simulated
// network (no system calls). Compare with the demo's measured CPU share
// (docs/live.md) to see what the sockets cost on top.
func BenchmarkSessionSecond(b *testing.B) {
	for _, n := range []int{4, 8, 64} {
		b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
			w := newWorld(b, 9, impair.Profile{Delay: 500 * time.Microsecond})
			host := w.host("p1", Config{Players: n})
			var ms []*machine
			for i := 2; i <= n; i++ {
				ms = append(ms, w.join(fmt.Sprintf("p%d", i), RolePlayer, host, Config{}))
			}
			if !w.runUntil(30*time.Second, started(append(ms, host)...)) {
				b.Fatal("no start")
			}
			w.runFor(5 * time.Second)
			for _, m := range append(ms, host) {
				m.events = nil
				clear(m.cks)
			}
			f0 := host.s.Frame()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.runFor(time.Second)
				for _, m := range append(ms, host) {
					m.events = m.events[:0]
					clear(m.cks)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(host.s.Frame()-f0)/float64(b.N), "frames/op")
		})
	}
}

// BenchmarkIdleWakeUp64 is one wake-up of a session with nothing due: the
// host of 64 players, every machine tracing its links, Ticked again at the
// time its driver last woke it, then asked its NextDeadline — what a
// driver does on every datagram and timer, hundreds of times a second.
func BenchmarkIdleWakeUp64(b *testing.B) {
	w := newWorld(b, 9, impair.Profile{Delay: 500 * time.Microsecond})
	w.hops = true
	host := w.host("p1", Config{Players: 64})
	ms := []*machine{host}
	for i := 2; i <= 64; i++ {
		ms = append(ms, w.join(fmt.Sprintf("p%d", i), RolePlayer, host, Config{}))
	}
	if !w.runUntil(60*time.Second, started(ms...)) {
		b.Fatal("no start")
	}
	w.runFor(15 * time.Second)
	s, now := host.s, w.now()
	if s.ep.Probes() == 0 {
		b.Fatal("the host sent no probe")
	}
	s.Tick(now)
	d0, ok0 := s.NextDeadline()
	b.ReportAllocs()
	for b.Loop() {
		s.Tick(now)
		if d, ok := s.NextDeadline(); d != d0 || ok != ok0 {
			b.Fatalf("deadline %v %v after an idle Tick, was %v %v", d, ok, d0, ok0)
		}
	}
}
