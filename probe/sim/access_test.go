package sim

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/units"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

func TestAccessErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		`{"frames":10,"players":["a"],"access":{"z":{"rtt_ms":1}}}`:                               `"access"`,
		`{"frames":10,"players":["a"],"access":{"a":{"rtt_ms":-1}}}`:                              `access.a.rtt_ms`,
		`{"frames":10,"players":["a"],"access":{"a":{"jitter_ms":1e9}}}`:                          `access.a.jitter_ms`,
		`{"frames":10,"players":["a"],"access":{"a":{"loss_up":1}}}`:                              `access.a.loss_up`,
		`{"frames":10,"players":["a"],"access":{"a":{"loss_down":-0.1}}}`:                         `access.a.loss_down`,
		`{"frames":10,"players":["a"],"access":{"a":{"loss":0.1}}}`:                               `"loss"`,
		`{"frames":10,"players":["a"],"timeline":[{"at_frame":5,"access":{"b":{"rtt_ms":1}}}]}`:   `timeline[0].access`,
		`{"frames":10,"players":["a"],"observers":["o"],"access":{"o":{"rtt_ms":1}}}`:             `"o" is not a player`,
		`{"frames":10,"players":["a"],"timeline":[{"at_frame":5,"access":{"a":{"rtt_ms":"x"}}}]}`: `rtt_ms`,
	}
	for in, want := range cases {
		_, err := ParseScenario(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %s", in, err, want)
		}
	}
	ok := `{"frames":10,"players":["a","b"],"access":{"a":{"rtt_ms":150,"jitter_ms":10,"loss_up":0.03,"loss_down":0}},` +
		`"timeline":[{"at_frame":5,"access":{"a":{}}}]}`
	if _, err := ParseScenario(strings.NewReader(ok)); err != nil {
		t.Fatalf("the CONTRACTS example: %v", err)
	}
}

// diagnosisInput builds the diagnosis's input from a run's summary links,
// as the probe will from its links: a pair's round trip is the mean of the
// two ends' SRTT, and a→b's observed loss is what b counted inbound from a
// (L2).
func diagnosisInput(sc *Scenario, links []feed.LinkStat) diagnosis.Input {
	in := diagnosis.Input{Speed: sc.FPS}
	idx := map[string]int{}
	for i, n := range sc.Players {
		idx[n] = i
		in.Players = append(in.Players, diagnosis.Player{Name: n, Measured: true, Process: units.FromMillis(sc.ProcessMs[n])})
	}
	type key struct{ from, to int }
	byDir := map[key]feed.LinkStat{}
	for _, l := range links {
		a, okA := idx[l.From]
		b, okB := idx[l.To]
		if okA && okB {
			byDir[key{a, b}] = l
		}
	}
	for a := range sc.Players {
		for b := a + 1; b < len(sc.Players); b++ {
			la, okA := byDir[key{a, b}]
			lb, okB := byDir[key{b, a}]
			if !okA || !okB || la.SRTTMs == nil || lb.SRTTMs == nil {
				continue
			}
			p := diagnosis.Pair{A: a, B: b, RTT: units.FromMillis((*la.SRTTMs + *lb.SRTTMs) / 2)}
			if la.RTTVARMs != nil && lb.RTTVARMs != nil {
				p.RTTVar = units.FromMillis((*la.RTTVARMs + *lb.RTTVARMs) / 2)
			}
			// la is a's view: its inbound (Expected/Missing) is b→a.
			if lb.Expected != nil && lb.Missing != nil {
				p.ExpectedAB, p.MissingAB = *lb.Expected, *lb.Missing
			}
			if la.Expected != nil && la.Missing != nil {
				p.ExpectedBA, p.MissingBA = *la.Expected, *la.Missing
			}
			in.Pairs = append(in.Pairs, p)
		}
	}
	return in
}

