package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// simDiagnoses runs the scenario and reads back the `diagnosis` lines it
// printed and the summary's diagnosis: what an outside check sees.
func simDiagnoses(t *testing.T, sc *Scenario) ([]diagnosis.Event, diagnosis.Diagnosis) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Run(sc, &buf); err != nil {
		t.Fatal(err)
	}
	var evs []diagnosis.Event
	var sum feed.SummaryEvent
	sawSummary := false
	sc2 := bufio.NewScanner(&buf)
	sc2.Buffer(nil, 1<<24)
	for sc2.Scan() {
		line := sc2.Bytes()
		var head struct{ Type string }
		if err := json.Unmarshal(line, &head); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		switch head.Type {
		case "diagnosis":
			var e diagnosis.Event
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatal(err)
			}
			// Every line: a culprit never holds the match at what it would
			// run at without it.
			if m := holdsRE.FindStringSubmatch(e.Verdict); m != nil && m[1] == m[2] {
				t.Errorf("frame %d: %q", e.Frame, e.Verdict)
			}
			evs = append(evs, e)
		case "summary":
			if !bytes.Contains(line, []byte(`"diagnosis":{"verdict":`)) {
				t.Fatalf("summary without its diagnosis: %.200s", line)
			}
			if err := json.Unmarshal(line, &sum); err != nil {
				t.Fatal(err)
			}
			sawSummary = true
		}
	}
	if !sawSummary {
		t.Fatal("no summary")
	}
	return evs, sum.Diagnosis
}

// lastN is the last n diagnoses printed; the test fails with fewer.
func lastN(t *testing.T, evs []diagnosis.Event, n int) []diagnosis.Event {
	t.Helper()
	if len(evs) < n {
		t.Fatalf("%d diagnosis lines, want at least %d", len(evs), n)
	}
	return evs[len(evs)-n:]
}

func playerOf(t *testing.T, d diagnosis.Diagnosis, name string) diagnosis.PlayerDiagnosis {
	t.Helper()
	for _, p := range d.Players {
		if p.Player == name {
			return p
		}
	}
	t.Fatalf("no line for %s", name)
	return diagnosis.PlayerDiagnosis{}
}

// One line per master evaluation frame (S9: 64, 128, then every 256) from
// the first at which every player is measured to the end of the run, and
// never on another frame.
func TestSimDiagnosisOncePerEvaluation_S9(t *testing.T) {
	sc := accessScenario(t, 1, `"ada":{"rtt_ms":150}`, "")
	evs, _ := simDiagnoses(t, sc)
	want := []int{64, 128}
	for f := 256; f <= sc.Frames; f += 256 {
		want = append(want, f)
	}
	var got []int
	for _, e := range evs {
		got = append(got, e.Frame)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("diagnosis frames %v, want %v", got, want)
	}
	for _, e := range evs {
		if !rungs.IsEvaluationFrame(e.Frame) || e.Measured != 0 {
			t.Fatalf("frame %d", e.Frame) // Measured is not in the JSON
		}
	}
}

// Five players with different access round trips, several seeds, through
// the printed lines: in each of the last three evaluations every
// access_rtt_ms is within 10 % (or 5 ms) of the configured access plus
// half the 10 ms core, ada is the culprit and without her the match runs
// at rung 1 (without ada the worst pair is cy–eve, 110 ms: with headroom
// 137.5 ms, 2.06 frames each way at 30 fps → rung 1; S9).
func TestSimDiagnosisFiveAccessLinks_S9(t *testing.T) {
	access := `"ada":{"rtt_ms":150},"bob":{"rtt_ms":20},"cy":{"rtt_ms":40},"dee":{"rtt_ms":10},"eve":{"rtt_ms":60,"jitter_ms":2}`
	want := map[string]float64{"ada": 155, "bob": 25, "cy": 45, "dee": 15, "eve": 65}
	for seed := uint64(1); seed <= 3; seed++ {
		evs, final := simDiagnoses(t, accessScenario(t, seed, access, ""))
		for _, e := range append(lastN(t, evs, 3), diagnosis.Event{Frame: -1, Diagnosis: final}) {
			for name, w := range want {
				p := playerOf(t, e.Diagnosis, name)
				if tol := math.Max(5, 0.1*w); math.IsNaN(p.AccessRTTMs) || math.Abs(p.AccessRTTMs-w) > tol {
					t.Errorf("seed %d frame %d: %s access_rtt_ms %.1f, want %.0f ± %.1f", seed, e.Frame, name, p.AccessRTTMs, w, tol)
				}
			}
			if e.Culprit != "ada" || e.CulpritLink != nil {
				t.Errorf("seed %d frame %d: culprit %q link %v, want ada; verdict %q", seed, e.Frame, e.Culprit, e.CulpritLink, e.Verdict)
			}
			if p := playerOf(t, e.Diagnosis, "ada"); p.RungWithout != 1 || !hasCause(p, diagnosis.CauseLatency) {
				t.Errorf("seed %d frame %d: ada rung_without %d causes %v, want 1 and latency", seed, e.Frame, p.RungWithout, p.Causes)
			}
			if !strings.HasPrefix(e.Verdict, "ada's connection adds ") {
				t.Errorf("seed %d frame %d: verdict %q", seed, e.Frame, e.Verdict)
			}
		}
	}
}

