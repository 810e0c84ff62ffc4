// Package units converts between durations and the milliseconds people
// read link timings in: the unit the NDJSON output, the scenarios, the
// reports and the screens write times in. It imports nothing of ours, so
// every layer may use it.
package units

import (
	"math"
	"time"
)

// Millis is d in milliseconds, fractions kept: the unit the NDJSON output,
// the scenarios and the reports write times in, because people read link
// timings in ms. It is the one conversion from a Duration to ms in the
// tree; FromMillis is its inverse.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FromMillis is the Duration of ms milliseconds, rounded to the nanosecond:
// for any duration under a few days FromMillis(Millis(d)) == d, so a View
// read back from a recording is the View that was written, and a scenario's
// 1.001 ms is 1001000 ns, not the 1000999 ns a truncated float product gives.
func FromMillis(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// FromMillisChecked is FromMillis for a figure from outside (a flag, a
// file): ok is false when ms is not a number or its Duration does not fit
// in a time.Duration, where FromMillis's conversion would wrap.
func FromMillisChecked(ms float64) (d time.Duration, ok bool) {
	ns := ms * float64(time.Millisecond)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns < math.MinInt64 {
		return 0, false
	}
	return time.Duration(math.Round(ns)), true
}

// WholeMillis is d in whole milliseconds, truncated toward zero: the unit
// of the wire's integer millisecond fields and of a wait shown as "340ms".
func WholeMillis(d time.Duration) int64 { return int64(d / time.Millisecond) }

// FromWholeMillis is the Duration of n whole milliseconds, as a wire's
// integer field carries them.
func FromWholeMillis(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// FromTenthMillis is the Duration of n tenths of a millisecond, as a wire's
// integer field carries a figure rounded to 0.1 ms.
func FromTenthMillis(n int64) time.Duration { return time.Duration(n) * 100 * time.Microsecond }
