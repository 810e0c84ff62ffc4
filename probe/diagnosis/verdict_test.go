package diagnosis

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
	"testing"
	"time"

	"github.com/lagscope/lagscope/rungs"
)

// The verdict's sentences come in their order of priority — what holds
// the match back, what happens next, the notable players — and reword
// words the same facts for the timings the screen shows.
func TestVerdictOrderAndReword(t *testing.T) {
	nan := math.NaN()
	players := []Player{{Name: "ada"}, {Name: "bob"}, {Name: "cat", CausedWait: 3 * time.Second}, {Name: "dan"}}
	d := Diagnosis{Measured: 4, Players: []PlayerDiagnosis{
		{Player: "ada", AccessLoss: 0.001, JitterMs: 2, ProcessMs: 1},
		{Player: "bob", AccessLoss: nan, JitterMs: nan, ProcessMs: 0},
		{Player: "cat", AccessLoss: 0.05, JitterMs: 25, ProcessMs: 20, CausedWaitMs: 3000},
		{Player: "dan", AccessLoss: 0.0199, JitterMs: 19.9, ProcessMs: 16},
	}}
	in := Input{Players: players, Target: rungs.RungTiming(4), InForce: rungs.RungTiming(4), FPS: 30, Frame: 1000,
		Outlook: rungs.Outlook{To: rungs.RungTiming(1), Decided: 2024, Active: 2040}, Before: "ada", Elapsed: 10 * time.Minute}
	d.facts = newFacts(in, 4, 30, 200)
	now := Timings{Target: in.Target, InForce: in.InForce, Frame: in.Frame, FPS: in.FPS}
	got := d.Sentences(now)
	want := []string{
		"ada's connection is back to normal; the match steps back down from Normal (rung 4) to Fast (rung 1) in about 35 s.",
		"cat loses 5 % of its packets, its round trips vary by 25 ms and its machine needs 20 ms of every 33 ms frame; " +
			"so far it costs the match 3 s of waiting in 10 min.",
	}
	if len(got) != len(want) {
		t.Fatalf("sentences %q\nwant %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sentence %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}

	// Later, one rung down: the time counts down from the frame shown.
	later := Timings{Target: rungs.RungTiming(3), InForce: rungs.RungTiming(3), Frame: 1600, FPS: 30}
	if s := d.Sentences(later)[0]; s != "ada's connection is back to normal; the match steps back down from Normal (rung 3) to Fast (rung 1) in about 15 s." {
		t.Errorf("reworded: %q", s)
	}
	// There: nothing more to say about the descent.
	there := Timings{Target: rungs.RungTiming(1), InForce: rungs.RungTiming(1), Frame: 2100, FPS: 30}
	if s := d.Sentences(there)[0]; s != "No one's connection or machine holds the match back; it runs at Fast (rung 1)." {
		t.Errorf("arrived: %q", s)
	}
	// Decoded from JSON: no facts, the verdict as it was written.
	var back Diagnosis
	b, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	back.Verdict = "as written"
	if s := back.reword(there); s != "as written" {
		t.Errorf("a decoded diagnosis reworded to %q", s)
	}
}

// The "holds the match at" clause names the target; when the culprit's
// absence would not move it, the sentence says so instead of promising a
// gain.
func TestVerdictNamesTheTargetAndNoFalseGain(t *testing.T) {
	ada := PlayerDiagnosis{Player: "ada", AccessRTTMs: 150, RungWithout: 1, Causes: []vocab.Cause{CauseLatency}}
	d := Diagnosis{Measured: 4, Culprit: "ada", Reason: "rung", Players: []PlayerDiagnosis{ada}}
	in := Input{Players: []Player{{Name: "ada"}, {Name: "bob"}, {Name: "cat"}, {Name: "dan"}}, Target: rungs.RungTiming(1), FPS: 30}
	if got, want := verdictOf(d, in, 2, 30, 200),
		"ada's connection adds 150 ms to every round trip with ada; the match runs at Fast (rung 1), as it would without it."; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	in.Target = rungs.RungTiming(3)
	if got, want := verdictOf(d, in, 3, 30, 200),
		"ada's connection adds 150 ms to every round trip with ada; it holds the match at Normal (rung 3) — without it: Fast (rung 1)."; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestInAbout(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{2 * time.Second, "in a few seconds"}, {7400 * time.Millisecond, "in a few seconds"}, {8 * time.Second, "in about 10 s"},
		{37 * time.Second, "in about 35 s"}, {38 * time.Second, "in about 40 s"}, {150 * time.Second, "in about 3 min"},
	} {
		if got := inAbout(c.d); got != c.want {
			t.Errorf("%v: %q, want %q", c.d, got, c.want)
		}
	}
}
