package incident

import (
	"cmp"
	"math"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// The evidence of one directed link a → b, as a's row of the matrix tells
// it: a's waits for b's commands, the link's round trip and what a receives
// of b's datagrams. Cumulative figures are turned into per-evaluation
// steps, kept for the windows the thresholds read.

// step is what one evaluation added: its time and length, the waits and
// frames waited, and the datagrams judged and missed.
type step struct {
	at, dt         time.Duration
	wait           time.Duration
	frames         int
	expected, miss uint64
}

// steps holds a link's latest steps, oldest first.
const keepSteps = 8

type link struct {
	// cumulative figures at the last evaluation
	caused         time.Duration
	frames         int
	expected, miss uint64
	seen           bool

	steps [keepSteps]step
	n     int // steps held

	// rtt is the round trip now: how long the latest acks took (the
	// row's Unacked) when known, else SRTT; known once the link has an
	// estimate.
	rtt, rttvar time.Duration
	srtt        time.Duration // SRTT alone, the unacknowledged age aside
	known       bool
	fresh       bool // rtt is what recent acks show, not SRTT alone
	// base holds the round trips of calm evaluations and their variation,
	// the baseline their median, worked out again every rebase additions;
	// risen counts evaluations in a row above it. Once it holds
	// baselineSpan, each addition takes the place of the oldest, at head.
	// It is made at the first calm evaluation, at its full length: every
	// machine keeps one for each link of the matrix (4 032 at 64 players).
	base             *calmRing
	nbase, head      int
	baseRTT, baseVar time.Duration
	added            int
	risen, srttRisen int
	freshRisen       int
}

func (l *link) push(s step) {
	if l.n == keepSteps {
		copy(l.steps[:], l.steps[1:])
		l.n--
	}
	l.steps[l.n] = s
	l.n++
}

// window sums the steps that ended after since.
func (l *link) window(since time.Duration) (wait time.Duration, frames int, expected, miss uint64) {
	for _, s := range l.steps[:l.n] {
		if s.at > since {
			wait += s.wait
			frames += s.frames
			expected += s.expected
			miss += s.miss
		}
	}
	return
}

// firstWait is when the waits of the first step after since that has any
// began: a step's waits end by its evaluation, so they began at least
// their length before it, and after the step before.
func (l *link) firstWait(since time.Duration) time.Duration {
	for _, s := range l.steps[:l.n] {
		if s.at > since && s.wait > 0 {
			return max(s.at-s.dt, s.at-s.wait)
		}
	}
	return 0
}

// last is the newest step, zero before the first.
func (l *link) last() step {
	if l.n == 0 {
		return step{}
	}
	return l.steps[l.n-1]
}

// observe takes the link's figures at one evaluation.
func (l *link) observe(at, dt time.Duration, ml *feed.MatrixLink) {
	s := step{at: at, dt: dt}
	if l.seen {
		if ml.Caused >= l.caused {
			s.wait = ml.Caused - l.caused
		}
		if ml.Frames >= l.frames {
			s.frames = ml.Frames - l.frames
		}
		if ml.LossKnown && ml.Expected >= l.expected && ml.Missing >= l.miss {
			s.expected, s.miss = ml.Expected-l.expected, ml.Missing-l.miss
		}
	}
	// A stall going on counts for the player it waits for now, and the
	// whole stall for the one it waited for last: when that changes the
	// first one's figure drops back. The high-water mark counts such a
	// stretch once, where it ends up.
	l.caused, l.frames, l.seen = max(l.caused, ml.Caused), max(l.frames, ml.Frames), true
	if ml.LossKnown {
		l.expected, l.miss = ml.Expected, ml.Missing
	}
	l.push(s)
	l.known = ml.RTTKnown
	l.rtt, l.rttvar, l.srtt = ml.SRTT, ml.RTTVAR, ml.SRTT
	l.fresh = ml.Unacked > 0
	if ml.Unacked > 0 {
		// How long acks take now: above SRTT while a rise outruns the
		// clean samples, below it while SRTT still remembers one that
		// ended.
		l.rtt, l.known = ml.Unacked, true
	}
}

// baseline is the median of the calm round trips (and their variation),
// ok once baselineMin are held.
func (l *link) baseline() (rtt, rttvar time.Duration, ok bool) {
	if l.nbase < baselineMin {
		return 0, 0, false
	}
	return l.baseRTT, l.baseVar, true
}

// rise is how far the round trip now is above the baseline, when it is
// significantly so (riseMin and riseRatio).
func (l *link) rise() (time.Duration, bool) {
	b, _, ok := l.baseline()
	if !ok || !l.known {
		return 0, false
	}
	d := l.rtt - b
	return d, d >= riseMin && float64(l.rtt) >= riseRatio*float64(b)
}

// srttRise is rise for SRTT alone: the clean samples' estimate, an
// unacknowledged packet's age aside.
func (l *link) srttRise() (time.Duration, bool) {
	b, _, ok := l.baseline()
	if !ok || !l.known || l.srtt == 0 {
		return 0, false
	}
	d := l.srtt - b
	return d, d >= riseMin && float64(l.srtt) >= riseRatio*float64(b)
}

// calm adds this evaluation's round trip to the baseline; called only
// while no incident touches the link, so a long spike never becomes the
// normal. scratch is working memory the detector's links share.
func (l *link) calm(scratch *[]int32, scratch16 *[]uint16) {
	if !l.known {
		return
	}
	if _, up := l.rise(); up {
		return
	}
	if l.base == nil {
		l.base = new(calmRing)
	}
	l.base.rtt[l.head], l.base.rttvar[l.head] = micros(l.rtt), varUnits(l.rttvar)
	l.head = (l.head + 1) % baselineSpan
	l.nbase = min(l.nbase+1, baselineSpan)
	if l.added++; l.nbase <= baselineMin || l.added%rebase == 0 {
		l.baseRTT = fromMicros(median(l.base.rtt[:l.nbase], scratch))
		l.baseVar = fromVarUnits(median(l.base.rttvar[:l.nbase], scratch16))
	}
}

// calmRing is a link's calm round trips, in whole microseconds, and their
// variation, in varUnit steps: a quarter and an eighth of the room of
// durations, and finer than any baseline needs (the rules' least rise and
// least variation are milliseconds). A machine judges every link of the
// matrix (4 032 at 64 players), so the ring's size is most of a detector's.
type calmRing struct {
	rtt    [baselineSpan]int32
	rttvar [baselineSpan]uint16
}

// varUnit is the step a calm variation is kept in: 8 µs, so that 16 bits
// hold up to some 524 ms. A variation beyond it is held at the most: a
// baseline that varies that much is no baseline the jitter rule (twice the
// baseline's variation) could use anyway.
const varUnit = 8 * time.Microsecond

// varUnits is d in varUnit steps, rounded to the nearest and held within
// uint16.
func varUnits(d time.Duration) uint16 {
	return uint16(min(max((d+varUnit/2)/varUnit, 0), math.MaxUint16))
}

func fromVarUnits(u uint16) time.Duration { return time.Duration(u) * varUnit }

// micros is d in whole microseconds, held within int32 (some 35 minutes).
func micros(d time.Duration) int32 {
	return int32(min(max(d.Microseconds(), 0), math.MaxInt32))
}

func fromMicros(us int32) time.Duration { return time.Duration(us) * time.Microsecond }

// median is the median of ds — the element at len(ds)/2 were they
// sorted — found in a copy in scratch, ds left as it is.
func median[T cmp.Ordered](ds []T, scratch *[]T) T {
	s := append((*scratch)[:0], ds...)
	*scratch = s
	return nth(s, len(s)/2)
}

// nth is the element at k of s were it sorted (quickselect: s is
// reordered). The pivot is the median of the first, middle and last
// elements, so sorted and constant inputs take linear time.
func nth[T cmp.Ordered](s []T, k int) T {
	lo, hi := 0, len(s)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		a, b, c := s[lo], s[mid], s[hi]
		p := max(min(a, b), min(max(a, b), c))
		// Three ways: below p, equal to p, above p.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case s[i] < p:
				s[lt], s[i] = s[i], s[lt]
				lt++
				i++
			case s[i] > p:
				s[i], s[gt] = s[gt], s[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return s[k]
}
