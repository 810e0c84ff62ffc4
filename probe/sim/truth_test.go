package sim

import (
	"strings"
	"testing"

	"github.com/lagscope/lagscope/rungs"
)

// S16: a new master keeps the target, restarts the count of three and waits
// 256 frames before an improvement. Alice, the master, has the only slow
// links (400 ms); she leaves at frame 590 and the removal executes at
// about 604, after every report that still measured her links (384) and
// before the first that does not (640). Bob takes over. The evaluation of
// 768 already meets every other condition of an improvement (the last
// change was at 64); it falls inside bob's 256 frames, so the count of
// three starts only at 1024 and the first improvement comes at 1536. A new
// master that did not wait would count 768, 1024, 1280 and improve at 1280.
func TestNewMasterWaits256FramesEndToEnd_S16(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader(`{
	  "fps": 30, "frames": 1700, "seed": 9,
	  "players": ["alice", "bob", "carol"],
	  "commands_per_minute": 60,
	  "network": {"rtt_ms": 60},
	  "links": [{"between": ["alice", "bob"], "rtt_ms": 400}, {"between": ["alice", "carol"], "rtt_ms": 400}],
	  "timeline": [{"at_frame": 590, "remove": "alice"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	r := runScenario(t, sc)
	masters := r.of("master")
	if len(masters) != 2 || masters[1].str("player") != "bob" {
		t.Fatalf("masters %v, want alice then bob:\n%s", masters, describe(r))
	}
	handoff := masters[1].int("frame")
	// S16: a new master waits 256 frames before an improvement counts, and
	// the first improvement takes three passing evaluations in a row.
	const handoffWait, inARow = 256, 3
	// The test needs the handoff after the reports of 512 (the last to
	// measure alice's links) and before those of 640, and an evaluation
	// inside the wait that would otherwise count.
	var evals []int
	for f := handoff + 1; f <= 1700; f++ {
		if rungs.IsEvaluationFrame(f) {
			evals = append(evals, f)
		}
	}
	if handoff <= 512 || handoff >= 640 || evals[0] >= handoff+handoffWait {
		t.Fatalf("handoff at %d, first evaluation after it %d: the test needs the handoff between the reports of 512 and 640 and an evaluation within 256 frames of it",
			handoff, evals[0])
	}
	// The third evaluation in a row from the first one the wait allows.
	want := -1
	n := 0
	for _, f := range evals {
		if f >= handoff+handoffWait {
			if n++; n == inARow {
				want = f
				break
			}
		}
	}
	var first ev
	for _, e := range r.timings() {
		if e.int("decided") > handoff {
			first = e
			break
		}
	}
	if first == nil {
		t.Fatalf("no timing event after the handoff at %d:\n%s", handoff, describe(r))
	}
	if first.str("reason") != "better" || first.int("decided") != want {
		t.Fatalf("first timing event after the handoff at %d: %s decided at %d, want better decided at %d (three evaluations from %d on)\n%s",
			handoff, first.str("reason"), first.int("decided"), want, handoff+handoffWait, describe(r))
	}
}
