package sim

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

// heapMiB is the heap in use after a collection. With LAGSCOPE_HEAPPROF
// set, it also writes a heap profile to that path plus name.
func heapMiB(name string) float64 {
	runtime.GC()
	if dir := os.Getenv("LAGSCOPE_HEAPPROF"); dir != "" {
		if f, err := os.Create(dir + name); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// BenchmarkSim64Heap reports the heap in use at two
// points of one run — after frame `early` and at the end — of 64 players
// (4032 links) and, for the long run, 8 players, on 60 ms ± 5 ms links with
// 1 % loss. A heap that grows with the frames is retained per-frame state;
// one that is flat once the links warmed up is the fixed cost of the links.
// 64 players simulate at about 35 frames a second of CPU on this project's
// machine, so their run stops at 3000 frames; the 8 run to 100 000. With
// LAGSCOPE_HEAPPROF=prefix it writes heap profiles prefix.early, prefix.end.
func BenchmarkSim64Heap(b *testing.B) {
	for _, c := range []struct{ players, early, frames int }{{64, 1_000, 3_000}, {8, 10_000, 100_000}} {
		b.Run(fmt.Sprintf("players=%d/frames=%d-%d", c.players, c.early, c.frames), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sc := benchScenario(c.players, c.frames)
				if err := sc.check(); err != nil {
					b.Fatal(err)
				}
				var early float64
				taken := false
				res, err := RunWith(sc, io.Discard, Options{OnFrame: func(player string, f int, _ uint32) {
					if !taken && f == c.early {
						taken = true
						early = heapMiB(fmt.Sprintf(".%d.early", c.players))
					}
				}})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(early, "heap-MiB-early")
				b.ReportMetric(heapMiB(fmt.Sprintf(".%d.end", c.players)), "heap-MiB-end")
				runtime.KeepAlive(res)
			}
		})
	}
}
