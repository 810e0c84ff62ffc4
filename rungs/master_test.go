package rungs

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

func TestEvaluationFrames_S9(t *testing.T) {
	var got []int
	for f := -5; f <= 1300; f++ {
		if IsEvaluationFrame(f) {
			got = append(got, f)
		}
	}
	want := []int{64, 128, 256, 512, 768, 1024, 1280}
	if !equalInts(got, want) {
		t.Fatalf("evaluation frames %v, want %v", got, want)
	}
	m := NewMaster(1000, StartTiming(), 30)
	if !m.isEvaluationFrame(1064) || !m.isEvaluationFrame(1256) || m.isEvaluationFrame(1200) {
		t.Error("Master.isEvaluationFrame does not count from the game's start")
	}
}

// rep is one player's report in an evaluation step.
type rep struct {
	skip    bool // no report this time (the last one may still be fresh)
	rtt     time.Duration
	noRTT   bool
	wait    time.Duration
	process time.Duration
}

func at(msv float64) rep              { return rep{rtt: ms(msv)} }
func waited(msv, waitMS float64) rep  { return rep{rtt: ms(msv), wait: ms(waitMS)} }
func slow(msv, processMS float64) rep { return rep{rtt: ms(msv), process: ms(processMS)} }

var (
	none  = rep{skip: true}
	noRTT = rep{noRTT: true}
)

func both(r rep) []rep { return []rep{r, r} }

// evalStep is one evaluation frame of a table test: the reports that executed
// on it (player 1, 2, … in order), then what the evaluation must decide.
type evalStep struct {
	frame   int
	reports []rep
	want    string // "" for no timing event, else "<reason> <target>", e.g. "worse 9/27"
	count   string // "" not checked; "0", "1", "2": the count of three; "desc": a descent runs
	// takeOver: the master is removed on this frame and the machine that has
	// observed every executed timing event takes over (no evaluation).
	takeOver bool
}

type evalRun struct {
	rec            *Record
	master, shadow *Master
	speed          int
}

func newEvalRun(players int) *evalRun {
	seated := make([]int, players)
	for i := range seated {
		seated[i] = i + 1
	}
	return &evalRun{
		rec:    NewRecord(0, seated),
		master: NewMaster(0, StartTiming(), 30),
		shadow: NewMaster(0, StartTiming(), 30),
		speed:  30,
	}
}

func (r *evalRun) step(t *testing.T, s evalStep) (Decision, bool) {
	t.Helper()
	for i, rp := range s.reports {
		if rp.skip {
			continue
		}
		r.rec.Add(Report{Player: i + 1, Frame: s.frame, RTT: rp.rtt, HasRTT: !rp.noRTT, Wait: rp.wait, Process: rp.process})
	}
	if s.takeOver {
		r.master, r.shadow = r.shadow, nil
		r.master.TakeOver(s.frame)
		return Decision{}, false
	}
	d, ok := r.master.Evaluate(s.frame, r.rec, r.speed)
	got := ""
	if ok {
		got = d.Reason.String() + " " + d.Target.String()
		if d.Frame != s.frame {
			t.Errorf("frame %d: decision carries frame %d", s.frame, d.Frame)
		}
		if r.shadow != nil {
			r.shadow.Observe(d)
		}
	}
	if got != s.want {
		t.Errorf("frame %d: got %q, want %q", s.frame, got, s.want)
	}
	if ok && r.master.Target() != d.Target {
		t.Errorf("frame %d: master's target %v after deciding %v", s.frame, r.master.Target(), d.Target)
	}
	if s.count != "" {
		state := strconv.Itoa(r.master.inARow)
		if r.master.descending {
			state = "desc"
		}
		if state != s.count {
			t.Errorf("frame %d: count %s, want %s", s.frame, state, s.count)
		}
	}
	return d, ok
}

func runEval(t *testing.T, players int, steps []evalStep) *evalRun {
	t.Helper()
	r := newEvalRun(players)
	for _, s := range steps {
		r.step(t, s)
	}
	return r
}

