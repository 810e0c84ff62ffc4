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
