package units

import (
	"testing"
	"time"
)

// Millis keeps fractions of a millisecond (an RTT of 80.5 ms is written as
// 80.5); FromMillis truncates to the nanosecond, so a round trip through the
// float may come back one nanosecond short (1.001 ms is 1000999.99… ns),
// never more.
func TestMillisAndFromMillis(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ms float64
	}{
		{0, 0},
		{time.Millisecond, 1},
		{80500 * time.Microsecond, 80.5},
		{-3 * time.Millisecond, -3},
		{time.Minute, 60000},
		{1500 * time.Nanosecond, 0.0015},
	} {
		if got := Millis(c.d); got != c.ms {
			t.Errorf("Millis(%v) = %v, want %v", c.d, got, c.ms)
		}
		if got := FromMillis(c.ms); got != c.d {
			t.Errorf("FromMillis(%v) = %v, want %v", c.ms, got, c.d)
		}
	}
	for us := range 100000 {
		d := time.Duration(us) * time.Microsecond
		if got := FromMillis(Millis(d)); got != d && got != d-1 {
			t.Fatalf("FromMillis(Millis(%v)) = %v", d, got)
		}
	}
}
