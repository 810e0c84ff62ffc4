package rungs

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// Constants of the ladder (S2, S4).
const (
	// Rungs is the number of rungs on the ladder (S2).
	Rungs = 10
	// extendedStep is the step in which the look-ahead grows past rung 10 (S4).
	extendedStep = 10
	// MaxLookAhead is the widest look-ahead a session ever runs at (S4, S8).
	MaxLookAhead = 250
)

// Timing is a send period and a look-ahead, in frames (S1): a packet every
// SendPeriod frames, commands scheduled LookAhead frames ahead. It is written
// "send period/look-ahead", e.g. 2/6.
type Timing struct {
	SendPeriod int
	LookAhead  int
}

// StartTiming is the timing a compressed game starts at (S1).
func StartTiming() Timing { return Timing{SendPeriod: 2, LookAhead: 6} }

// fallbackTiming is the target when the reports are still incomplete at the
// 128-frame evaluation (S10).
func fallbackTiming() Timing { return RungTiming(3) }

// WidestTiming is the widest timing there is, which a player that never
// reported a round trip forces (S4, S8).
func WidestTiming() Timing { return Timing{SendPeriod: Rungs, LookAhead: MaxLookAhead} }

// RungTiming is the timing of rung n (S2): N/3N, except rung 1 which is 1/4.
// n is held to 1..10.
func RungTiming(n int) Timing {
	n = clampRung(n)
	if n == 1 {
		return Timing{SendPeriod: 1, LookAhead: 4}
	}
	return Timing{SendPeriod: n, LookAhead: 3 * n}
}

func clampRung(n int) int { return min(max(n, 1), Rungs) }

// Valid reports whether t is a timing a timing event may carry (S1–S4): a
// send period of 1 to 10 frames and a look-ahead that is a whole number of
// send periods, at least its rung's (4 for rung 1, 3N for rung N) and at
// most 250 frames. For send period 10 that is 10/30 and the extended
// look-aheads in steps of 10 up to 10/250. A staged decrease's steps (9/63
// on the way from 10/70 to 9/27) are valid too. Decoders and the execution
// of timing events refuse anything else.
func (t Timing) Valid() bool {
	return t.shaped() && t.LookAhead <= MaxLookAhead
}

// ValidInForce reports whether t is a timing a Schedule can hold in force:
// a Valid timing, or one whose look-ahead passes 250 only by the rounding up
// to whole new send periods that a change to a longer send period makes
// (Schedule.Change). From 10/250 a decrease to 7/21 holds 7/245, and a
// change to 9/27 that executes before its first step holds 9/252: the
// look-ahead never shortens before the commands scheduled under it have
// come due. Such a timing is never the target of an event.
func (t Timing) ValidInForce() bool {
	return t.shaped() && t.LookAhead <= maxInForce[t.SendPeriod]
}

// shaped reports whether t has a send period of 1 to 10 and a look-ahead
// that is a whole number of send periods, at least its rung's.
func (t Timing) shaped() bool {
	return t.SendPeriod >= 1 && t.SendPeriod <= Rungs && t.LookAhead%t.SendPeriod == 0 &&
		t.LookAhead >= RungTiming(t.SendPeriod).LookAhead
}

// maxInForce is, by send period, the longest look-ahead a Schedule can hold
// in force: the longest valid one, or the longest of a shorter send period
// rounded up to whole periods of this one, whichever is longer (270 for
// send periods 9 and 10, reached from 1/250 through every longer period).
var maxInForce = func() (m [Rungs + 1]int) {
	for p := 1; p <= Rungs; p++ {
		m[p] = MaxLookAhead / p * p
		for q := 1; q < p; q++ {
			m[p] = max(m[p], roundUp(m[q], p))
		}
	}
	return m
}()

// sane holds a send period to at least one frame, so that arithmetic on
// send frames never divides by zero, whatever a caller passes in.
func (t Timing) sane() Timing {
	t.SendPeriod = max(t.SendPeriod, 1)
	return t
}

// Rung is the rung whose send period t has (send periods outside 1..10 are
// held to the ladder's ends).
func (t Timing) Rung() int { return clampRung(t.SendPeriod) }

// Extended reports whether t's look-ahead is longer than its rung normally
// uses: rung 10 past 10/30, or a staged decrease still stepping down (S4, S17).
func (t Timing) Extended() bool { return t.LookAhead > RungTiming(t.Rung()).LookAhead }

// Covers is the longest one-way trip, in frames, that t covers: its
// look-ahead less one send period (S3). Rung 1 covers 3 frames, rung N 2N.
func (t Timing) Covers() int { return t.LookAhead - t.SendPeriod }

// MaxRTT is the longest round trip that t covers at fps frames per second:
// the largest duration whose one-way trip, rounded up to frames, is at most
// Covers(). It is exact to the nanosecond (at 30 fps rung 10 covers
// 1.333333333 s).
func (t Timing) MaxRTT(fps int) time.Duration {
	c := t.Covers()
	if c < 0 || fps < 1 {
		return 0
	}
	// OneWayFrames(d) <= c  <=>  d*fps <= c * 2 s.
	return time.Duration(int64(c) * int64(2*time.Second) / int64(fps))
}