// At 30 fps: 100 ms needs rung 1 (with headroom rung 1), 200 ms rung 1
// (with headroom rung 2), 800 ms rung 6 (with headroom rung 8), 1050 ms rung 8,
// 1200 ms rung 9, 2000 ms 10/40 (with headroom 10/50), 20 s 10/250.

func TestInitialTarget_S10(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []evalStep
	}{
		{"complete at 64: target from headroom", []evalStep{
			{frame: 64, reports: both(at(800)), want: "initial 8/24"},
		}},
		{"initial equal to the start still sends its event", []evalStep{
			{frame: 64, reports: both(at(200)), want: "initial 2/6"},
		}},
		{"incomplete at 64, complete at 128", []evalStep{
			{frame: 64, reports: []rep{at(100), none}, want: ""},
			{frame: 128, reports: both(at(100)), want: "initial 1/4"},
		}},
		{"a report without round trip at 64 waits", []evalStep{
			{frame: 64, reports: []rep{at(100), noRTT}, want: ""},
			{frame: 128, reports: []rep{at(100), at(20000)}, want: "initial 10/250"},
		}},
		{"still incomplete at 128: fallback 3/9", []evalStep{
			{frame: 64, reports: []rep{at(100), noRTT}, want: ""},
			{frame: 128, reports: []rep{at(100), noRTT}, want: "fallback 3/9"},
		}},
		{"nobody reported at all: fallback", []evalStep{
			{frame: 64, want: ""},
			{frame: 128, want: "fallback 3/9"},
			{frame: 256, want: ""}, // no round trip to judge by: hold
		}},
		{"the initial target is chosen once", []evalStep{
			{frame: 64, reports: both(at(100)), want: "initial 1/4"},
			{frame: 128, reports: both(at(100)), want: ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runEval(t, 2, tc.steps) })
	}
}

func TestWorse_S11a(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []evalStep
	}{
		{"a higher rung is sent at once", []evalStep{
			{frame: 64, reports: both(at(100)), want: "initial 1/4"},
			{frame: 128, reports: []rep{at(100), at(1200)}, want: "worse 9/27", count: "0"},
		}},
		{"worse uses the round trip without headroom", []evalStep{
			{frame: 64, reports: both(at(800)), want: "initial 8/24"},
			// 1050 ms needs rung 8 (its headroom would need 10/40): not worse.
			{frame: 128, reports: both(at(1050)), want: ""},
			{frame: 256, reports: both(at(1200)), want: "worse 9/27"},
		}},
		{"a longer look-ahead on the same rung", []evalStep{
			{frame: 64, reports: both(at(2000)), want: "initial 10/50"},
			{frame: 128, reports: both(at(3000)), want: "worse 10/60"},
			{frame: 256, reports: both(at(20000)), want: "worse 10/250"},
			{frame: 512, reports: both(at(30000)), want: ""}, // nothing is worse than 10/250
		}},
		{"worse needs no 256-frame wait", []evalStep{
			{frame: 64, reports: both(at(100)), want: "initial 1/4"},
			{frame: 128, reports: both(at(400)), want: "worse 3/9"},
			{frame: 256, reports: both(at(600)), want: "worse 5/15"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runEval(t, 2, tc.steps) })
	}
}