func accessScenario(t *testing.T, seed uint64, access, extra string) *Scenario {
	t.Helper()
	js := fmt.Sprintf(`{"fps":30,"frames":1500,"seed":%d,"players":["ada","bob","cy","dee","eve"],`+
		`"network":{"rtt_ms":10},"commands_per_minute":600,"access":{%s}%s}`, seed, access, extra)
	sc, err := ParseScenario(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func diagnoseRun(t *testing.T, sc *Scenario) diagnosis.Diagnosis {
	t.Helper()
	var buf bytes.Buffer
	res, err := Run(sc, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return diagnosis.Diagnose(diagnosisInput(sc, res.Summary.Links))
}

// Five players with different access round trips: every share within 10 %
// (or 5 ms) of the configured access plus half of the 10 ms core, the right
// culprit and rung_without (S9).
func TestAccessSharesFromASimulatedSession_S9(t *testing.T) {
	access := `"ada":{"rtt_ms":150},"bob":{"rtt_ms":20},"cy":{"rtt_ms":40},"dee":{"rtt_ms":10},"eve":{"rtt_ms":60,"jitter_ms":2}`
	want := []float64{155, 25, 45, 15, 65}
	for seed := uint64(1); seed <= 3; seed++ {
		d := diagnoseRun(t, accessScenario(t, seed, access, ""))
		for i, p := range d.Players {
			if tol := math.Max(5, 0.1*want[i]); math.IsNaN(p.AccessRTTMs) || math.Abs(p.AccessRTTMs-want[i]) > tol {
				t.Errorf("seed %d: %s access_rtt_ms %.1f, want %.0f ± %.1f", seed, p.Player, p.AccessRTTMs, want[i], tol)
			}
		}
		if d.Culprit != "ada" {
			t.Errorf("seed %d: culprit %q, want ada; verdict %q", seed, d.Culprit, d.Verdict)
		}
		// Without ada the worst pair is cy–eve, 110 ms: with headroom
		// 137.5 ms, one way 2.06 frames at 30 fps → 3 frames → rung 1.
		if d.Players[0].RungWithout != 1 {
			t.Errorf("seed %d: ada's rung_without %d, want 1", seed, d.Players[0].RungWithout)
		}
		t.Logf("seed %d: %s", seed, d.Verdict)
	}
}

// One player with 5 % upload loss: its access_loss within 1.5 points, the
// others under 1 % (L2: the receivers really observe the gaps).
func TestAccessLossShareFromASimulatedSession_L2(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		d := diagnoseRun(t, accessScenario(t, seed, `"cy":{"rtt_ms":20,"loss_up":0.05}`, ""))
		for _, p := range d.Players {
			switch {
			case math.IsNaN(p.AccessLoss):
				t.Errorf("seed %d: %s access_loss unknown", seed, p.Player)
			case p.Player == "cy" && math.Abs(p.AccessLoss-0.05) > 0.015:
				t.Errorf("seed %d: cy access_loss %.4f, want 0.05 ± 0.015", seed, p.AccessLoss)
			case p.Player != "cy" && p.AccessLoss >= 0.01:
				t.Errorf("seed %d: %s access_loss %.4f, want under 0.01", seed, p.Player, p.AccessLoss)
			}
		}
	}
}

// One slow path between two players on good links: culprit_link is that
// pair, and neither player's share is inflated by more than 5 ms.
func TestAccessSlowPathIsThePaths(t *testing.T) {
	sc := accessScenario(t, 1, `"ada":{"rtt_ms":10},"bob":{"rtt_ms":10},"cy":{"rtt_ms":10},"dee":{"rtt_ms":10},"eve":{"rtt_ms":10}`,
		`,"links":[{"between":["bob","dee"],"rtt_ms":400}]`)
	d := diagnoseRun(t, sc)
	if d.CulpritLink == nil || *d.CulpritLink != [2]string{"bob", "dee"} || d.Culprit != "" {
		t.Fatalf("culprit %q link %v, want the bob–dee path; verdict %q", d.Culprit, d.CulpritLink, d.Verdict)
	}
	for _, p := range d.Players {
		if math.Abs(p.AccessRTTMs-15) > 5 {
			t.Errorf("%s access_rtt_ms %.1f, want 15 ± 5", p.Player, p.AccessRTTMs)
		}
	}
}

// A timeline entry replaces a player's access: ada's 300 ms access ends at
// frame 300, and by the end her share is back to the 5 ms of the core.
func TestAccessTimelineChange(t *testing.T) {
	sc := accessScenario(t, 2, `"ada":{"rtt_ms":300}`, `,"timeline":[{"at_frame":300,"access":{"ada":{}}}]`)
	d := diagnoseRun(t, sc)
	if p := d.Players[0]; math.Abs(p.AccessRTTMs-5) > 5 || d.Culprit != "" {
		t.Fatalf("ada access_rtt_ms %.1f culprit %q after the change; verdict %q", p.AccessRTTMs, d.Culprit, d.Verdict)
	}
}

// FuzzParseScenarioAccess: no `access` object makes the decoder panic, and
// what it accepts has players only and values a network can carry.
func FuzzParseScenarioAccess(f *testing.F) {
	f.Add([]byte(`{"frames":3,"players":["a","b"],"access":{"a":{"rtt_ms":150,"jitter_ms":10,"loss_up":0.03,"loss_down":0}},` +
		`"timeline":[{"at_frame":1,"access":{"b":{"loss_down":0.5}}}]}`))
	f.Add([]byte(`{"frames":3,"players":["a"],"access":{"a":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := ParseScenario(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, access := range append([]map[string]AccessSpec{sc.Access}, timelineAccess(sc)...) {
			for name, a := range access {
				if !contains(sc.Players, name) {
					t.Fatalf("accepted access for %q, not a player", name)
				}
				up, down := a.profiles()
				if err := up.Validate(); err != nil {
					t.Fatalf("accepted %q: %v", name, err)
				}
				if err := down.Validate(); err != nil {
					t.Fatalf("accepted %q: %v", name, err)
				}
			}
		}
	})
}

func timelineAccess(sc *Scenario) []map[string]AccessSpec {
	var out []map[string]AccessSpec
	for _, c := range sc.Timeline {
		out = append(out, c.Access)
	}
	return out
}
