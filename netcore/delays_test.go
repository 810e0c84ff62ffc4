package netcore

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestDelaysQuantilesWithinABucket: a quantile read from the counts is
// within an eighth of an octave (half a bucket either way, about 6 %) of
// the exact quantile of the same durations, from microseconds to seconds.
func TestDelaysQuantilesWithinABucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, spread := range []time.Duration{5 * time.Microsecond, 300 * time.Microsecond, 40 * time.Millisecond, 3 * time.Second} {
		var h Delays
		var all []time.Duration
		for range 5000 {
			// Log-uniform over two decades below spread: most mass in the
			// small values, a long tail, as read delays are.
			d := time.Duration(float64(spread) * math.Pow(10, -2*rng.Float64()))
			h.Add(d)
			all = append(all, d)
		}
		slices.Sort(all)
		c := h.Counts()
		if c.Count() != 5000 {
			t.Fatalf("spread %v: %d counted, want 5000", spread, c.Count())
		}
		for _, q := range []float64{0.1, 0.5, 0.9, 0.99} {
			got, ok := c.Quantile(q)
			if !ok {
				t.Fatalf("spread %v q %v: no quantile", spread, q)
			}
			want := all[int(q*5000)-1]
			// Whole microseconds below 8 µs: within a microsecond there.
			tol := max(time.Duration(float64(want)*0.07), time.Microsecond)
			if diff := got - want; diff > tol || diff < -tol {
				t.Errorf("spread %v q %v: %v, the exact quantile is %v (tolerance %v)", spread, q, got, want, tol)
			}
		}
	}
}

// TestDelaysEdges: nothing counted has no quantile; a negative duration
// counts as zero; a duration past the last bucket lands in it; merged
// counts add.
func TestDelaysEdges(t *testing.T) {
	var h Delays
	c := h.Counts()
	if _, ok := c.Quantile(0.5); ok {
		t.Error("a quantile of nothing counted")
	}
	h.Add(-time.Millisecond)
	c = h.Counts()
	if got, _ := c.Quantile(0.5); got >= time.Microsecond {
		t.Errorf("a negative duration reads as %v, want under 1 µs", got)
	}
	h.Add(100 * time.Hour)
	c = h.Counts()
	if got, _ := c.Quantile(1); got < time.Hour {
		t.Errorf("100 h reads as %v, want over an hour", got)
	}
	var o Delays
	o.Add(time.Millisecond)
	m := c
	m.Merge(o.Counts())
	if m.Count() != 3 {
		t.Errorf("merged %d, want 3", m.Count())
	}
	if got, _ := m.Quantile(0.5); got < 900*time.Microsecond || got > 1100*time.Microsecond {
		t.Errorf("the median of -1 ms, 1 ms and 100 h reads as %v, want about 1 ms", got)
	}
}

// TestDelaysBucketsInOrder: every bucket's middle lies in that bucket and
// above the one before, so quantiles come out in order.
func TestDelaysBucketsInOrder(t *testing.T) {
	prev := time.Duration(-1)
	for i := range delayBuckets {
		mid := delayBucketMid(i)
		if mid <= prev {
			t.Fatalf("bucket %d's middle %v is not above bucket %d's %v", i, mid, i-1, prev)
		}
		if got := delayBucket(mid); got != i {
			t.Fatalf("bucket %d's middle %v falls in bucket %d", i, mid, got)
		}
		prev = mid
	}
}

// TestDelaysConcurrentAdds: adds from several goroutines all count (run
// with -race).
func TestDelaysConcurrentAdds(t *testing.T) {
	var h Delays
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Add(time.Duration(g*1000+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if c := h.Counts(); c.Count() != 4000 {
		t.Errorf("%d counted, want 4000", c.Count())
	}
}

// BenchmarkDelaysAdd: what counting a datagram's read delay costs.
func BenchmarkDelaysAdd(b *testing.B) {
	var h Delays
	b.ReportAllocs()
	for i := range b.N {
		h.Add(time.Duration(i&1023) * time.Microsecond)
	}
}