// The count of three, the first improvement of one rung, and the descent.
func TestThreeInARowThenDescent_S11c(t *testing.T) {
	runEval(t, 2, []evalStep{
		{frame: 64, reports: both(at(800)), want: "initial 8/24", count: "0"},
		{frame: 128, reports: both(at(100)), want: "", count: "0"}, // 64 frames since the change (3)
		{frame: 256, reports: both(at(100)), want: "", count: "0"}, // 192 frames since the change (3)
		{frame: 512, reports: both(at(100)), want: "", count: "1"},
		{frame: 768, reports: both(at(100)), want: "", count: "2"},
		{frame: 1024, reports: both(at(100)), want: "better 7/21", count: "desc"},
		{frame: 1280, reports: both(at(100)), want: "better 6/18", count: "desc"},
		{frame: 1536, reports: both(at(100)), want: "better 5/15", count: "desc"},
		{frame: 1792, reports: both(at(100)), want: "better 4/12", count: "desc"},
		{frame: 2048, reports: both(at(100)), want: "better 3/9", count: "desc"},
		{frame: 2304, reports: both(at(100)), want: "better 2/6", count: "desc"},
		{frame: 2560, reports: both(at(100)), want: "better 1/4", count: "desc"},
		{frame: 2816, reports: both(at(100)), want: "", count: "0"}, // reached: (1) fails
	})
}

// Condition (3) does not apply while the master has never changed the timing.
func TestNeverChangedNeedsNoWait_S11b(t *testing.T) {
	runEval(t, 2, []evalStep{
		{frame: 64, reports: both(at(200)), want: "initial 2/6", count: "0"}, // headroom keeps 2/6
		{frame: 128, reports: both(at(100)), want: "", count: "1"},
		{frame: 256, reports: both(at(100)), want: "", count: "2"},
		{frame: 512, reports: both(at(100)), want: "better 1/4", count: "desc"},
	})
}

// Condition (3) does not apply while a descent runs: a descent step may come
// sooner than 256 frames after the last change.
func TestDescentNeedsNoWait_S11b(t *testing.T) {
	runEval(t, 2, []evalStep{
		{frame: 64, reports: both(at(800)), want: "initial 8/24"},
		{frame: 512, reports: both(at(100)), want: "", count: "1"},
		{frame: 768, reports: both(at(100)), want: "", count: "2"},
		{frame: 1024, reports: both(at(100)), want: "better 7/21", count: "desc"},
		{frame: 1100, reports: both(at(100)), want: "better 6/18", count: "desc"}, // 76 frames later
	})
}

