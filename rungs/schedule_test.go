package rungs

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// change is a timing event executing on a frame.
type change struct {
	frame  int
	target Timing
	fps    int
}

// runSchedule drives a Schedule from frame from to frame to, executing the
// events on their frames before Advance, and returns every change of the
// timing in force as "frame:timing@fps".
func runSchedule(t *testing.T, start Timing, events []change, from, to int) (*Schedule, string) {
	t.Helper()
	s := NewSchedule(start, 30)
	var log []string
	for f := from; f <= to; f++ {
		for _, e := range events {
			if e.frame == f {
				s.Change(f, e.target, e.fps)
			}
		}
		if s.Advance(f) {
			log = append(log, fmt.Sprintf("%d:%v@%d", f, s.InForce(), s.FPS()))
		}
	}
	return s, strings.Join(log, " ")
}

func TestChangeAppliesAtOnce_S12(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  Timing
		events []change
		want   string
	}{
		{"a longer send period and look-ahead", StartTiming(), []change{{100, RungTiming(3), 30}}, "100:3/9@30"},
		{"a longer look-ahead on the same period", Timing{10, 30}, []change{{100, Timing{10, 70}, 30}}, "100:10/70@30"},
		{"the same timing at another rate", StartTiming(), []change{{100, StartTiming(), 20}}, ""},
		{"1/4 to 2/6 lengthens both", RungTiming(1), []change{{7, RungTiming(2), 30}}, "7:2/6@30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, got := runSchedule(t, tc.start, tc.events, 0, 400)
			if got != tc.want {
				t.Errorf("changes %q, want %q", got, tc.want)
			}
			if s.Staged() || s.InForce() != s.Target() {
				t.Errorf("in force %v target %v staged %v", s.InForce(), s.Target(), s.Staged())
			}
			if s.FPS() != tc.events[len(tc.events)-1].fps {
				t.Errorf("fps %d, want the event's %d at once", s.FPS(), tc.events[0].fps)
			}
		})
	}
}

// Staged decreases, frame by frame: the wait until the old look-ahead's
// commands have come due (event frame + old look-ahead), the activation on a
// multiple of both send periods, the first drop by one old send period
// rounded up to new periods, and one new period per following send frame.
func TestStagedDecrease_S12(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  Timing
		events []change
		want   string
	}{
		// due 109; multiples of 6: 114. 9-3 = 6 is the target.
		{"one rung down, 3/9 to 2/6", RungTiming(3), []change{{100, RungTiming(2), 20}}, "114:2/6@20"},
		// due 133+15 = 148; lcm(5, 4) = 20 → 160; 15-5 = 10 is below 12: held at 12.
		{"one rung down, 5/15 to 4/12", RungTiming(5), []change{{133, RungTiming(4), 30}}, "160:4/12@30"},
		// due 209; lcm 3 → 210: 9-3 = 6 → 1/6, then 5, then 4.
		{"two rungs down, 3/9 to 1/4", RungTiming(3), []change{{200, RungTiming(1), 30}}, "210:1/6@30 211:1/5@30 212:1/4@30"},
		// due 1070, a multiple of 10: 70-10 = 60, then 50, 40, 30.
		{"the extended cut, 10/70 to 10/30", Timing{10, 70}, []change{{1000, Timing{10, 30}, 30}}, "1070:10/60@30 1080:10/50@30 1090:10/40@30 1100:10/30@30"},
		// due 1070; lcm(10, 9) = 90 → 1080: 60 rounds up to 63 (7 periods of 9).
		{"extended to rung 9, 10/70 to 9/27", Timing{10, 70}, []change{{1000, RungTiming(9), 30}}, "1080:9/63@30 1089:9/54@30 1098:9/45@30 1107:9/36@30 1116:9/27@30"},
		// due 10+250 = 260; 250-10 = 240, then a step of 10 per send frame.
		{"10/250 to 10/220", WidestTiming(), []change{{10, Timing{10, 220}, 30}}, "260:10/240@30 270:10/230@30 280:10/220@30"},
		// a shorter period with a longer look-ahead also waits.
		{"10/30 to 1/40", RungTiming(10), []change{{5, Timing{1, 40}, 30}}, "40:1/40@30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, got := runSchedule(t, tc.start, tc.events, 0, 2000)
			if got != tc.want {
				t.Errorf("changes\n %q\nwant\n %q", got, tc.want)
			}
			if s.Staged() || s.InForce() != tc.events[0].target {
				t.Errorf("ends at %v staged %v, want %v", s.InForce(), s.Staged(), tc.events[0].target)
			}
		})
	}
}