// compare orders timings the way the master does (S11): by rung, then by
// look-ahead. It returns -1 if t needs less than u, +1 if more, 0 if equal.
func (t Timing) compare(u Timing) int {
	switch {
	case t.Rung() != u.Rung():
		return cmp.Compare(t.Rung(), u.Rung())
	default:
		return cmp.Compare(t.LookAhead, u.LookAhead)
	}
}

// Tier is the connection quality a timing reads as (S17). A timing no
// Schedule can hold in force (!ValidInForce: 0/0, 3/7, 1/1, …) reads as no
// tier at all, tierUnknown, never as the tier its clamped rung has.
func (t Timing) Tier() Tier {
	if !t.ValidInForce() {
		return tierUnknown
	}
	if t.Extended() {
		return Bad
	}
	return rungTier(t.Rung())
}

// Label is the text beside the options dialog's Connection slider, e.g.
// "Fast (rung 2)" (S17). A timing with no tier is labelled "—" alone: it has
// no rung either.
func (t Timing) Label() string {
	if t.Tier() == tierUnknown {
		return tierUnknown.String()
	}
	return t.Tier().String() + " (rung " + strconv.Itoa(t.Rung()) + ")"
}

// SliderPosition is where the disabled Connection slider sits for t, counted
// from its left end 0..9. The slider is mirrored: rung 10 sits at the left
// end, rung 1 at the right end (S17).
func (t Timing) SliderPosition() int { return Rungs - t.Rung() }

// String writes t as "send period/look-ahead", e.g. "2/6".
func (t Timing) String() string {
	return strconv.Itoa(t.SendPeriod) + "/" + strconv.Itoa(t.LookAhead)
}

// Tier is a band of rungs shown to players (S17).
type Tier int

// The tiers, best first. The zero Tier, tierUnknown, is not a tier: it is
// what a timing that is not valid reads as, and it is written "—", the mark
// the UIs show for a value they do not know.
const (
	tierUnknown Tier = 0

	Fast   Tier = iota // rungs 1 and 2
	normal             // rungs 3 to 5
	poor               // rungs 6 to 8
	Bad                // rungs 9 and 10, and any extended look-ahead
)

// rungTier is the tier of rung n (S17), n held to 1..10.
func rungTier(n int) Tier {
	switch n = clampRung(n); {
	case n <= 2:
		return Fast
	case n <= 5:
		return normal
	case n <= 8:
		return poor
	}
	return Bad
}

func (t Tier) String() string {
	switch t {
	case Fast:
		return "Fast"
	case normal:
		return "Normal"
	case poor:
		return "Poor"
	case Bad:
		return "Bad"
	case tierUnknown:
		return "—"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// OneWayFrames is the one-way trip of a round trip rtt in frames at fps
// frames per second, rounded up (S3): ceil(rtt/2 × fps). The arithmetic is
// on integer nanoseconds with a 128-bit product, so boundaries are exact
// (at 60 fps 100 ms is exactly 3 frames, 100.000001 ms is 4). A round trip
// of zero or less, or an fps below 1, is 0 frames; a result too large for an
// int saturates at math.MaxInt.
func OneWayFrames(rtt time.Duration, fps int) int {
	if rtt <= 0 || fps < 1 {
		return 0
	}
	const twoSeconds = uint64(2 * time.Second)
	hi, lo := bits.Mul64(uint64(rtt), uint64(fps))
	if hi >= twoSeconds { // the quotient would not fit in 64 bits
		return math.MaxInt
	}
	q, r := bits.Div64(hi, lo, twoSeconds)
	if r != 0 {
		q++
	}
	if q > math.MaxInt {
		return math.MaxInt
	}
	return int(q)
}

// needFrames is the lowest timing whose look-ahead covers a one-way trip of
// oneWay frames plus one send period (S2–S4). Up to 3 frames that is rung 1;
// up to 20 frames rung ceil(oneWay/2); past 20 the send period stays 10 and
// the look-ahead grows in steps of 10 to cover oneWay+10, up to 10/250.
func needFrames(oneWay int) Timing {
	switch {
	case oneWay <= RungTiming(1).Covers():
		return RungTiming(1)
	case oneWay <= RungTiming(Rungs).Covers():
		return RungTiming((oneWay + 1) / 2)
	case oneWay >= MaxLookAhead-Rungs:
		return WidestTiming()
	}
	need := oneWay + Rungs // one-way plus one send period of 10
	return Timing{SendPeriod: Rungs, LookAhead: (need + extendedStep - 1) / extendedStep * extendedStep}
}

// Need is the timing a worst round trip rtt needs at fps (S3, S4).
func Need(rtt time.Duration, fps int) Timing { return needFrames(OneWayFrames(rtt, fps)) }

// WithHeadroom raises a round trip by a quarter (S9), saturating instead of
// overflowing.
func WithHeadroom(rtt time.Duration) time.Duration {
	if rtt <= 0 {
		return rtt
	}
	q := rtt / 4
	if rtt > math.MaxInt64-q {
		return math.MaxInt64
	}
	return rtt + q
}

// TierMessage is the line the message list shows when a timing event
// executes whose target is in a different tier from the previous target
// (S18). ok is false when the tier stays the same and nothing is shown.
func TierMessage(prev, next Timing) (msg string, ok bool) {
	if prev.Tier() == next.Tier() {
		return "", false
	}
	return "Connection quality target: " + next.Tier().String(), true
}