// Every reset of S11d: a failed condition (each of the four), a worsening,
// and a missing report — a round trip left out or a report expired.
func TestResets_S11d(t *testing.T) {
	prefix := []evalStep{
		{frame: 64, reports: both(at(800)), want: "initial 8/24"},
		{frame: 512, reports: both(at(100)), want: "", count: "1"},
		{frame: 768, reports: both(at(100)), want: "", count: "2"},
	}
	for _, tc := range []struct {
		name  string
		steps []evalStep
	}{
		{"(1) the round trip needs the same rung", []evalStep{
			{frame: 1024, reports: both(at(1050)), want: "", count: "0"},
		}},
		{"(2) a player waited 0.1 s", []evalStep{
			{frame: 1024, reports: []rep{at(100), waited(100, 100)}, want: "", count: "0"},
		}},
		{"(2) a wait just under 0.1 s does not reset", []evalStep{
			{frame: 1024, reports: []rep{at(100), waited(100, 99.999)}, want: "better 7/21", count: "desc"},
		}},
		{"(3) fewer than 256 frames since the last change", []evalStep{
			{frame: 1024, reports: both(at(1200)), want: "worse 9/27", count: "0"},
			{frame: 1279, reports: both(at(100)), want: "", count: "0"}, // 255 frames since the change
			{frame: 1280, reports: both(at(100)), want: "", count: "1"}, // 256
		}},
		{"(4) the headroom estimate needs more", []evalStep{
			// 900 ms needs rung 7, but with headroom (1125 ms) rung 9.
			{frame: 1024, reports: both(at(900)), want: "", count: "0"},
		}},
		{"a worsening", []evalStep{
			{frame: 1024, reports: both(at(1200)), want: "worse 9/27", count: "0"},
		}},
		{"a round trip left out", []evalStep{
			{frame: 1024, reports: []rep{at(100), noRTT}, want: "", count: "0"},
			{frame: 1280, reports: both(at(100)), want: "", count: "1"},
		}},
		{"a failure ends a running descent", []evalStep{
			{frame: 1024, reports: both(at(100)), want: "better 7/21", count: "desc"},
			{frame: 1280, reports: []rep{at(100), waited(100, 150)}, want: "", count: "0"},
			{frame: 1536, reports: both(at(100)), want: "", count: "1"},
			{frame: 1792, reports: both(at(100)), want: "", count: "2"},
			{frame: 2048, reports: both(at(100)), want: "better 6/18", count: "desc"},
		}},
		{"a worsening ends a running descent", []evalStep{
			{frame: 1024, reports: both(at(100)), want: "better 7/21", count: "desc"},
			{frame: 1280, reports: both(at(1200)), want: "worse 9/27", count: "0"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runEval(t, 2, append(append([]evalStep{}, prefix...), tc.steps...))
		})
	}
	// A report counts as missing once it has expired (512 frames), not
	// while an older one is still fresh.
	t.Run("a report expired", func(t *testing.T) {
		runEval(t, 2, []evalStep{
			{frame: 64, reports: both(at(800)), want: "initial 8/24"},
			{frame: 512, reports: both(at(100)), want: "", count: "1"},
			{frame: 768, reports: []rep{at(100), none}, want: "", count: "2"},  // player 2's is 256 frames old
			{frame: 1024, reports: []rep{at(100), none}, want: "", count: "0"}, // 512: expired
			{frame: 1280, reports: both(at(100)), want: "", count: "1"},
		})
	})
}

func TestThreeInARowNeedsWaitAfterChange_S11b(t *testing.T) {
	runEval(t, 2, []evalStep{
		{frame: 64, reports: both(at(100)), want: "initial 1/4"},
		{frame: 128, reports: both(at(1200)), want: "worse 9/27", count: "0"},
		{frame: 256, reports: both(at(100)), want: "", count: "0"}, // 128 frames since the change
		{frame: 383, reports: both(at(100)), want: "", count: "0"}, // 255
		{frame: 384, reports: both(at(100)), want: "", count: "1"}, // 256
	})
}

// At rung 10 with an extended look-ahead, an improvement whose round trip
// still needs rung 10 cuts the look-ahead straight to the need; otherwise it
// moves one rung down (S11c).
func TestExtendedCut_S11c(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []evalStep
	}{
		{"still rung 10: cut straight to the need", []evalStep{
			{frame: 64, reports: both(at(20000)), want: "initial 10/250"},
			{frame: 512, reports: both(at(2000)), want: "", count: "1"},
			{frame: 768, reports: both(at(2000)), want: "", count: "2"},
			{frame: 1024, reports: both(at(2000)), want: "better 10/40", count: "desc"},
			{frame: 1280, reports: both(at(2000)), want: "", count: "0"},
		}},
		{"a lower rung: one rung down", []evalStep{
			{frame: 64, reports: both(at(20000)), want: "initial 10/250"},
			{frame: 512, reports: both(at(100)), want: "", count: "1"},
			{frame: 768, reports: both(at(100)), want: "", count: "2"},
			{frame: 1024, reports: both(at(100)), want: "better 9/27", count: "desc"},
			{frame: 1280, reports: both(at(100)), want: "better 8/24", count: "desc"},
		}},
		{"a descent cuts too", []evalStep{
			{frame: 64, reports: both(at(20000)), want: "initial 10/250"},
			{frame: 512, reports: both(at(3000)), want: "", count: "1"}, // needs 10/60, headroom 10/70
			{frame: 768, reports: both(at(3000)), want: "", count: "2"},
			{frame: 1024, reports: both(at(3000)), want: "better 10/60", count: "desc"},
			{frame: 1280, reports: both(at(2000)), want: "better 10/40", count: "desc"},
			{frame: 1536, reports: both(at(100)), want: "better 9/27", count: "desc"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runEval(t, 2, tc.steps) })
	}
}

func TestForced_S8(t *testing.T) {
	runEval(t, 2, []evalStep{
		{frame: 64, reports: []rep{at(100), noRTT}, want: ""},
		{frame: 128, reports: []rep{at(100), noRTT}, want: "fallback 3/9"},
		{frame: 256, reports: []rep{at(100), noRTT}, want: "", count: "0"}, // holds
		{frame: 512, reports: []rep{at(100), noRTT}, want: "forced 10/250", count: "0"},
		{frame: 768, reports: []rep{at(100), noRTT}, want: ""}, // already there
		{frame: 1024, reports: both(at(100)), want: "", count: "1"},
		{frame: 1280, reports: both(at(100)), want: "", count: "2"},
		{frame: 1536, reports: both(at(100)), want: "better 9/27", count: "desc"},
	})
}

// A missing round trip holds the timing, but fresh round trips from the
// others can still worsen it (S8).
func TestMissingHoldsButOthersWorsen_S8(t *testing.T) {
	runEval(t, 2, []evalStep{
		{frame: 64, reports: both(at(100)), want: "initial 1/4"},
		{frame: 128, reports: []rep{at(800), noRTT}, want: "worse 6/18"},
		{frame: 256, reports: []rep{at(100), noRTT}, want: "", count: "0"},
		{frame: 512, reports: []rep{at(100), noRTT}, want: "", count: "0"}, // player 2 did report one at 64: not forced
		{frame: 768, reports: []rep{at(1200), none}, want: "worse 9/27"},
	})
}

func TestFrameRate_S15(t *testing.T) {
	for _, tc := range []struct {
		process time.Duration
		speed   int
		want    int
	}{
		{0, 30, 30},
		{ms(40), 30, 25},
		{ms(33), 60, 30}, // 30.3 → 30
		{ms(33.4), 60, 29},
		{ms(50), 15, 15}, // the game speed caps
		{2 * time.Second, 30, 1},
		{0, 0, 1},
		{ms(0.9), 2000, 1111},
	} {
		if got := FrameRate(tc.process, tc.speed); got != tc.want {
			t.Errorf("FrameRate(%v, %d) = %d, want %d", tc.process, tc.speed, got, tc.want)
		}
	}
}

func TestEvaluationFrameRate_S15(t *testing.T) {
	r := newEvalRun(2)
	check := func(s evalStep, wantFPS int) {
		t.Helper()
		d, ok := r.step(t, s)
		if ok && d.FPS != wantFPS {
			t.Errorf("frame %d: FPS %d, want %d", s.frame, d.FPS, wantFPS)
		}
		if r.master.FPS() != wantFPS {
			t.Errorf("frame %d: master FPS %d, want %d", s.frame, r.master.FPS(), wantFPS)
		}
	}
	// Player 2 lacks a fresh report: the rate stays at 30 despite player 1's
	// 50 ms frames.
	check(evalStep{frame: 64, reports: []rep{slow(100, 50), none}}, 30)
	check(evalStep{frame: 128, reports: []rep{slow(100, 50), none}, want: "fallback 3/9"}, 30)
	// Everyone fresh: 1 s / 50 ms = 20 fps, and the rung is computed at the
	// new rate: 800 ms at 20 fps is 8 frames one way, rung 4 (at 30 fps it
	// would be rung 6).
	check(evalStep{frame: 256, reports: []rep{slow(800, 50), slow(800, 10)}, want: "worse 4/12"}, 20)
	// The game speed caps the rate.
	r.speed = 10
	// 2000 ms at 10 fps is 10 frames one way: rung 5.
	check(evalStep{frame: 512, reports: []rep{slow(2000, 50), slow(2000, 10)}, want: "worse 5/15"}, 10)
}

// The handoff: the new master keeps the target, restarts the descent and the
// count of three, and waits 256 frames before an improvement (S16).
func TestHandoff_S16(t *testing.T) {
	lead := []evalStep{
		{frame: 64, reports: both(at(800)), want: "initial 8/24"},
		{frame: 512, reports: both(at(100)), want: "", count: "1"},
		{frame: 768, reports: both(at(100)), want: "", count: "2"},
		{frame: 1024, reports: both(at(100)), want: "better 7/21", count: "desc"},
		{frame: 1100, takeOver: true},
	}
	for _, tc := range []struct {
		name  string
		steps []evalStep
	}{
		{"keeps the target and waits 256 frames", []evalStep{
			{frame: 1280, reports: both(at(100)), want: "", count: "0"}, // 180 frames after
			{frame: 1355, reports: both(at(100)), want: "", count: "0"}, // 255
			{frame: 1356, reports: both(at(100)), want: "", count: "1"}, // 256
			{frame: 1536, reports: both(at(100)), want: "", count: "2"},
			{frame: 1792, reports: both(at(100)), want: "better 6/18", count: "desc"},
		}},
		{"worse needs no wait", []evalStep{
			{frame: 1280, reports: both(at(1200)), want: "worse 9/27", count: "0"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEvalRun(2)
			for _, s := range lead {
				r.step(t, s)
			}
			if r.master.Target() != RungTiming(7) || r.master.descending || r.master.inARow != 0 {
				t.Fatalf("after the handoff: target %v descending %v count %d", r.master.Target(), r.master.descending, r.master.inARow)
			}
			for _, s := range tc.steps {
				r.step(t, s)
			}
		})
	}
}

// A master built late from the last target does not rerun the initial
// evaluation or the fallback.
func TestLateMasterKeepsTarget_S16(t *testing.T) {
	rec := NewRecord(0, []int{1, 2})
	m := NewMaster(0, RungTiming(7), 30)
	m.TakeOver(1100)
	rec.Add(Report{Player: 2, Frame: 640, RTT: ms(100), HasRTT: true}) // expired by 1280
	rec.Add(Report{Player: 1, Frame: 1280, RTT: ms(100), HasRTT: true})
	if d, ok := m.Evaluate(1280, rec, 30); ok {
		t.Fatalf("late master decided %+v with a report missing", d)
	}
	if m.Target() != RungTiming(7) {
		t.Fatalf("target %v, want 7/21", m.Target())
	}
}

// Observe follows executed timing events, including an event that repeats
// the target, on every machine.
func TestObserve_S16(t *testing.T) {
	m := NewMaster(0, StartTiming(), 30)
	m.Observe(Decision{Frame: 64, Target: RungTiming(4), FPS: 25, Reason: Initial})
	if m.Target() != RungTiming(4) || m.FPS() != 25 {
		t.Fatalf("after Observe: %v at %d fps", m.Target(), m.FPS())
	}
	// Having observed the initial decision, it does not make its own at 128
	// (the game speed allows the 25 fps it observed).
	rec := NewRecord(0, []int{1})
	rec.Add(Report{Player: 1, Frame: 128, RTT: ms(100), HasRTT: true})
	if d, ok := m.Evaluate(128, rec, 25); ok {
		t.Fatalf("decided %+v after observing the initial target", d)
	}
}

// A frame-rate change with no reason to move the target still goes out as a
// timing event that keeps the target (S15), reason "rate"; an unchanged rate
// sends nothing.
func TestRateOnlyTimingEvent_S15(t *testing.T) {
	m := NewMaster(0, StartTiming(), 30)
	rec := NewRecord(0, []int{1, 2})
	rec.Add(Report{Player: 1, Frame: 40, RTT: ms(60), HasRTT: true})
	rec.Add(Report{Player: 2, Frame: 40, RTT: ms(60), HasRTT: true})
	d, ok := m.Evaluate(64, rec, 30)
	if !ok || d.Reason != Initial || d.FPS != 30 {
		t.Fatalf("initial %+v %v", d, ok)
	}
	rec.Add(Report{Player: 1, Frame: 200, RTT: ms(60), HasRTT: true})
	rec.Add(Report{Player: 2, Frame: 200, RTT: ms(60), HasRTT: true})
	if d, ok := m.Evaluate(256, rec, 30); ok {
		t.Fatalf("unchanged rate sent %+v", d)
	}
	d, ok = m.Evaluate(512, rec, 20) // the Speed slider moved to 20
	if !ok || d.Reason != Rate || d.FPS != 20 || d.Target != m.Target() {
		t.Fatalf("speed change: %+v %v, want a rate event keeping %v", d, ok, m.Target())
	}
	if Rate.String() != "rate" {
		t.Fatalf("Rate reads %q", Rate.String())
	}
	// While a report is stale the master keeps the current rate (S15).
	rec2 := NewRecord(600, []int{1, 2})
	rec2.Add(Report{Player: 1, Frame: 700, RTT: ms(60), HasRTT: true})
	if d, ok := m.Evaluate(768, rec2, 10); ok {
		t.Fatalf("changed the rate with a report missing: %+v", d)
	}
}

func TestReasonString_S11(t *testing.T) {
	for r, want := range map[Reason]string{
		Initial: "initial", Fallback: "fallback", Worse: "worse", Better: "better", Forced: "forced", 0: "Reason(0)",
	} {
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q, want %q", int(r), got, want)
		}
	}
}

// Property over seeded random sessions: a descent never skips a rung and
// never goes below what the worst round trip needs; a worsening is exactly
// the need; every target is a valid timing.
func TestDescentNeverSkipsRung_S11d(t *testing.T) {
	rtts := []float64{50, 100, 150, 200, 260, 400, 600, 800, 1050, 1200, 2000, 3000, 5000, 20000}
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		players := 2 + rng.IntN(6)
		r := newEvalRun(players)
		r.speed = []int{15, 30, 60}[rng.IntN(3)]
		r.master = NewMaster(0, StartTiming(), r.speed)
		r.shadow = NewMaster(0, StartTiming(), r.speed)
		base := rtts[rng.IntN(len(rtts))]
		for frame := 64; frame <= 64*256; frame += 64 {
			// Reports on report frames; the round trip drifts toward a
			// random target so descents have room to run.
			if IsReportFrame(frame) {
				if rng.IntN(6) == 0 {
					base = rtts[rng.IntN(len(rtts))]
				}
				for p := 1; p <= players; p++ {
					if rng.IntN(40) == 0 {
						continue // no report this time
					}
					rp := Report{Player: p, Frame: frame, RTT: ms(base * (0.5 + rng.Float64()/2)), HasRTT: rng.IntN(30) != 0}
					if rng.IntN(20) == 0 {
						rp.Wait = ms(150)
					}
					r.rec.Add(rp)
				}
			}
			if rng.IntN(200) == 0 {
				next := NewMaster(0, r.master.Target(), r.master.FPS())
				next.Observe(Decision{Frame: frame, Target: r.master.Target(), FPS: r.master.FPS()})
				next.TakeOver(frame)
				r.master = next
			}
			if !IsEvaluationFrame(frame) {
				continue
			}
			prev := r.master.Target()
			d, ok := r.master.Evaluate(frame, r.rec, r.speed)
			if !ok {
				continue
			}
			if !d.Target.Valid() {
				t.Fatalf("seed %d frame %d: invalid target %v", seed, frame, d.Target)
			}
			sum := r.rec.Summary(frame)
			need := Need(sum.Worst, d.FPS)
			switch d.Reason {
			case Better:
				oneRung := d.Target == RungTiming(prev.Rung()-1)
				cut := d.Target.Rung() == prev.Rung() && d.Target.LookAhead < prev.LookAhead && d.Target == need
				if !oneRung && !cut {
					t.Fatalf("seed %d frame %d: improvement %v → %v skips a rung", seed, frame, prev, d.Target)
				}
				if d.Target.compare(need) < 0 {
					t.Fatalf("seed %d frame %d: improvement to %v below the need %v", seed, frame, d.Target, need)
				}
			case Worse:
				if d.Target != need || d.Target.compare(prev) <= 0 {
					t.Fatalf("seed %d frame %d: worse %v → %v, need %v", seed, frame, prev, d.Target, need)
				}
			}
		}
	}
}