func TestStagedDecreaseWaits_S12(t *testing.T) {
	s := NewSchedule(Timing{10, 70}, 30)
	s.Change(1000, RungTiming(9), 20)
	if f, ok := s.pendingActivation(); !ok || f != 1080 {
		t.Fatalf("Activation() = %d, %v; want 1080", f, ok)
	}
	for f := 1000; f < 1080; f++ {
		if s.Advance(f) || s.InForce() != (Timing{10, 70}) || s.FPS() != 30 {
			t.Fatalf("frame %d: in force %v at %d fps before activation", f, s.InForce(), s.FPS())
		}
		if !s.Staged() || s.Target() != RungTiming(9) {
			t.Fatalf("frame %d: staged %v target %v", f, s.Staged(), s.Target())
		}
	}
	// S15: a decrease's rate applies when it activates.
	if !s.Advance(1080) || s.FPS() != 20 {
		t.Fatalf("activation: changed in force %v at %d fps", s.InForce(), s.FPS())
	}
	if _, ok := s.pendingActivation(); ok {
		t.Fatal("Activation() still pending after activation")
	}
	// A caller that skips frames catches up on each step it passed.
	if !s.Advance(1100) || s.InForce() != (Timing{9, 45}) {
		t.Fatalf("after skipping to 1100: %v, want 9/45 (steps at 1089 and 1098)", s.InForce())
	}
	if !s.Advance(5000) || s.InForce() != RungTiming(9) || s.Staged() {
		t.Fatalf("after skipping to 5000: %v staged %v", s.InForce(), s.Staged())
	}
}

// A change that lengthens the send period but shortens the look-ahead
// switches the period when its event executes; the look-ahead, rounded up to
// whole new periods, then steps down one new period per send frame.
func TestLongerPeriodShorterLookAhead_S12(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  Timing
		events []change
		want   string
	}{
		// 7 rounds up to 8; first send frame under 2 is 6; steps at 8 and 10.
		{"1/7 to 2/4", Timing{1, 7}, []change{{5, Timing{2, 4}, 25}}, "5:2/8@25 8:2/6@25 10:2/4@25"},
		// In the middle of a decrease from 10/70 to 9/27 (9/54 in force at
		// 1090), a worsening to 10/40: 54 rounds up to 60 on 1090, the first
		// send frame; steps at 1100 and 1110.
		{"worse during a staged decrease", Timing{10, 70}, []change{{1000, RungTiming(9), 30}, {1090, Timing{10, 40}, 30}},
			"1080:9/63@30 1089:9/54@30 1090:10/60@30 1100:10/50@30 1110:10/40@30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, got := runSchedule(t, tc.start, tc.events, 0, 2000)
			if got != tc.want {
				t.Errorf("changes\n %q\nwant\n %q", got, tc.want)
			}
			if s.Staged() || s.InForce() != tc.events[len(tc.events)-1].target {
				t.Errorf("ends at %v staged %v", s.InForce(), s.Staged())
			}
		})
	}
}

func TestNextSendFrame_S13(t *testing.T) {
	s := NewSchedule(RungTiming(3), 30)
	for _, tc := range []struct{ frame, want int }{{9, 9}, {10, 12}, {11, 12}, {12, 12}, {0, 0}, {-1, 0}, {-4, -3}} {
		if got := s.NextSendFrame(tc.frame); got != tc.want {
			t.Errorf("3/9: NextSendFrame(%d) = %d, want %d", tc.frame, got, tc.want)
		}
		if got := s.IsSendFrame(tc.frame); got != (tc.frame == tc.want) {
			t.Errorf("3/9: IsSendFrame(%d) = %v", tc.frame, got)
		}
	}
	// After a change from 2/6 to 3/9 on frame 100, a command tagged for 104
	// under the old period is no longer on a send frame: it executes on 105.
	s = NewSchedule(StartTiming(), 30)
	s.Change(100, RungTiming(3), 30)
	s.Advance(100)
	if got := s.NextSendFrame(104); got != 105 {
		t.Errorf("NextSendFrame(104) under 3/9 = %d, want 105", got)
	}
	if !s.IsSendFrame(102) || s.IsSendFrame(104) {
		t.Error("send frames under 3/9 are the multiples of 3")
	}
}