// One player with 5 % upload loss: its access_loss within 1.5 points in
// the last evaluations, the others under 1 % (L2: the receivers observe
// the gaps), and the cause loss on it alone.
func TestSimDiagnosisUploadLoss_L2(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		evs, final := simDiagnoses(t, accessScenario(t, seed, `"cy":{"rtt_ms":20,"loss_up":0.05}`, ""))
		for _, e := range append(lastN(t, evs, 2), diagnosis.Event{Frame: -1, Diagnosis: final}) {
			for _, p := range e.Players {
				switch {
				case math.IsNaN(p.AccessLoss):
					t.Errorf("seed %d frame %d: %s access_loss unknown", seed, e.Frame, p.Player)
				case p.Player == "cy" && (math.Abs(p.AccessLoss-0.05) > 0.015 || !hasCause(p, diagnosis.CauseLoss)):
					t.Errorf("seed %d frame %d: cy access_loss %.4f causes %v, want 0.05 ± 0.015 and loss", seed, e.Frame, p.AccessLoss, p.Causes)
				case p.Player != "cy" && (p.AccessLoss >= 0.01 || hasCause(p, diagnosis.CauseLoss)):
					t.Errorf("seed %d frame %d: %s access_loss %.4f causes %v, want under 0.01", seed, e.Frame, p.Player, p.AccessLoss, p.Causes)
				}
			}
		}
	}
}

// One slow path between two players on good links: culprit_link is that
// pair, nobody is the culprit, and neither player's share is inflated by
// more than 5 ms.
func TestSimDiagnosisSlowPath(t *testing.T) {
	all10 := `"ada":{"rtt_ms":10},"bob":{"rtt_ms":10},"cy":{"rtt_ms":10},"dee":{"rtt_ms":10},"eve":{"rtt_ms":10}`
	for seed := uint64(1); seed <= 3; seed++ {
		evs, final := simDiagnoses(t, accessScenario(t, seed, all10, `,"links":[{"between":["bob","dee"],"rtt_ms":400}]`))
		for _, e := range append(lastN(t, evs, 3), diagnosis.Event{Frame: -1, Diagnosis: final}) {
			if e.CulpritLink == nil || *e.CulpritLink != [2]string{"bob", "dee"} || e.Culprit != "" {
				t.Errorf("seed %d frame %d: culprit %q link %v, want the bob–dee path; verdict %q", seed, e.Frame, e.Culprit, e.CulpritLink, e.Verdict)
			}
			for _, p := range e.Players {
				if math.Abs(p.AccessRTTMs-15) > 5 {
					t.Errorf("seed %d frame %d: %s access_rtt_ms %.1f, want 15 ± 5", seed, e.Frame, p.Player, p.AccessRTTMs)
				}
			}
			if !strings.Contains(e.Verdict, "The path between bob and dee is slow") {
				t.Errorf("seed %d frame %d: verdict %q", seed, e.Frame, e.Verdict)
			}
		}
	}
}

// One player with 50 ms processing per frame holds the match at 20 fps
// (S15): fps_without 30 for it, cause processing, and it is the culprit,
// from the first evaluation on.
func TestSimDiagnosisSlowMachine_S15(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		evs, final := simDiagnoses(t, accessScenario(t, seed, "", `,"process_ms":{"dee":50}`))
		if len(evs) == 0 {
			t.Fatal("no diagnosis")
		}
		for _, e := range append(evs, diagnosis.Event{Frame: -1, Diagnosis: final}) {
			p := playerOf(t, e.Diagnosis, "dee")
			if p.FPSWithout != 30 || !hasCause(p, diagnosis.CauseProcessing) || e.Culprit != "dee" || p.ProcessMs != 50 {
				t.Errorf("seed %d frame %d: dee fps_without %d process %.1f causes %v culprit %q; verdict %q",
					seed, e.Frame, p.FPSWithout, p.ProcessMs, p.Causes, e.Culprit, e.Verdict)
			}
			if q := playerOf(t, e.Diagnosis, "ada"); q.FPSWithout != 20 || hasCause(q, diagnosis.CauseProcessing) {
				t.Errorf("seed %d frame %d: ada fps_without %d causes %v, want 20 (dee still there)", seed, e.Frame, q.FPSWithout, q.Causes)
			}
		}
	}
}

