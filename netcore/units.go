package netcore

import "time"

// Millis is d in milliseconds, fractions kept: the unit the NDJSON output,
// the scenarios and the reports write times in, because people read link
// timings in ms. It is the one conversion from a Duration to ms in the
// tree; FromMillis is its inverse.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FromMillis is the Duration of ms milliseconds (scenario files and flags
// give times in ms), truncated toward zero to the nanosecond: 1.001 ms is
// 1000999 ns, as the float product falls just short. Truncation is what the
// simulator always did, so scenarios keep their exact timings.
func FromMillis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
