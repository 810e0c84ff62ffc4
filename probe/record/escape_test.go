package record

import (
	"bytes"
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"math"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// hostile is a name that attacks a terminal (clear the screen, set the
// window title) with the characters that split a markdown table or open
// HTML, a C1 CSI and a start of a markdown heading.
const hostile = "# \x1b[2J\x1b]0;pwned\x07|<b>x</b>\u009b31m"

// hostileReport holds a hostile string in every string field a report
// prints.
func hostileReport() *report {
	h := func(s string) string { return hostile + s }
	ms := 12.0
	return &report{
		Program: h("prog"), Session: h("sess"), Protocol: 1, LengthMs: 60000, Players: []string{h("a"), h("b")},
		Diagnosis: &diagnosisReport{AtMs: 1000, Frame: 30, Diagnosis: diagnosis.Diagnosis{Verdict: h("verdict"), Culprit: h("b"),
			CulpritLink: &[2]string{h("a"), h("b")},
			Players: []diagnosis.PlayerDiagnosis{{Player: h("a"), AccessRTTMs: math.NaN(), AccessLoss: math.NaN(), JitterMs: math.NaN(),
				ProcessMs: 1, CausedWaitMs: 2}}}},
		Links:    []linkReport{{From: h("a"), To: h("b"), SRTT: spread{Min: &ms, Mean: &ms, P95: &ms, Max: &ms}, Bad: []episode{}}},
		Timing:   []timingRow{{AtMs: 1000, Frame: 30, SendPeriod: 2, LookAhead: 6, Rung: 2, Tier: h("tier"), FPS: 30, Reason: h("reason")}},
		Waits:    []waitRow{{AtMs: 2000, Frame: 60, Player: h("a"), Cause: h("b"), WaitMs: 50}},
		Causes:   []causeRow{{Cause: h("b"), TotalMs: 50, Waits: 1, Of: map[string]float64{h("a"): 50}}},
		Stopped:  h("stopped"),
		Removed:  []removedRow{{AtMs: 3000, Frame: 90, Player: h("b")}},
		Commands: []commandRow{{Player: h("a"), Count: 3, Moved: 1}},
		Loads: []loadReport{{AtMs: 4000, From: h("a"), To: h("b"),
			loadResult: loadResult{Where: &loadtest.WhereAt{Link: vocab.HopLink(h("link")), TTL: 2}, Stopped: ptr(h("halt"))}}},
		Incidents: []feed.Incident{
			{ID: 1, Phase: vocab.IncidentClose, OpenedMs: 1000, ClosedMs: ptr(5000.0), ClosedFrame: ptr(150), Player: ptr(h("a")),
				Cause: vocab.Cause(h("cause")), WaitMs: 3000, FramesWaited: 30, RungFrom: 1, RungPeak: 4,
				Where: &feed.IncidentWhere{Link: vocab.HopLink(h("hop")), TTL: 2, AddedMs: 190}, LoadTest: &feed.LoadPair{From: h("a"), To: h("b")}, Text: h("text")},
			{ID: 2, Phase: vocab.IncidentUpdate, OpenedMs: 7000, Between: &[2]string{h("a"), h("b")}, Cause: vocab.CauseLoss, Loss: ptr(0.05),
				WaitMs: 1000, RungFrom: 1, RungPeak: 1},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// checkTerminalClean fails on any byte or character that could steer a
// terminal: ESC and every other control but the line ends, C1 controls,
// format characters, text that is not UTF-8.
func checkTerminalClean(t *testing.T, what, out string) {
	t.Helper()
	if strings.IndexByte(out, 0x1b) >= 0 {
		t.Fatalf("%s holds an ESC byte:\n%q", what, out)
	}
	if !utf8.ValidString(out) {
		t.Fatalf("%s is not UTF-8", what)
	}
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("%s holds a raw %U:\n%q", what, r, out)
		}
	}
}

// unescapedPipes counts the |s a markdown table takes as cell borders.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

// checkMarkdownClean: clean for a terminal, no raw < or > anywhere, and
// every row of a table has as many cells as the table's head.
func checkMarkdownClean(t *testing.T, what, out string) {
	t.Helper()
	checkTerminalClean(t, what, out)
	if strings.ContainsAny(out, "<>") {
		t.Fatalf("%s holds a raw < or >:\n%s", what, out)
	}
	head := 0 // borders of the current table's head, 0 outside a table
	for i, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			head = 0
			continue
		}
		n := unescapedPipes(line)
		if head == 0 {
			head = n
		} else if n != head {
			t.Fatalf("%s line %d has %d cell borders, its table's head %d:\n%s", what, i+1, n, head, line)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "- #") {
			t.Fatalf("%s: a name started a heading: %q", what, line)
		}
	}
}

