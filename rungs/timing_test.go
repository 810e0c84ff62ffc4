package rungs

import (
	"math"
	"math/big"
	"testing"
	"testing/quick"
	"time"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestStartTiming_S1(t *testing.T) {
	s := StartTiming()
	if s.SendPeriod != 2 || s.LookAhead != 6 {
		t.Fatalf("StartTiming() = %+v, want send period 2, look-ahead 6", s)
	}
	if got := s.String(); got != "2/6" {
		t.Fatalf("String() = %q, want 2/6", got)
	}
	if got := (Timing{SendPeriod: 10, LookAhead: 250}).String(); got != "10/250" {
		t.Fatalf("String() = %q, want 10/250", got)
	}
}

func TestLadder_S2(t *testing.T) {
	for n := 1; n <= Rungs; n++ {
		got := RungTiming(n)
		wantSP, wantLA, wantCovers := n, 3*n, 2*n
		if n == 1 {
			wantLA, wantCovers = 4, 3
		}
		if got.SendPeriod != wantSP || got.LookAhead != wantLA {
			t.Errorf("RungTiming(%d) = %v, want %d/%d", n, got, wantSP, wantLA)
		}
		if got.Covers() != wantCovers {
			t.Errorf("RungTiming(%d).Covers() = %d, want %d", n, got.Covers(), wantCovers)
		}
		if got.Rung() != n || got.Extended() || !got.Valid() {
			t.Errorf("RungTiming(%d): Rung %d Extended %v Valid %v", n, got.Rung(), got.Extended(), got.Valid())
		}
	}
	if got := RungTiming(3); got != (Timing{3, 9}) {
		t.Errorf("rung 3 = %v, want 3/9 (rung N is N/3N, S2)", got)
	}
	// Out-of-range rungs are held to the ladder's ends.
	if RungTiming(0) != RungTiming(1) || RungTiming(11) != RungTiming(10) {
		t.Errorf("RungTiming(0) = %v, RungTiming(11) = %v", RungTiming(0), RungTiming(11))
	}
	if (Timing{SendPeriod: 0, LookAhead: 4}).Rung() != 1 || (Timing{SendPeriod: 12, LookAhead: 40}).Rung() != 10 {
		t.Error("Rung() does not hold send periods to 1..10")
	}
}

// Valid: a send period of 1..10 and a look-ahead that is a whole number of
// send periods, at least its rung's and at most 250. Each invalid shape here
// is one a timing event could carry; none reads as a tier.
func TestTimingValid_S2(t *testing.T) {
	for _, tc := range []struct {
		t    Timing
		want bool
	}{
		// The ladder's ends, an extended rung 10, staged steps and
		// non-ladder look-ahead multiples.
		{Timing{1, 4}, true}, {Timing{1, 5}, true}, {Timing{2, 6}, true}, {Timing{2, 8}, true},
		{Timing{3, 9}, true}, {Timing{9, 63}, true}, {Timing{10, 30}, true}, {Timing{10, 40}, true},
		{Timing{10, 250}, true},
		// No send period; look-aheads that are not whole send periods;
		// look-aheads below their rung's; past 250; send periods outside
		// 1..10.
		{Timing{0, 0}, false}, {Timing{0, 4}, false}, {Timing{3, 7}, false}, {Timing{3, 10}, false},
		{Timing{10, 35}, false}, {Timing{3, 3}, false}, {Timing{1, 1}, false}, {Timing{1, 3}, false},
		{Timing{5, 10}, false}, {Timing{10, 20}, false}, {Timing{3, 2}, false}, {Timing{10, 260}, false},
		{Timing{11, 33}, false}, {Timing{-1, 4}, false}, {Timing{-1, 5}, false}, {Timing{-3, -9}, false},
	} {
		if got := tc.t.Valid(); got != tc.want {
			t.Errorf("%v.Valid() = %v, want %v", tc.t, got, tc.want)
		}
		// 10/260 is no event's target, but a Schedule can hold it in force
		// (TestTimingValidInForce_S12), where it reads as Bad.
		inForce := tc.want || tc.t == Timing{10, 260}
		if got := tc.t.ValidInForce(); got != inForce {
			t.Errorf("%v.ValidInForce() = %v, want %v", tc.t, got, inForce)
		}
		switch tier := tc.t.Tier(); {
		case inForce && tier == tierUnknown:
			t.Errorf("%v.Tier() = %v, want a tier", tc.t, tier)
		case !inForce && (tier != tierUnknown || tier.String() != "—" || tc.t.Label() != "—"):
			t.Errorf("%v: Tier() = %v (%q), Label() = %q; want TierUnknown, \"—\"", tc.t, int(tier), tier, tc.t.Label())
		}
	}
}

// ValidInForce takes the look-aheads past 250 that rounding up to a longer
// send period gives, as far as any chain of changes reaches, and no further.
func TestTimingValidInForce_S12(t *testing.T) {
	for _, tc := range []struct {
		t           Timing
		inForce     bool
		description string
	}{
		{Timing{9, 252}, true, "7/245 rounded up to send period 9"},
		{Timing{10, 260}, true, "9/252 rounded up to send period 10"},
		{Timing{3, 252}, true, "1/250 rounded up to send period 3"},
		{Timing{9, 270}, true, "the longest at send period 9"},
		{Timing{10, 270}, true, "the longest at send period 10"},
		{Timing{2, 252}, false, "send period 2 holds at most 250"},
		{Timing{9, 279}, false, "past the longest"},
		{Timing{10, 280}, false, "past the longest"},
		{Timing{9, 253}, false, "not whole send periods"},
	} {
		if got := tc.t.ValidInForce(); got != tc.inForce {
			t.Errorf("%v (%s): ValidInForce() = %v, want %v", tc.t, tc.description, got, tc.inForce)
		}
		if tc.t.Valid() {
			t.Errorf("%v (%s): Valid, but no event may carry a look-ahead past 250", tc.t, tc.description)
		}
		if tc.inForce && tc.t.Tier() != Bad {
			t.Errorf("%v: Tier() = %v, want Bad (extended)", tc.t, tc.t.Tier())
		}
	}
}

func TestOneWayFrames_S3(t *testing.T) {
	for _, tc := range []struct {
		rtt  time.Duration
		fps  int
		want int
	}{
		{ms(100), 60, 3},            // 50 ms at 60 fps is exactly 3 frames
		{ms(100) + 1, 60, 4},        // one nanosecond more rounds up
		{ms(101), 60, 4},            // R: 101 ms needs rung 2
		{ms(200), 30, 3},            // S4 example
		{ms(250), 30, 4},            // S4 example with headroom
		{ms(400), 30, 6},            // R: one-way 6
		{ms(1333), 30, 20},          // 19.995 → 20
		{1333333333, 30, 20},        // the largest round trip that is 20 frames
		{1333333334, 30, 21},        // and the first that is not
		{ms(1334), 30, 21},          // 20.01 → 21
		{2 * time.Second, 60, 60},   // R: 2000 ms at 60 fps
		{20 * time.Second, 30, 300}, // R: 20 s at 30 fps
		{1, 1, 1},                   // any positive round trip is at least a frame
		{0, 30, 0},                  // nothing to cover
		{-ms(5), 30, 0},             // nonsense in, nothing out
		{ms(100), 0, 0},             // no frame rate, no frames
		{time.Duration(math.MaxInt64), 1000, 4611686018428},      // no overflow
		{time.Duration(math.MaxInt64), math.MaxInt, math.MaxInt}, // saturates
	} {
		if got := OneWayFrames(tc.rtt, tc.fps); got != tc.want {
			t.Errorf("OneWayFrames(%v, %d) = %d, want %d", tc.rtt, tc.fps, got, tc.want)
		}
	}
}

// OneWayFrames agrees with exact rational arithmetic for every round trip
// and frame rate a session can meet.
func TestOneWayFramesExact_S3(t *testing.T) {
	two := big.NewInt(int64(2 * time.Second))
	check := func(rttNS int64, fpsSeed uint16) bool {
		if rttNS < 0 {
			rttNS = -rttNS
		}
		rtt := time.Duration(rttNS % int64(time.Hour))
		fps := int(fpsSeed)%1000 + 1
		num := new(big.Int).Mul(big.NewInt(int64(rtt)), big.NewInt(int64(fps)))
		q, r := new(big.Int).QuoRem(num, two, new(big.Int))
		if r.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		return OneWayFrames(rtt, fps) == int(q.Int64())
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

// The R reference values: rung choice at 60 fps (OpenTS's own tests) and at
// 30 fps (from S3/S4).
func TestNeedReferenceValues_S3(t *testing.T) {
	for _, tc := range []struct {
		rtt  time.Duration
		fps  int
		want Timing
	}{
		{ms(100), 60, RungTiming(1)},
		{ms(101), 60, RungTiming(2)},
		{ms(300), 60, RungTiming(5)},
		{ms(2000), 60, Timing{10, 70}},
		{ms(400), 30, RungTiming(3)},
		{ms(401), 30, RungTiming(4)},
		{ms(1333), 30, Timing{10, 30}},
		{ms(1334), 30, Timing{10, 40}},
		{ms(1400), 30, Timing{10, 40}},
		{20 * time.Second, 30, Timing{10, 250}},
		{ms(200), 30, RungTiming(1)},
		{0, 30, RungTiming(1)},
	} {
		if got := Need(tc.rtt, tc.fps); got != tc.want {
			t.Errorf("Need(%v, %d) = %v, want %v", tc.rtt, tc.fps, got, tc.want)
		}
	}
}

func TestNeedFrames_S3(t *testing.T) {
	want := map[int]Timing{
		-1: {1, 4}, 0: {1, 4}, 1: {1, 4}, 3: {1, 4},
		4: {2, 6}, 5: {3, 9}, 6: {3, 9}, 7: {4, 12}, 8: {4, 12},
		9: {5, 15}, 16: {8, 24}, 17: {9, 27}, 19: {10, 30}, 20: {10, 30},
	}
	for ow, w := range want {
		if got := needFrames(ow); got != w {
			t.Errorf("NeedFrames(%d) = %v, want %v", ow, got, w)
		}
	}
}

func TestExtendedLookAhead_S4(t *testing.T) {
	for _, tc := range []struct {
		oneWay int
		want   Timing
	}{
		{21, Timing{10, 40}}, // covers 21 + 10 = 31 in steps of 10
		{30, Timing{10, 40}},
		{31, Timing{10, 50}},
		{60, Timing{10, 70}},
		{239, Timing{10, 250}},
		{240, Timing{10, 250}},
		{241, Timing{10, 250}}, // more than 250 is never asked for
		{math.MaxInt, Timing{10, 250}},
	} {
		got := needFrames(tc.oneWay)
		if got != tc.want {
			t.Errorf("NeedFrames(%d) = %v, want %v", tc.oneWay, got, tc.want)
		}
		if got.SendPeriod != 10 || got.LookAhead%extendedStep != 0 || !got.Extended() {
			t.Errorf("NeedFrames(%d) = %v is not an extended rung 10", tc.oneWay, got)
		}
	}
	// The worked example of R: 30 fps, 200 ms → 3 frames → rung 1; with
	// headroom 250 ms → 4 frames → rung 2.
	if got := Need(ms(200), 30); got.Rung() != 1 {
		t.Errorf("200 ms at 30 fps: rung %d, want 1", got.Rung())
	}
	if h := WithHeadroom(ms(200)); h != ms(250) || Need(h, 30).Rung() != 2 {
		t.Errorf("200 ms with headroom = %v → rung %d, want 250ms → rung 2", h, Need(h, 30).Rung())
	}
}

// Property: the chosen timing covers the one-way trip plus one send period
// (unless the trip is past what 10/250 covers), and no lower timing would.
func TestNeedCoversOneWayPlusSendPeriod_S3(t *testing.T) {
	check := func(rttNS int64, fpsSeed uint16) bool {
		if rttNS < 0 {
			rttNS = -rttNS
		}
		rtt := time.Duration(rttNS % int64(30*time.Second))
		fps := int(fpsSeed)%1000 + 1
		ow := OneWayFrames(rtt, fps)
		got := Need(rtt, fps)
		if !got.Valid() {
			return false
		}
		if ow+got.SendPeriod > MaxLookAhead {
			return got == WidestTiming()
		}
		if got.LookAhead < ow+got.SendPeriod {
			return false
		}
		// Minimal: the rung below, or 10 frames less look-ahead on an
		// extended rung 10, would not cover it.
		switch {
		case got.Extended():
			return got.LookAhead-extendedStep < ow+got.SendPeriod
		case got.Rung() > 1:
			return RungTiming(got.Rung()-1).Covers() < ow
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

func TestMaxRTT_S3(t *testing.T) {
	if got := RungTiming(1).MaxRTT(30); got != ms(200) {
		t.Errorf("rung 1 at 30 fps covers %v, want 200ms", got)
	}
	if got := RungTiming(1).MaxRTT(60); got != ms(100) {
		t.Errorf("rung 1 at 60 fps covers %v, want 100ms", got)
	}
	if got := RungTiming(10).MaxRTT(30); got != 1333333333 {
		t.Errorf("rung 10 at 30 fps covers %v, want 1.333333333s", got)
	}
	if got := (Timing{1, 4}).MaxRTT(0); got != 0 {
		t.Errorf("MaxRTT(0) = %v, want 0", got)
	}
	for fps := 1; fps <= 1000; fps += 7 {
		for _, tm := range append(ladder(), Timing{10, 40}, WidestTiming()) {
			d := tm.MaxRTT(fps)
			if OneWayFrames(d, fps) > tm.Covers() || OneWayFrames(d+1, fps) <= tm.Covers() {
				t.Fatalf("%v at %d fps: MaxRTT %v is not the largest covered round trip", tm, fps, d)
			}
		}
	}
}

func ladder() []Timing {
	var l []Timing
	for n := 1; n <= Rungs; n++ {
		l = append(l, RungTiming(n))
	}
	return l
}

func TestHeadroom_S9(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{ms(200), ms(250)},
		{ms(180), ms(225)},
		{ms(1000), ms(1250)},
		{0, 0},
		{-ms(4), -ms(4)},
		{math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 / 5 * 4, math.MaxInt64/5*4 + math.MaxInt64/5},
	} {
		if got := WithHeadroom(tc.in); got != tc.want {
			t.Errorf("WithHeadroom(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestTiers_S17(t *testing.T) {
	want := []Tier{0, Fast, Fast, normal, normal, normal, poor, poor, poor, Bad, Bad}
	for n := 1; n <= Rungs; n++ {
		if got := RungTiming(n).Tier(); got != want[n] {
			t.Errorf("rung %d tier %v, want %v", n, got, want[n])
		}
		if got := rungTier(n); got != want[n] {
			t.Errorf("RungTier(%d) = %v, want %v", n, got, want[n])
		}
	}
	// A look-ahead longer than its rung normally uses reads as Bad.
	for _, tm := range []Timing{{10, 40}, {10, 250}, {9, 63}, {1, 6}, {2, 8}} {
		if !tm.Extended() || tm.Tier() != Bad {
			t.Errorf("%v: Extended %v Tier %v, want extended and Bad", tm, tm.Extended(), tm.Tier())
		}
	}
	for _, tc := range []struct {
		tier Tier
		s    string
	}{{Fast, "Fast"}, {normal, "Normal"}, {poor, "Poor"}, {Bad, "Bad"}, {tierUnknown, "—"}, {0, "—"}, {9, "Tier(9)"}} {
		if got := tc.tier.String(); got != tc.s {
			t.Errorf("Tier(%d).String() = %q, want %q", int(tc.tier), got, tc.s)
		}
	}
}

func TestConnectionSlider_S17(t *testing.T) {
	for _, tc := range []struct {
		t     Timing
		label string
		pos   int
	}{
		{RungTiming(2), "Fast (rung 2)", 8},
		{RungTiming(1), "Fast (rung 1)", 9}, // mirrored: rung 1 at the right end
		{RungTiming(10), "Bad (rung 10)", 0},
		{RungTiming(5), "Normal (rung 5)", 5},
		{RungTiming(7), "Poor (rung 7)", 3},
		{Timing{10, 70}, "Bad (rung 10)", 0},
		{Timing{1, 6}, "Bad (rung 1)", 9}, // a staged decrease still stepping down
	} {
		if got := tc.t.Label(); got != tc.label {
			t.Errorf("%v.Label() = %q, want %q", tc.t, got, tc.label)
		}
		if got := tc.t.SliderPosition(); got != tc.pos {
			t.Errorf("%v.SliderPosition() = %d, want %d", tc.t, got, tc.pos)
		}
	}
}

func TestCompare_S11(t *testing.T) {
	for _, tc := range []struct {
		a, b Timing
		want int
	}{
		{RungTiming(2), RungTiming(3), -1},
		{RungTiming(3), RungTiming(2), 1},
		{Timing{10, 40}, Timing{10, 30}, 1}, // longer look-ahead on the same rung
		{Timing{10, 30}, Timing{10, 40}, -1},
		{Timing{9, 63}, Timing{10, 30}, -1}, // the rung decides first
		{RungTiming(4), RungTiming(4), 0},
	} {
		if got := tc.a.compare(tc.b); got != tc.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTierMessage_S18(t *testing.T) {
	for _, tc := range []struct {
		prev, next Timing
		msg        string
		ok         bool
	}{
		{RungTiming(2), RungTiming(6), "Connection quality target: Poor", true},
		{RungTiming(6), RungTiming(5), "Connection quality target: Normal", true},
		{RungTiming(3), RungTiming(5), "", false}, // both Normal
		{RungTiming(9), Timing{10, 250}, "", false},
		{Timing{10, 70}, RungTiming(9), "", false}, // extended reads as Bad, 9 is Bad
		{RungTiming(3), RungTiming(2), "Connection quality target: Fast", true},
		{StartTiming(), Timing{10, 250}, "Connection quality target: Bad", true},
	} {
		msg, ok := TierMessage(tc.prev, tc.next)
		if msg != tc.msg || ok != tc.ok {
			t.Errorf("TierMessage(%v, %v) = %q, %v; want %q, %v", tc.prev, tc.next, msg, ok, tc.msg, tc.ok)
		}
	}
}