// A new target replaces a staged one and is judged against the timing in
// force at that moment (S14).
func TestNewTargetReplacesStaged_S14(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  Timing
		events []change
		want   string
		end    Timing
	}{
		{"back up while waiting: applies at once, nothing was in force yet",
			Timing{10, 70}, []change{{1000, Timing{10, 30}, 30}, {1050, Timing{10, 70}, 30}}, "", Timing{10, 70}},
		{"higher while waiting: applies at once",
			RungTiming(5), []change{{1000, RungTiming(4), 30}, {1010, RungTiming(6), 30}}, "1010:6/18@30", RungTiming(6)},
		// In force 10/50 after the step at 1080; 10/40 is staged anew from it:
		// due 1085+50 = 1135 → 1140, 50-10 = 40.
		{"lower while stepping: staged again from the timing in force",
			Timing{10, 70}, []change{{1000, Timing{10, 30}, 30}, {1085, Timing{10, 40}, 30}}, "1070:10/60@30 1080:10/50@30 1140:10/40@30", Timing{10, 40}},
		{"higher while stepping: applies at once",
			Timing{10, 70}, []change{{1000, Timing{10, 30}, 30}, {1085, Timing{10, 60}, 30}}, "1070:10/60@30 1080:10/50@30 1085:10/60@30", Timing{10, 60}},
		// While waiting for 10/70 → 9/27 (activation 1080), a second decrease
		// to 8/24 on 1050 is staged from 10/70: due 1120, lcm(10, 8) = 40 → 1120.
		{"lower while waiting: the wait starts over",
			Timing{10, 70}, []change{{1000, RungTiming(9), 30}, {1050, RungTiming(8), 30}}, "1120:8/64@30 1128:8/56@30 1136:8/48@30 1144:8/40@30 1152:8/32@30 1160:8/24@30", RungTiming(8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, got := runSchedule(t, tc.start, tc.events, 0, 3000)
			if got != tc.want {
				t.Errorf("changes\n %q\nwant\n %q", got, tc.want)
			}
			if s.InForce() != tc.end || s.Target() != tc.end || s.Staged() {
				t.Errorf("ends at %v (target %v, staged %v), want %v", s.InForce(), s.Target(), s.Staged(), tc.end)
			}
		})
	}
}

func TestRateAppliesWithItsChange_S15(t *testing.T) {
	_, got := runSchedule(t, RungTiming(3), []change{{10, RungTiming(4), 25}, {100, RungTiming(3), 20}}, 0, 300)
	// The increase carries 25 fps at once; the decrease's 20 fps waits for
	// its activation: due 112, lcm(4, 3) = 12 → 120.
	if want := "10:4/12@25 120:3/9@20"; got != want {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// A send period of zero from a careless caller never divides by zero.
func TestScheduleZeroPeriod_S13(t *testing.T) {
	s := NewSchedule(Timing{0, 0}, 0)
	if s.FPS() != 1 || !s.IsSendFrame(7) || s.NextSendFrame(7) != 7 {
		t.Fatal("a zero send period is not treated as 1")
	}
	s.Change(3, Timing{0, 2}, 30)
	s.Advance(3)
	if s.InForce().SendPeriod != 1 {
		t.Fatalf("in force %v", s.InForce())
	}
}

// Property over seeded random event sequences: from activation on, a staged
// look-ahead never drops below the target and is a whole number of send
// periods; the frame a send frame schedules commands for never moves back;
// and with no new events every staged decrease reaches its target.
func TestStagedLookAheadProperty_S12(t *testing.T) {
	targets := func(rng *rand.Rand) Timing {
		if rng.IntN(4) == 0 {
			return needFrames(21 + rng.IntN(230)) // extended rung 10
		}
		return RungTiming(1 + rng.IntN(Rungs))
	}
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 12))
		start := targets(rng)
		s := NewSchedule(start, 30)
		lastScheduled := -1 << 62
		lastEvent := 0
		for f := 0; f < 6000; f++ {
			if f < 4000 && rng.IntN(120) == 0 {
				s.Change(f, targets(rng), 30)
				lastEvent = f
			}
			s.Advance(f)
			in, tg := s.InForce(), s.Target()
			if _, waiting := s.pendingActivation(); s.Staged() && !waiting {
				if in.LookAhead < tg.LookAhead {
					t.Fatalf("seed %d frame %d: look-ahead %v below target %v", seed, f, in, tg)
				}
				if in.SendPeriod != tg.SendPeriod || in.LookAhead%in.SendPeriod != 0 {
					t.Fatalf("seed %d frame %d: %v is not whole send periods of the target %v", seed, f, in, tg)
				}
			}
			if s.IsSendFrame(f) {
				at := f + in.LookAhead
				if at < lastScheduled {
					t.Fatalf("seed %d frame %d: send frame schedules for %d after %d (in force %v)", seed, f, at, lastScheduled, in)
				}
				lastScheduled = at
			}
			if f > lastEvent+600 && (s.Staged() || in != tg) {
				t.Fatalf("seed %d frame %d: still %v toward %v long after the last event", seed, f, in, tg)
			}
		}
	}
}

func BenchmarkScheduleAdvance(b *testing.B) {
	b.ReportAllocs()
	s := NewSchedule(WidestTiming(), 30)
	f := 0
	for b.Loop() {
		if f%1000 == 0 {
			s.Change(f, RungTiming(1+f/1000%Rungs), 30)
		}
		s.Advance(f)
		f++
	}
}
