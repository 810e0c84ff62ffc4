package netcore

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Delays counts durations, from a microsecond to about an hour, in
// buckets an eighth of an octave wide: a quantile read from it is within
// about 6 % of the true one. Add is safe from any goroutine, allocates
// nothing and costs one atomic add, so a socket's reader can count every
// datagram. The UDP transport counts with it how long each datagram
// waited in the socket, from the kernel's arrival stamp to the read.
type Delays struct {
	b [delayBuckets]atomic.Uint64
}

// DelayCounts is a Delays read at one moment: plain counts, to merge
// (several sockets of one process) and to read quantiles from.
type DelayCounts [delayBuckets]uint64

const (
	delaySub     = 8  // buckets per octave
	delayOctaves = 32 // 2^32 µs is over an hour: the last bucket takes the rest
	delayBuckets = delaySub + (delayOctaves-3)*delaySub
)

// Add counts d; a negative d (two clocks a hair apart) counts as 0.
func (h *Delays) Add(d time.Duration) {
	h.b[delayBucket(d)].Add(1)
}

// Counts reads every bucket. Adds that run meanwhile may or may not be in
// it, each whole.
func (h *Delays) Counts() DelayCounts {
	var c DelayCounts
	for i := range h.b {
		c[i] = h.b[i].Load()
	}
	return c
}

// delayBucket is the bucket of d: whole microseconds up to 7, then eight
// buckets an octave.
func delayBucket(d time.Duration) int {
	u := uint64(max(d, 0) / time.Microsecond)
	if u < delaySub {
		return int(u)
	}
	o := bits.Len64(u) // ≥ 4
	i := delaySub + (o-4)*delaySub + int(u>>(o-4))&(delaySub-1)
	return min(i, delayBuckets-1)
}

// delayBucketMid is the middle of bucket i, the value a quantile in it
// reads as.
func delayBucketMid(i int) time.Duration {
	if i < delaySub {
		return time.Duration(i)*time.Microsecond + time.Microsecond/2
	}
	o := (i-delaySub)/delaySub + 4
	sub := uint64((i - delaySub) % delaySub)
	width := uint64(1) << (o - 4)
	lo := (delaySub + sub) * width
	return time.Duration(lo)*time.Microsecond + time.Duration(width)*time.Microsecond/2
}

// Merge adds o's counts to c.
func (c *DelayCounts) Merge(o DelayCounts) {
	for i := range c {
		c[i] += o[i]
	}
}

// Count is how many durations c holds.
func (c *DelayCounts) Count() uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// Quantile is the duration below which the fraction q (0 to 1) of the
// counted durations lie, as the middle of its bucket; false when nothing
// was counted.
func (c *DelayCounts) Quantile(q float64) (time.Duration, bool) {
	n := c.Count()
	if n == 0 {
		return 0, false
	}
	q = min(max(q, 0), 1)
	// The rank of the quantile among n sorted values, 1-based: the
	// smallest value with at least q·n values at or below it.
	rank := uint64(q * float64(n))
	if float64(rank) < q*float64(n) || rank == 0 {
		rank++
	}
	var seen uint64
	for i, v := range c {
		seen += v
		if seen >= rank {
			return delayBucketMid(i), true
		}
	}
	return delayBucketMid(delayBuckets - 1), true
}
