package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/sim"
)

// recordedSim records a simulation the way `lagscope sim --record` does:
// every printed line and the Views.
func recordedSim(t *testing.T, js string) *Recording {
	t.Helper()
	sc, err := sim.ParseScenario(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "lagscope sim", Session: "diag", Virtual: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sim.RunWith(sc, &bytes.Buffer{}, sim.Options{
		OnLine: func(at time.Duration, from string, line []byte) { w.eventLine(at, from, line) },
		OnView: func(v feed.View) { w.View(v) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil {
		t.Fatalf("read back: %v %v", err, rec.Stop)
	}
	return rec
}

const adaScenario = `{"fps":30,"frames":1500,"seed":2,"players":["ada","bob","cy","dee","eve"],"network":{"rtt_ms":10},` +
	`"commands_per_minute":600,"access":{"ada":{"rtt_ms":150},"bob":{"rtt_ms":20},"cy":{"rtt_ms":40},"dee":{"rtt_ms":10},"eve":{"rtt_ms":60}}}`

// A recording keeps the diagnosis lines byte for byte (they decode to
// DiagnosisEvents that write the same bytes again), the replayed View
// carries the latest one from the first evaluation on, and the report
// gives the last verdict, the per-player table and the culprit as the
// state at the end of the session, after the session's incidents and
// before the links (S19).
func TestDiagnosisRecordedReplayedAndReported_S19(t *testing.T) {
	rec := recordedSim(t, adaScenario)
	n := 0
	var first time.Duration
	for _, x := range rec.Records {
		e, ok := x.Event.(*feed.DiagnosisEvent)
		if !ok {
			continue
		}
		if n == 0 {
			first = x.At
		}
		n++
		again, err := json.Marshal(e)
		if err != nil || !bytes.Equal(again, x.Raw) {
			t.Fatalf("diagnosis line read back as\n%s\nwas\n%s", again, x.Raw)
		}
	}
	if n < 5 {
		t.Fatalf("%d diagnosis lines recorded", n)
	}

	c := newCursor(rec, "")
	if u := c.advance(first - time.Millisecond); u.View.Diagnosis != nil {
		t.Fatalf("a diagnosis before the first evaluation: %q", u.View.Diagnosis.Verdict)
	}
	if u := c.advance(c.End()); u.View.Diagnosis == nil || u.View.Diagnosis.Culprit != "ada" {
		t.Fatalf("replayed View's diagnosis %+v, want ada named", u.View.Diagnosis)
	}

	r := summarize(rec)
	if r.Diagnosis == nil || !r.Diagnosis.End || r.Diagnosis.Diagnosis.Culprit != "ada" {
		t.Fatalf("report diagnosis %+v", r.Diagnosis)
	}
	var txt, md, js bytes.Buffer
	for f, b := range map[string]*bytes.Buffer{FormatText: &txt, FormatMarkdown: &md, FormatJSON: &js} {
		if err := r.write(b, f); err != nil {
			t.Fatal(err)
		}
	}
	ts := txt.String()
	if i, d, l := strings.Index(ts, "\nSession: "), strings.Index(ts, "\nEnd of session (frame 1500)"), strings.Index(ts, "\nLinks"); i < 0 || d < i || d > l ||
		!strings.Contains(ts, "Culprit: ada. Slow path: none.") || !strings.Contains(ts, "\n  ada ") ||
		!strings.Contains(ts, "ada's connection adds") || !strings.Contains(ts, "latency") {
		t.Fatalf("text report:\n%s", ts)
	}
	ms := md.String()
	if i, d, l := strings.Index(ms, "**Session:** "), strings.Index(ms, "**End of session** (frame 1500): "), strings.Index(ms, "| link |"); i < 0 || d < i || d > l ||
		!strings.Contains(ms, "| ada | 15") || !strings.Contains(ms, "| player | access ms | loss |") {
		t.Fatalf("markdown report:\n%s", ms)
	}
	var back struct {
		Diagnosis struct {
			End     bool   `json:"end"`
			Culprit string `json:"culprit"`
			Players []struct {
				Player      string `json:"player"`
				RungWithout *int   `json:"rung_without"`
			} `json:"players"`
		} `json:"diagnosis"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !back.Diagnosis.End || back.Diagnosis.Culprit != "ada" ||
		len(back.Diagnosis.Players) != 5 || back.Diagnosis.Players[0].RungWithout == nil || *back.Diagnosis.Players[0].RungWithout != 1 {
		t.Fatalf("json report %v: %s", err, js.String())
	}
}

// A recording with no diagnosis (made before it existed, or too short)
// says so where the section stands, and the JSON holds null.
func TestReportWithoutDiagnosis(t *testing.T) {
	r := summarize(&Recording{})
	var txt, md, js bytes.Buffer
	r.write(&txt, FormatText)
	r.write(&md, FormatMarkdown)
	r.write(&js, FormatJSON)
	if !strings.Contains(txt.String(), "End of session\n  no diagnosis in this recording") || !strings.Contains(md.String(), "**End of session:** no diagnosis") ||
		!strings.Contains(js.String(), `"diagnosis": null`) {
		t.Fatalf("text:\n%s\nmarkdown:\n%s\njson:\n%s", txt.String(), md.String(), js.String())
	}
}

// The rule of every event holds for the diagnosis: one with a good
// checksum but a value no diagnosis writes is damage, never replayed or reported; the
// edges a real one reaches (null numbers, a negative excess, a rung and a
// frame rate at the ends of their ranges) read.
func TestDiagnosisPlausible_S19(t *testing.T) {
	line := func(player, link string) string {
		return fmt.Sprintf(`{"at_ns":1,"from":"ada","event":{"type":"diagnosis","frame":64,"verdict":"ok","culprit":null,"culprit_link":null,`+
			`"players":[{"player":"ada","access_rtt_ms":null,"access_loss":null,"jitter_ms":null,"process_ms":0,"caused_wait_ms":0,`+
			`"rung_without":null,"fps_without":30,"causes":[]%s}],"links":[{"between":["ada","bob"],"rtt_ms":null,"expected_rtt_ms":null,`+
			`"excess_rtt_ms":null,"loss":null,"causes":[]%s}]}}`, player, link)
	}
	good := []string{
		line("", ""),
		line(`,"access_rtt_ms":0,"access_loss":1,"rung_without":10,"fps_without":1000,"causes":["latency","jitter","loss","processing","unmeasured","stale","bad","bufferbloat"],"bufferbloat_ms":{"upload":380.5,"download":null}`,
			`,"excess_rtt_ms":-12.5,"loss":0,"causes":["latency","loss"]`),
		`{"at_ns":1,"event":{"type":"summary","frame":9,"links":[],"players":[]}}`, // a summary from before the diagnosis
	}
	var buf []byte
	buf = append(buf, headerLine(feed.ProtocolVersion)...)
	for _, g := range good {
		buf = appendLine(buf, KindEvent, []byte(g))
	}
	if rec, err := readAll(bytes.NewReader(buf)); err != nil || rec.Stop != nil || len(rec.Records) != len(good) {
		t.Fatalf("good lines: %v, stop %v", err, rec.Stop)
	}
	bad := map[string]string{
		"unknown cause":      line(`,"causes":["bad luck"]`, ""),
		"loss above 1":       line(`,"access_loss":1.5`, ""),
		"negative share":     line(`,"access_rtt_ms":-3`, ""),
		"rung 11":            line(`,"rung_without":11`, ""),
		"fps 5000":           line(`,"fps_without":5000`, ""),
		"escape in verdict":  strings.Replace(line("", ""), `"verdict":"ok"`, `"verdict":"\u001b[2J"`, 1),
		"escape in culprit":  strings.Replace(line("", ""), `"culprit":null`, `"culprit":"a\u001bb"`, 1),
		"empty player":       line(`,"player":""`, ""),
		"excess beyond":      line("", `,"excess_rtt_ms":-1e300`),
		"link loss negative": line("", `,"loss":-0.1`),
		"link cause":         line("", `,"causes":["x"]`),
		"bufferbloat beyond": line(`,"bufferbloat_ms":{"upload":1e300,"download":0}`, ""),
		"summary diagnosis":  `{"at_ns":1,"event":{"type":"summary","frame":9,"links":[],"players":[],"diagnosis":{"verdict":"x","players":[{"player":"ada","access_loss":7}],"links":[]}}}`,
	}
	for name, b := range bad {
		buf := append(headerLine(feed.ProtocolVersion), appendLine(nil, KindEvent, []byte(b))...)
		rec, err := readAll(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s := rec.Stop; s == nil || !errors.Is(s, errCorrupt) || len(rec.Records) != 0 || strings.Contains(s.Error(), "\x1b") {
			t.Errorf("%s: stop %v, %d records; want damage", name, s, len(rec.Records))
		}
	}
}
