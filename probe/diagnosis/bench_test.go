package diagnosis

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkDiagnose measures one evaluation: at 64 players (2016 pairs) it
// must stay under 1 ms. Shares are random, two paths slow, every
// pair noisy, so the fit does real work.
func BenchmarkDiagnose(b *testing.B) {
	for _, n := range []int{4, 16, 64} {
		b.Run("players="+strconv.Itoa(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			w := world{names: names(n), share: make([]float64, n), jitter: make([]float64, n),
				up: make([]float64, n), down: make([]float64, n),
				excess: map[[2]int]float64{{0, 1}: 300, {2, 3}: 120}, noise: 3, seed: 7}
			for i := range w.share {
				w.share[i] = 5 + rng.Float64()*80
				w.jitter[i] = rng.Float64() * 10
				w.up[i] = rng.Float64() * 0.01
			}
			in := w.build()
			var g Diagnoser
			g.Diagnose(in)
			b.ReportAllocs()
			b.ResetTimer()
			c0, ok := processCPU()
			for i := 0; i < b.N; i++ {
				g.Diagnose(in)
			}
			if c1, ok1 := processCPU(); ok && ok1 {
				// With GOMAXPROCS=1 this is the evaluation's own CPU time.
				b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
