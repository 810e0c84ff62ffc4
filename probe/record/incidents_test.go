package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// incLine is one incident line as a machine publishes it.
func incLine(frame, id int, phase vocab.IncidentPhase, openedMs float64, who string, cause vocab.Cause, waitMs float64) *feed.IncidentEvent {
	inc := feed.Incident{ID: id, Phase: phase, OpenedMs: openedMs, OpenedFrame: int(openedMs * 30 / 1000), Cause: cause,
		WaitMs: waitMs, FramesWaited: int(waitMs / 100), RungFrom: 1, RungPeak: 1, Text: "t"}
	if a, b, ok := strings.Cut(who, "–"); ok {
		inc.Between = &[2]string{a, b}
	} else {
		inc.Player = &who
	}
	if phase == vocab.IncidentClose {
		inc.ClosedMs, inc.ClosedFrame = ptr(float64(frame)*1000/30), ptr(frame)
	}
	return &feed.IncidentEvent{Header: feed.Header{Type: vocab.EventIncident, Frame: frame}, Incident: inc}
}

// reportOf writes events (machine, event) into a recording made by the
// current writer, reads it back and sums it up.
func reportOf(t *testing.T, h Header, lines []struct {
	from string
	e    feed.Event
}) *report {
	t.Helper()
	var buf bytes.Buffer
	w, err := newWriter(&buf, h, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		at := time.Duration(feed.Head(l.e).Frame) * time.Second / 30
		if err := w.event(at, l.from, l.e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil {
		t.Fatalf("read back: %v %v", err, rec.Stop)
	}
	return summarize(rec)
}

func writeAll(t *testing.T, r *report) (txt, md string, js []byte) {
	t.Helper()
	var a, b, c bytes.Buffer
	for f, out := range map[string]*bytes.Buffer{FormatText: &a, FormatMarkdown: &b, FormatJSON: &c} {
		if err := r.write(out, f); err != nil {
			t.Fatal(err)
		}
	}
	return a.String(), b.String(), c.Bytes()
}

type line = struct {
	from string
	e    feed.Event
}

// The report leads with the session: how many incidents, what they cost
// together, then each one worst first with its time range, who, cause,
// where and cost; an incident the recording ends in the middle of is open
// at the cut, its cost what its latest line counted ("at least"); the
// state at the end comes after under its own heading. The JSON lists them
// in the order they opened, each as its latest line without its type.
func TestReportLeadsWithTheSessionsIncidents(t *testing.T) {
	path := incLine(400, 2, vocab.IncidentClose, 9000, "bob–cyd", vocab.CauseLoss, 2500)
	path.Loss = ptr(0.04)
	path.Where = &feed.IncidentWhere{Link: vocab.HopUplink, TTL: 2, AddedMs: 3.1}
	adaClose := incLine(1300, 1, vocab.IncidentClose, 10400, "ada", vocab.CauseLatency, 18043)
	adaClose.AddedMs, adaClose.RungPeak = ptr(391.8), 4
	adaClose.ClosedMs = ptr(37637.9)
	r := reportOf(t, Header{Program: "lagscope demo", Self: "you"}, []line{
		{"you", incLine(300, 1, vocab.IncidentOpen, 10400, "ada", vocab.CauseUnknown, 1400)},
		{"you", incLine(330, 2, vocab.IncidentOpen, 9000, "bob–cyd", vocab.CauseLoss, 100)},
		{"you", path},
		{"you", adaClose},
		{"you", &feed.DiagnosisEvent{Header: feed.Header{Type: vocab.EventDiagnosis, Frame: 1536}}},
		{"you", incLine(1700, 3, vocab.IncidentOpen, 55000, "cyd", vocab.CauseUnknown, 400)},
		{"you", incLine(1750, 3, vocab.IncidentUpdate, 55000, "cyd", vocab.CauseJitter, 650)},
	})
	txt, md, js := writeAll(t, r)

	wantTxt := "\nSession: 3 incidents, at least 21.2 s of waiting in all, the worst first:\n" +
		"  00:10–00:37, ada: latency (round trips up to 392 ms above normal); where: not known; cost 18.0 s of waiting on 180 frames; timing Fast (rung 1) → Normal (rung 4)\n" +
		"  00:09–00:13, the path bob – cyd: loss (up to 4.0 % of packets); where: hop 2 (uplink), +3.1 ms; cost 2.5 s of waiting on 25 frames\n" +
		"  00:55–00:58 (open at the cut), cyd: jitter; where: not known; cost at least 0.7 s of waiting on 6 frames\n" +
		"\nLast diagnosis before the recording ends (frame 1536 at 00:51)\n"
	if !strings.Contains(txt, wantTxt) {
		t.Errorf("text lacks\n%s\nin\n%s", wantTxt, txt)
	}
	if !strings.HasPrefix(txt, "lagscope report: session — 00:58, lagscope demo (live), 0 players\n\nSession: ") {
		t.Errorf("the session line is not the text report's headline:\n%s", txt)
	}
	wantMd := "**lagscope report:** session — 00:58, lagscope demo (live), 0 players\\\n" +
		"**Session:** 3 incidents, at least 21.2 s of waiting in all, the worst first:\n" +
		"- 00:10–00:37, ada: latency (round trips up to 392 ms above normal); where: not known; cost 18.0 s of waiting on 180 frames; timing Fast (rung 1) → Normal (rung 4)\n" +
		"- 00:09–00:13, the path bob – cyd: loss (up to 4.0 % of packets); where: hop 2 (uplink), +3.1 ms; cost 2.5 s of waiting on 25 frames\n" +
		"- 00:55–00:58 (open at the cut), cyd: jitter; where: not known; cost at least 0.7 s of waiting on 6 frames\n" +
		"\n**Last diagnosis before the recording ends** (frame 1536 at 00:51): "
	if !strings.HasPrefix(md, wantMd) {
		t.Errorf("markdown does not start with\n%s\nbut\n%s", wantMd, md)
	}

	var back struct {
		Incidents []map[string]any `json:"incidents"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, inc := range back.Incidents {
		if _, ok := inc["type"]; ok {
			t.Errorf("an incident of the JSON report has a type: %v", inc)
		}
		order = append(order, fmt.Sprintf("%v %v %v", inc["id"], inc["phase"], inc["closed_ms"]))
	}
	if got := strings.Join(order, ", "); got != "2 close 13333.333333333334, 1 close 37637.9, 3 update <nil>" {
		t.Errorf("JSON incidents (id, phase, closed_ms) in order: %s", got)
	}
	// Every key of the contract's incident line but the type, with the
	// values the latest line carried.
	var want map[string]any
	raw, _ := json.Marshal(adaClose)
	json.Unmarshal(raw, &want)
	delete(want, "type")
	delete(want, "frame")
	if fmt.Sprint(back.Incidents[1]) != fmt.Sprint(want) {
		t.Errorf("JSON incident\n%v\nwant the close line without type and frame\n%v", back.Incidents[1], want)
	}
}

// More incidents than the report lists: the five that cost most, then
// one line that counts the rest and what they cost.
func TestReportListsTheWorstIncidents(t *testing.T) {
	var lines []line
	for i := range 7 {
		lines = append(lines, line{"you", incLine(300+60*i, i+1, vocab.IncidentClose, float64(9000+2000*i), fmt.Sprint("p", i), vocab.CauseLatency, float64(100*(i+1)))})
	}
	txt, md, _ := writeAll(t, reportOf(t, Header{Program: "lagscope host", Self: "you"}, lines))
	if !strings.Contains(txt, "Session: 7 incidents, 2.8 s of waiting in all, the worst first:\n  00:21–00:22, p6: latency") ||
		!strings.Contains(txt, "p2: latency; where: not known; cost 0.3 s of waiting on 3 frames\n  … 2 more, 0.3 s of waiting\n") ||
		strings.Contains(txt, "p1:") || strings.Contains(txt, "p0:") {
		t.Errorf("text:\n%s", txt)
	}
	if !strings.Contains(md, "\n- … 2 more, 0.3 s of waiting\n\n") {
		t.Errorf("markdown:\n%s", md)
	}
}

// A recording of several machines' incident lines (a simulation whose
// narrating machine left, a demo that publishes every machine) tells each
// incident once: a machine's lines that go on with an incident another
// machine's lines left open are that incident's, whatever its id there.
func TestReportIncidentsOfSeveralMachines(t *testing.T) {
	r := reportOf(t, Header{Program: "lagscope sim", Virtual: true}, []line{
		{"alice", incLine(300, 1, vocab.IncidentOpen, 9000, "bob", vocab.CauseUnknown, 300)},
		{"alice", incLine(320, 2, vocab.IncidentOpen, 9500, "carol–dave", vocab.CauseLatency, 200)},
		{"alice", incLine(340, 2, vocab.IncidentClose, 9500, "carol–dave", vocab.CauseLatency, 400)},
		{"carol", incLine(400, 7, vocab.IncidentUpdate, 9100, "bob", vocab.CauseLatency, 900)},
		{"carol", incLine(420, 8, vocab.IncidentOpen, 13000, "carol–dave", vocab.CauseLatency, 300)},
		{"carol", incLine(500, 7, vocab.IncidentClose, 9100, "bob", vocab.CauseLatency, 1500)},
	})
	var got []string
	for _, inc := range r.Incidents {
		got = append(got, fmt.Sprint(inc.ID, " ", inc.Phase, " ", inc.WaitMs))
	}
	if strings.Join(got, ", ") != "7 close 1500, 2 close 400, 8 open 300" {
		t.Fatalf("incidents %v", got)
	}
}

// A recording that ends with its summary takes the summary's incidents
// (every incident of the run as its close line); one closed on the
// summary's frame was still going when the run ended, and the report says
// so rather than that it ended then.
func TestReportIncidentsOfASimulation(t *testing.T) {
	rec := recordedSim(t, `{"fps":30,"frames":1600,"seed":3,"players":["alice","bob","carol"],"commands_per_minute":300,"network":{"rtt_ms":60},`+
		`"timeline":[{"at_frame":600,"links":[{"between":["bob","carol"],"rtt_ms":500}]}]}`)
	lines := 0
	for _, x := range rec.Records {
		if e, ok := x.Event.(*feed.IncidentEvent); ok {
			lines++
			if again, _ := json.Marshal(e); !bytes.Equal(again, x.Raw) {
				t.Fatalf("incident line read back as\n%s\nwas\n%s", again, x.Raw)
			}
		}
	}
	r := summarize(rec)
	if lines < 2 || len(r.Incidents) != 1 || r.Incidents[0].Between == nil || r.Incidents[0].Phase != vocab.IncidentClose {
		t.Fatalf("%d incident lines recorded; report incidents %+v", lines, r.Incidents)
	}
	txt, _, _ := writeAll(t, r)
	if !strings.Contains(txt, "\nSession: 1 incident, ") || !strings.Contains(txt, " (until the end), the path bob – carol: latency (round trips up to") {
		t.Fatalf("text:\n%s", txt)
	}
}

// rawRecording is a recording as an older writer wrote it: its header
// names protocol and its event lines are given as they were printed.
func rawRecording(t *testing.T, protocol int, events ...string) *Recording {
	t.Helper()
	b := appendLine(nil, kindHeader, fmt.Appendf(nil, `{"magic":%q,"format":1,"protocol":%d,"program":"lagscope sim","virtual":true}`, magic, protocol))
	for i, e := range events {
		b = appendLine(b, KindEvent, fmt.Appendf(nil, `{"at_ns":%d,"from":"alice","event":%s}`, i*int(time.Second), e))
	}
	rec, err := readAll(bytes.NewReader(b))
	if err != nil || rec.Stop != nil {
		t.Fatalf("read: %v %v", err, rec.Stop)
	}
	return rec
}

// A recording made before machines told incidents holds no incident line
// and a summary without incidents: the report says it cannot tell (JSON
// null), where one made since with no incident says there was none
// (JSON []).
func TestReportBeforeIncidents(t *testing.T) {
	const stall = `{"type":"stall","frame":90,"player":"alice","wait_ms":900,"cause":"bob"}`
	for _, c := range []struct {
		protocol  int
		summary   string
		txt, json string
	}{
		{1, `{"type":"summary","frame":120,"links":[],"players":[],"diagnosis":{"verdict":"","culprit":null,"culprit_link":null,"players":[],"links":[]}}`,
			"\nSession: no incidents recorded: this recording was made by a lagscope from before incidents.\n", `"incidents": null`},
		{2, `{"type":"summary","frame":120,"links":[],"players":[],"diagnosis":{"verdict":"","culprit":null,"culprit_link":null,"players":[],"links":[]},"incidents":[]}`,
			"\nSession: no incidents: nothing held the match back long enough to open one.\n", `"incidents": []`},
	} {
		txt, md, js := writeAll(t, summarize(rawRecording(t, c.protocol, stall, c.summary)))
		if !strings.Contains(txt, c.txt) || !strings.Contains(md, "**Session:**"+strings.TrimPrefix(c.txt, "\nSession:")) || !strings.Contains(string(js), c.json) {
			t.Errorf("protocol %d:\n%s\n%s\n%s", c.protocol, txt, md, js)
		}
	}
}
