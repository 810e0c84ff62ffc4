package rungs

import (
	"testing"
	"time"
)

// The outlook projects S11c–d on a copy: from a target of rung 4 with a
// round trip that needs rung 1 with headroom, three calm evaluations then
// one rung per evaluation — the decision that reaches rung 1 comes on the
// sixth evaluation after now (3 to count, steps 4→3 on the third, 3→2,
// 2→1), and the master itself is not changed.
func TestOutlookProjectsTheDescent_S11(t *testing.T) {
	const fps = 30
	m := NewMaster(0, StartTiming(), fps)
	m.Observe(Decision{Frame: 64, Target: RungTiming(4), FPS: fps, Reason: Initial})
	rec := NewRecord(0, []int{0, 1})
	at := 512
	for p := range 2 {
		rec.Add(Report{Player: p, Frame: at - 10, RTT: 60 * time.Millisecond, HasRTT: true})
	}
	before := *m
	o := m.Outlook(at, rec)
	if *m != before {
		t.Fatal("Outlook changed the master")
	}
	if !o.Pending() || o.To != RungTiming(1) {
		t.Fatalf("outlook %+v, want a descent to rung 1", o)
	}
	// Evaluations after 512: 768, 1024 (count 1, 2), 1280 (3: 4→3), 1536
	// (3→2), 1792 (2→1).
	if o.Decided != 1792 {
		t.Errorf("decided on frame %d, want 1792", o.Decided)
	}
	if want := 1792 + 2*RungTiming(2).LookAhead + RungTiming(2).SendPeriod; o.Active != want {
		t.Errorf("in force by frame %d, want %d", o.Active, want)
	}

	// Running: each evaluation that passes moves a rung, so with two
	// passes already counted the first step comes on the next one.
	m.inARow = 2
	if o := m.Outlook(at, rec); o.Decided != 1280 {
		t.Errorf("with two calm evaluations counted: decided on %d, want 1280", o.Decided)
	}

	// Nothing pending: the round trip needs the target already, or a
	// report is missing.
	slow := NewRecord(0, []int{0, 1})
	for p := range 2 {
		slow.Add(Report{Player: p, Frame: at - 10, RTT: 500 * time.Millisecond, HasRTT: true})
	}
	if o := m.Outlook(at, slow); o.Pending() {
		t.Errorf("a round trip that needs rung 4 with headroom: outlook %+v, want none", o)
	}
	missing := NewRecord(0, []int{0, 1})
	missing.Add(Report{Player: 0, Frame: at - 10, RTT: 60 * time.Millisecond, HasRTT: true})
	if o := m.Outlook(at, missing); o.Pending() {
		t.Errorf("a missing report: outlook %+v, want none", o)
	}
}

func TestNextEvaluation_S9(t *testing.T) {
	for _, c := range []struct{ frame, start, want int }{
		{0, 0, 64}, {64, 0, 128}, {100, 0, 128}, {128, 0, 256}, {256, 0, 512}, {300, 0, 512}, {700, 600, 728}, {900, 600, 1112},
	} {
		if got := nextEvaluation(c.frame, c.start); got != c.want {
			t.Errorf("after frame %d (start %d): %d, want %d", c.frame, c.start, got, c.want)
		}
	}
}