// Every string a report prints from outside
// is escaped at the sink — names, session, program, tier, reason, the
// stop error, causes — and still shown (escaped, not dropped).
func TestReportEscapesEveryOutsideString(t *testing.T) {
	r := hostileReport()
	var txt, md bytes.Buffer
	if err := r.write(&txt, FormatText); err != nil {
		t.Fatal(err)
	}
	if err := r.write(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	checkTerminalClean(t, "text report", txt.String())
	checkMarkdownClean(t, "markdown report", md.String())
	// Each field is there, visibly escaped: a renderer that dropped the
	// text would pass the checks above too.
	for _, field := range []string{"prog", "sess", "verdict", "tier", "reason", "stopped", "link", "halt", "cause", "hop"} {
		if want := `\x1b]0;pwned\a|<b>x</b>\u009b31m` + field; !strings.Contains(txt.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
		if want := `\\x1b\]0;pwned\\a\|&lt;b&gt;x&lt;/b&gt;\\u009b31m` + field; !strings.Contains(md.String(), want) {
			t.Errorf("markdown report lacks %q", want)
		}
	}
	// a and b: link, waits, causes, commands, removed, diagnosis, both
	// incidents.
	if n := strings.Count(txt.String(), `pwned\a|<b>x</b>\u009b31ma`); n < 8 {
		t.Errorf("text report shows player a %d times, want every line that names it", n)
	}
}

// The escape scenario as a file: a recording written by the Writer with a
// valid checksum on every record, whose names and message text hold
// ESC/OSC bytes and | < >. Whatever the reader keeps of it, no ESC byte and
// no raw control reaches the text report, and the markdown keeps its
// tables whole with no raw < or >.
func TestReportOfCraftedRecording(t *testing.T) {
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "lagscope sim", Session: "esc.json", Virtual: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	evil, peer := hostile, "bob|<i>"
	lk := func(from, to string) feed.LinkView {
		return feed.LinkView{Peer: to, Link: feed.Link{From: from, To: to, State: feed.LinkMeasured, RTTKnown: true,
			SRTT: units.FromMillis(50), RTO: time.Second, ConnTimeout: 10 * time.Second, LossKnown: true, Sent: 10}}
	}
	for s := range 3 {
		at := time.Duration(s) * time.Second
		for _, v := range []feed.View{
			{At: at, Self: evil, Started: true, Links: []feed.LinkView{lk(evil, peer)}},
			{At: at, Self: peer, Started: true, Links: []feed.LinkView{lk(peer, evil)}},
		} {
			if err := w.View(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.event(time.Second, evil, &feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 30}, Text: "hi \x1b]0;pwned\x07 <b>|</b>"})
	w.event(time.Second, evil, &feed.TimingEvent{Header: feed.Header{Type: vocab.EventTiming, Frame: 30}, SendPeriod: 2, LookAhead: 6, Rung: 2,
		Tier: "Fast\x1b[31m", FPS: 30, Reason: "better\x1b]0;x\x07|<b>"})
	w.event(2*time.Second, peer, &feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: 60}, Player: peer, WaitMs: 70, Cause: evil})
	w.event(2*time.Second, evil, &feed.RemovedEvent{Header: feed.Header{Type: vocab.EventRemoved, Frame: 61}, Player: evil})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(rec)
	var txt, md bytes.Buffer
	if err := r.write(&txt, FormatText); err != nil {
		t.Fatal(err)
	}
	if err := r.write(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	checkTerminalClean(t, "text report", txt.String())
	checkMarkdownClean(t, "markdown report", md.String())
	if !strings.Contains(txt.String(), "pwned") && r.Stopped == "" {
		t.Fatalf("the hostile records left no trace, not even a stop:\n%s", txt.String())
	}
}

// The JSON report is JSON whatever the names hold: encoding/json writes
// control characters as \u escapes and < > as \u003c \u003e, and the
// names read back unchanged.
func TestReportJSONEscapes(t *testing.T) {
	r := hostileReport()
	var out bytes.Buffer
	if err := r.write(&out, FormatJSON); err != nil {
		t.Fatal(err)
	}
	checkTerminalClean(t, "json report", out.String())
	var back report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("json report does not parse: %v", err)
	}
	if back.Session != r.Session || back.Links[0].From != r.Links[0].From || back.Timing[0].Reason != r.Timing[0].Reason {
		t.Fatalf("names changed on the way: %q %q %q", back.Session, back.Links[0].From, back.Timing[0].Reason)
	}
}

// FuzzReportAndReplay: whatever a file holds, what the reader keeps of it
// makes a report that is clean for a terminal (text), keeps its markdown
// tables whole with no raw < or >, is valid JSON, and replays without a
// panic into matrices of seated players only.
func FuzzReportAndReplay(f *testing.F) {
	b, _ := sample(f)
	f.Add(b)
	var buf bytes.Buffer
	w, _ := newWriter(&buf, Header{Program: "p", Virtual: true}, time.Now)
	w.View(feed.View{At: time.Second, Self: "a|<b>", Started: true, FPS: 30, Speed: 30, InForce: rungs.RungTiming(2), Target: rungs.RungTiming(2),
		Players: []feed.PlayerView{{Name: "a|<b>", Self: true}, {Name: "c"}}})
	w.event(time.Second, "a|<b>", &feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: 3}, Player: "c", WaitMs: 5, Cause: "a|<b>"})
	w.event(time.Second, "a|<b>", pathEvent("a|<b>", pathSample("c")))
	w.event(time.Second, "a|<b>", pathEvent("a|<b>", feed.PathView{Peer: "<c>", Why: "no <error> queue | here"}))
	refused := "peer refused"
	w.event(time.Second, "a|<b>", &feed.LoadEvent{Header: feed.Header{Type: vocab.EventLoad}, From: "a|<b>", To: "c",
		Result: loadtest.Result{Stopped: &refused, Where: &loadtest.WhereAt{Link: "peer", TTL: 3}}})
	w.event(time.Second, "a|<b>", &feed.IncidentEvent{Header: feed.Header{Type: vocab.EventIncident, Frame: 3}, Incident: feed.Incident{ID: 1,
		Phase: vocab.IncidentOpen, OpenedMs: 500, Between: &[2]string{"a|<b>", "c"}, Cause: vocab.CauseLatency, AddedMs: ptr(120.0), WaitMs: 300,
		RungFrom: 1, RungPeak: 2, Where: &feed.IncidentWhere{Link: vocab.HopLAN, TTL: 1, AddedMs: 110}, Text: "a|<b> and c <wait>"}})
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := readAll(bytes.NewReader(data))
		if err != nil {
			return
		}
		r := summarize(rec)
		var txt, md, js bytes.Buffer
		if err := r.write(&txt, FormatText); err != nil {
			t.Fatal(err)
		}
		if err := r.write(&md, FormatMarkdown); err != nil {
			t.Fatal(err)
		}
		if err := r.write(&js, FormatJSON); err != nil {
			t.Fatal(err)
		}
		checkTerminalClean(t, "text report", txt.String())
		checkMarkdownClean(t, "markdown report", md.String())
		if !json.Valid(js.Bytes()) {
			t.Fatalf("json report is not JSON:\n%s", js.String())
		}
		c := newCursor(rec, "")
		for _, at := range []time.Duration{0, c.End() / 2, c.End()} {
			v := c.advance(at).View
			for _, row := range v.Matrix.Players {
				if p := playerOf(v.Players, row.Name); p == nil || p.Observer || p.Removed {
					t.Fatalf("matrix row %q is no seated player of %+v", row.Name, v.Players)
				}
			}
		}
	})
}

func playerOf(ps []feed.PlayerView, name string) *feed.PlayerView {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}
