package units

import (
	"math"
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

// FromMillisChecked refuses what a Duration cannot hold, and agrees with
// FromMillis on everything else.
func TestFromMillisChecked(t *testing.T) {
	for _, ms := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e13, -1e13, float64(math.MaxInt64) / 1e6} {
		if d, ok := FromMillisChecked(ms); ok {
			t.Errorf("FromMillisChecked(%v) = %v, want refused", ms, d)
		}
	}
	for _, ms := range []float64{0, 1.001, -3, 80.5, 9e12, -9e12} {
		if d, ok := FromMillisChecked(ms); !ok || d != FromMillis(ms) {
			t.Errorf("FromMillisChecked(%v) = %v %v, want %v", ms, d, ok, FromMillis(ms))
		}
	}
}

// WholeMillis truncates toward zero, as the wire's integer fields do;
// FromWholeMillis is its inverse on whole milliseconds.
func TestWholeMillis(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ms int64
	}{{0, 0}, {999 * time.Microsecond, 0}, {1999 * time.Microsecond, 1}, {-1999 * time.Microsecond, -1}, {time.Minute, 60000}} {
		if got := WholeMillis(c.d); got != c.ms {
			t.Errorf("WholeMillis(%v) = %d, want %d", c.d, got, c.ms)
		}
		if got := WholeMillis(FromWholeMillis(c.ms)); got != c.ms {
			t.Errorf("WholeMillis(FromWholeMillis(%d)) = %d", c.ms, got)
		}
	}
}

// FromTenthMillis reads a wire's tenths of a millisecond: 3684 tenths is
// 368.4 ms, and Millis writes it back as the 368.4 it was sent as.
func TestFromTenthMillis(t *testing.T) {
	for _, c := range []struct {
		n  int64
		d  time.Duration
		ms float64
	}{{0, 0, 0}, {1, 100 * time.Microsecond, 0.1}, {3684, 368400 * time.Microsecond, 368.4}, {-5, -500 * time.Microsecond, -0.5},
		{4294967294, 429496729400 * time.Microsecond, 429496729.4}} {
		if got := FromTenthMillis(c.n); got != c.d {
			t.Errorf("FromTenthMillis(%d) = %v, want %v", c.n, got, c.d)
		}
		if got := Millis(FromTenthMillis(c.n)); got != c.ms {
			t.Errorf("Millis(FromTenthMillis(%d)) = %v, want %v", c.n, got, c.ms)
		}
	}
}
