package sim

import (
	"fmt"
	"io"
	"runtime"
	"testing"
)

func benchScenario(players, frames int) *Scenario {
	names := make([]string, players)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i+1)
	}
	rtt, jitter, loss := 60.0, 5.0, 0.01
	return &Scenario{
		FPS: 30, Frames: frames, Seed: 1, Players: names,
		Network: LinkSpec{RTTMs: &rtt, JitterMs: &jitter, Loss: &loss},
	}
}

// BenchmarkSim8Players100kFrames is the cost of simulating 8 players for
// 100 000 frames (55 minutes of game time at 30 fps) with 60 ms ± 5 ms links
// and 1 % loss. It reports the heap in use after the run, which must not
// grow with the number of frames (compare with the 10 000-frame run).
func BenchmarkSim8Players100kFrames(b *testing.B) {
	for _, frames := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("frames=%d", frames), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sc := benchScenario(8, frames)
				if err := sc.check(); err != nil {
					b.Fatal(err)
				}
				res, err := Run(sc, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
				b.ReportMetric(res.End.Seconds(), "virtual-s")
				runtime.KeepAlive(res)
			}
		})
	}
}