// Two players: one round trip cannot be split — no culprit, no path, every
// share null, in every line and the summary, however bad the round trip.
func TestSimDiagnosisTwoPlayers(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		js := fmt.Sprintf(`{"fps":30,"frames":1200,"seed":%d,"players":["ada","bob"],"network":{"rtt_ms":10},`+
			`"access":{"ada":{"rtt_ms":200,"loss_up":0.05}}}`, seed)
		sc, err := ParseScenario(strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		evs, final := simDiagnoses(t, sc)
		if len(evs) == 0 {
			t.Fatal("no diagnosis")
		}
		for _, e := range append(evs, diagnosis.Event{Frame: -1, Diagnosis: final}) {
			if e.Culprit != "" || e.CulpritLink != nil {
				t.Errorf("seed %d frame %d: culprit %q link %v", seed, e.Frame, e.Culprit, e.CulpritLink)
			}
			for _, p := range e.Players {
				if !math.IsNaN(p.AccessRTTMs) || !math.IsNaN(p.AccessLoss) || !math.IsNaN(p.JitterMs) {
					t.Errorf("seed %d frame %d: %s shares %v %v %v, want null", seed, e.Frame, p.Player, p.AccessRTTMs, p.AccessLoss, p.JitterMs)
				}
			}
			if !strings.HasPrefix(e.Verdict, "The round trip between ada and bob is 210 ms") ||
				!strings.Contains(e.Verdict, "With two players lagscope cannot tell whose side it is on.") {
				t.Errorf("seed %d frame %d: verdict %q", seed, e.Frame, e.Verdict)
			}
		}
	}
}

// A player that never reports a round trip (S8): no diagnosis line ever
// (not every player is measured), and the summary's diagnosis still
// there, naming it unmeasured.
func TestSimDiagnosisWaitsForEveryPlayer_S8(t *testing.T) {
	js := `{"fps":30,"frames":900,"seed":1,"players":["ada","bob","cy"],"network":{"rtt_ms":20},` +
		`"links":[{"between":["ada","cy"],"rtt_ms":5000}]}`
	sc, err := ParseScenario(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	evs, final := simDiagnoses(t, sc)
	if len(evs) != 0 {
		t.Fatalf("%d diagnosis lines before every player was measured; first %q", len(evs), evs[0].Verdict)
	}
	if p := playerOf(t, final, "cy"); !hasCause(p, diagnosis.CauseUnmeasured) {
		t.Fatalf("cy causes %v; verdict %q", p.Causes, final.Verdict)
	}
}

func hasCause(p diagnosis.PlayerDiagnosis, c vocab.Cause) bool {
	for _, x := range p.Causes {
		if x == c {
			return true
		}
	}
	return false
}

// A spike on one player's access link, then calm (the demo's plan in
// virtual time): the lines name ada while her access is slow and
// nobody once it has calmed and the round trips have settled.
func TestSimDiagnosisSpikeThenCalm(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		sc := accessScenario(t, seed, `"bob":{"rtt_ms":20}`,
			`,"timeline":[{"at_frame":300,"access":{"ada":{"rtt_ms":200}}},{"at_frame":800,"access":{"ada":{}}}]`)
		evs, final := simDiagnoses(t, sc)
		for _, e := range append(evs, diagnosis.Event{Frame: sc.Frames, Diagnosis: final}) {
			switch {
			case e.Frame >= 512 && e.Frame <= 768 && e.Culprit != "ada":
				t.Errorf("seed %d frame %d during the spike: culprit %q; verdict %q", seed, e.Frame, e.Culprit, e.Verdict)
			case e.Frame >= 1280 && e.Culprit != "":
				t.Errorf("seed %d frame %d after the spike: culprit %q; verdict %q", seed, e.Frame, e.Culprit, e.Verdict)
			}
		}
	}
}

var holdsRE = regexp.MustCompile(`holds the match at (.*?) — without it: (.*?)\.`)
