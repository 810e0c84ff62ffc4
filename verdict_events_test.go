package main

import (
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
)

// rungClause finds the rung a verdict says the match is held at or runs at.
var rungClause = regexp.MustCompile(`(?:holds the match at|runs at) (?:Fast|Normal|Poor|Bad) \(rung (\d+)\)`)

// evalEvent is the part of a timing or diagnosis event the check reads.
type evalEvent struct {
	Type    vocab.EventType `json:"type"`
	Frame   int             `json:"frame"`
	Decided int             `json:"decided"`
	Rung    int             `json:"rung"`
	Verdict string          `json:"verdict"`
}

// checkVerdictRungs: every diagnosis names the target chosen at its
// evaluation — the rung of the timing event decided on its frame when
// there is one, else the target the last timing event set.
func checkVerdictRungs(t *testing.T, name string, events []evalEvent) int {
	t.Helper()
	decided := map[int]int{}
	for _, e := range events {
		if e.Type == "timing" {
			decided[e.Decided] = e.Rung
		}
	}
	target, checked := 0, 0
	for _, e := range events {
		switch e.Type {
		case "timing":
			target = e.Rung
		case "diagnosis":
			want := target
			if r, ok := decided[e.Frame]; ok {
				want = r
			}
			for _, m := range rungClause.FindAllStringSubmatch(e.Verdict, -1) {
				checked++
				if n, _ := strconv.Atoi(m[1]); n != want {
					t.Errorf("%s frame %d: %q, but the target chosen at that evaluation is rung %d", name, e.Frame, m[0], want)
				}
			}
		}
	}
	return checked
}

func TestDiagnosisNamesTheTargetChosen_S9_S11(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	checked := 0
	for _, f := range files {
		var events []evalEvent
		for _, line := range strings.Split(strings.TrimSpace(string(simOutput(t, f))), "\n") {
			var e evalEvent
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			events = append(events, e)
		}
		checked += checkVerdictRungs(t, filepath.Base(f), events)
	}
	// The demo's plan, in virtual time: your machine's events.
	var events []evalEvent
	for _, u := range demoUpdates(t, verdictDemoLength) {
		for _, e := range u.Events {
			switch e := e.(type) {
			case *feed.TimingEvent:
				events = append(events, evalEvent{Type: vocab.EventTiming, Decided: e.Decided, Rung: e.Rung})
			case *feed.DiagnosisEvent:
				events = append(events, evalEvent{Type: vocab.EventDiagnosis, Frame: e.Frame, Verdict: e.Diagnosis.Verdict})
			}
		}
	}
	checked += checkVerdictRungs(t, "demo", events)
	if checked < 20 {
		t.Errorf("only %d verdicts named a rung: the check reads too little", checked)
	}
}

// A player that loses 5 % of what it sends (its uplink, `loss_up`) costs
// the match little at rung 1, but the verdict names it and its loss: both
// directions together, "its datagrams".
func TestVerdictNamesALossyPlayer(t *testing.T) {
	out := strings.TrimSpace(string(simOutput(t, filepath.Join("testdata", "scenarios", "uplink_loss.json"))))
	lines := strings.Split(out, "\n")
	var sum struct {
		Type      string `json:"type"`
		Diagnosis struct {
			Verdict string `json:"verdict"`
			Culprit *string
		} `json:"diagnosis"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Type != "summary" {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	v := sum.Diagnosis.Verdict
	if !regexp.MustCompile(`cat loses [45](\.\d)? % of its packets; so far it costs the match \d+(\.\d)? s of waiting in 10 min\.`).MatchString(v) {
		t.Errorf("the verdict does not name cat and its loss: %q", v)
	}
	for _, other := range []string{"ada", "bob", "dan"} {
		if strings.Contains(v, other) {
			t.Errorf("the verdict names %s, whose link is clean: %q", other, v)
		}
	}
}
