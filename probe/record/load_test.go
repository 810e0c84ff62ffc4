package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
)

// completeLoad is a finished test whose upload bloats: the line of the
// load event's documented example.
const completeLoad = `{"type":"load","t_ms":90000,"from":"ada","to":"bob","idle_rtt_ms":12.1,` +
	`"upload":{"added_ms":368.0,"p90_added_ms":420.5,"mbps":9.6,"loss":0.002,"grade":"D","capped":false},` +
	`"download":{"added_ms":8.2,"p90_added_ms":11.0,"mbps":48.0,"loss":0.0,"grade":"A","capped":true},` +
	`"both":{"added_ms":371.0,"p90_added_ms":430.0,"loss":0.003},` +
	`"where":{"link":"uplink","ttl":2,"added_ms":360.5},` +
	`"cost":{"frames_late":4,"max_wait_ms":120,"rung_from":1,"rung_to":4,"for_ms":40000},"stopped":null}`

// refusedLoad is a test the peer refused: nothing measured.
const refusedLoad = `{"type":"load","t_ms":150000,"from":"ada","to":"cyd","idle_rtt_ms":null,"upload":null,"download":null,` +
	`"both":null,"where":null,"cost":null,"stopped":"peer refused"}`

func loadEventOf(t *testing.T, line string) *feed.LoadEvent {
	t.Helper()
	var e feed.LoadEvent
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return &e
}

// loadRecording records the two tests as ada's machine publishes them,
// between two of its Views.
func loadRecording(t *testing.T) *Recording {
	t.Helper()
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "lagscope host", Self: "ada"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	w.Observe(feed.Update{View: feed.View{At: 89 * time.Second, Session: "s", Self: "ada"}})
	w.Observe(feed.Update{View: feed.View{At: 90 * time.Second, Session: "s", Self: "ada"}, Events: []feed.Event{loadEventOf(t, completeLoad)}})
	w.Observe(feed.Update{View: feed.View{At: 150 * time.Second, Session: "s", Self: "ada"}, Events: []feed.Event{loadEventOf(t, refusedLoad)}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil {
		t.Fatalf("read: %v %v", err, rec.Stop)
	}
	return rec
}

// Load events are recorded, read back as their probe type with the
// figures they carried, replayed by `replay --json` byte for byte as the
// sink printed them, and handed to a replay's front end.
func TestLoadRecordRoundTripAndReplay(t *testing.T) {
	rec := loadRecording(t)
	var events []*feed.LoadEvent
	for _, r := range rec.Records {
		if e, ok := r.Event.(*feed.LoadEvent); ok {
			events = append(events, e)
		}
	}
	if len(events) != 2 {
		t.Fatalf("%d load events read back", len(events))
	}
	for i, line := range []string{completeLoad, refusedLoad} {
		if want := loadEventOf(t, line); !reflect.DeepEqual(events[i], want) {
			t.Errorf("event %d read back\n%+v\nwant\n%+v", i, events[i], want)
		}
	}
	var nd bytes.Buffer
	if err := rec.WriteNDJSON(&nd); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(nd.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("replay --json printed %d lines:\n%s", len(lines), nd.String())
	}
	for i, line := range lines {
		// What the sink printed is what the event marshals to.
		want, _ := json.Marshal(events[i])
		if line != string(want) {
			t.Errorf("replayed line %d\n%s\nwant\n%s", i, line, want)
		}
	}
	c := newCursor(rec, "")
	u := c.advance(c.End())
	n := 0
	for _, e := range u.Events {
		if l, ok := e.(*feed.LoadEvent); ok {
			n++
			if l.From != "ada" || (l.To != "bob" && l.To != "cyd") {
				t.Errorf("replayed test %s → %s", l.From, l.To)
			}
		}
	}
	if n != 2 {
		t.Fatalf("the replay handed on %d load events, want 2", n)
	}
}

// A load event that no tester writes is damage, never a record.
func TestImplausibleLoadIsDamage(t *testing.T) {
	event := func(old, new string) string {
		return `{"at_ns":1,"from":"ada","event":` + strings.Replace(completeLoad, old, new, 1) + `}`
	}
	cases := []struct{ name, body, want string }{
		{"against itself", event(`"to":"bob"`, `"to":"ada"`), "against itself"},
		{"bad from", event(`"from":"ada"`, `"from":"\u001b[2J"`), "load from"},
		{"empty to", event(`"to":"bob"`, `"to":""`), "load to"},
		{"negative idle", event(`"idle_rtt_ms":12.1`, `"idle_rtt_ms":-1`), "negative"},
		{"absurd idle", event(`"idle_rtt_ms":12.1`, `"idle_rtt_ms":1e300`), "idle_rtt_ms"},
		{"p90 below median", event(`"p90_added_ms":420.5`, `"p90_added_ms":100`), "p90_added_ms 100 below"},
		{"absurd both", event(`"added_ms":371.0`, `"added_ms":1e300`), "both added_ms"},
		{"loss above 1", event(`"loss":0.002`, `"loss":2`), "loss outside"},
		{"unknown grade", event(`"grade":"D"`, `"grade":"Z"`), "unknown grade"},
		{"absurd throughput", event(`"mbps":48.0`, `"mbps":1e9`), "download mbps"},
		{"unknown stop", event(`"stopped":null`, `"stopped":"\u001b]0;x\u0007"`), "stop reason"},
		{"where on no link", event(`"link":"uplink"`, `"link":"moon"`), `"moon"`},
		{"where at ttl 0", event(`"ttl":2`, `"ttl":0`), "ttl 0"},
		{"rung 0", event(`"rung_from":1`, `"rung_from":0`), "rung_from 0"},
		{"rung 11", event(`"rung_to":4`, `"rung_to":11`), "rung_to 11"},
		{"negative frames late", event(`"frames_late":4`, `"frames_late":-4`), "frames_late -4"},
		{"absurd wait", event(`"max_wait_ms":120`, `"max_wait_ms":1e300`), "max_wait_ms"},
	}
	for _, c := range cases {
		b := append(headerLine(feed.ProtocolVersion), appendLine(nil, KindEvent, []byte(c.body))...)
		rec, err := readAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch s := rec.Stop; {
		case s == nil:
			t.Errorf("%s: read without a word", c.name)
		case !errors.Is(s, errCorrupt) || len(rec.Records) != 0:
			t.Errorf("%s: stop %v with %d records", c.name, s, len(rec.Records))
		case !strings.Contains(s.Error(), c.want) || strings.ContainsAny(s.Error(), "\n\x1b"):
			t.Errorf("%s: %q, want one clean line with %q", c.name, s.Error(), c.want)
		}
	}
}

// The report lists each load test as a table, in text and markdown —
// unknown figures as —, a refused test with its reason — and its JSON
// carries the tests as the events wrote them.
func TestReportLoadTable(t *testing.T) {
	r := summarize(loadRecording(t))
	if len(r.Loads) != 2 || r.Loads[0].To != "bob" || r.Loads[1].To != "cyd" || r.Loads[0].AtMs != 90000 {
		t.Fatalf("load tests %+v", r.Loads)
	}
	var text, md, js bytes.Buffer
	for _, w := range []struct {
		b      *bytes.Buffer
		format string
	}{{&text, FormatText}, {&md, FormatMarkdown}, {&js, FormatJSON}} {
		if err := r.write(w.b, w.format); err != nil {
			t.Fatal(err)
		}
	}
	wantText := "\nLoad tests (round trip added under load, median/p90 ms, and its grade; Mbit/s up/down; loss of the load up/down/both)\n" +
		"  time   test       idle ms  upload         download           both         Mbit/s    loss            where                      cost                                              stopped\n" +
		"  01:30  ada → bob  12.1     368.0/420.5 D  8.2/11.0 A capped  371.0/430.0  9.6/48.0  0.2%/0.0%/0.3%  hop 2 (uplink), +360.5 ms  4 frames late, max wait 120 ms, rung 1→4 for 40s  no\n" +
		"  02:30  ada → cyd  —        —              —                  —            —         —               —                          —                                                 peer refused\n"
	if !strings.Contains(text.String(), wantText) {
		t.Errorf("text report lacks\n%s\nin\n%s", wantText, text.String())
	}
	wantMD := "\n**Load tests**: round trip added under load, median/p90 ms, and its grade; Mbit/s up/down; loss of the load up/down/both.\n\n" +
		"| time | test | idle ms | upload | download | both | Mbit/s | loss | where | cost | stopped |\n" +
		"| --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- |\n" +
		"| 01:30 | ada → bob | 12.1 | 368.0/420.5 D | 8.2/11.0 A capped | 371.0/430.0 | 9.6/48.0 | 0.2%/0.0%/0.3% | hop 2 (uplink), +360.5 ms | 4 frames late, max wait 120 ms, rung 1→4 for 40s | no |\n" +
		"| 02:30 | ada → cyd | — | — | — | — | — | — | — | — | peer refused |\n"
	if !strings.Contains(md.String(), wantMD) {
		t.Errorf("markdown report lacks\n%s\nin\n%s", wantMD, md.String())
	}
	var back struct {
		Loads []loadReport `json:"load_tests"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Loads, r.Loads) {
		t.Fatalf("JSON load tests\n%+v\nwant\n%+v", back.Loads, r.Loads)
	}
}

// A report lists the latest tests only, and says how many it left out; a
// rung kept and a single frame late read as such.
func TestReportLoadTableTrims(t *testing.T) {
	s := &summary{r: &report{}}
	e := loadEventOf(t, completeLoad)
	e.Result.Cost.FramesLate, e.Result.Cost.RungTo = 1, 1
	for i := range reportLoadRows + 3 {
		s.load(time.Duration(i)*time.Minute, e)
	}
	s.finishLoads()
	if len(s.r.Loads) != reportLoadRows || s.r.LoadOmitted != 3 || s.r.Loads[0].AtMs != 3*60000 {
		t.Fatalf("%d tests kept from %v ms, %d left out", len(s.r.Loads), s.r.Loads[0].AtMs, s.r.LoadOmitted)
	}
	var text, md bytes.Buffer
	s.r.textLoads(&text)
	s.r.markdownLoads(&md)
	if !strings.Contains(text.String(), "… 3 earlier tests left out") || !strings.Contains(text.String(), "1 frame late, max wait 120 ms, rung 1 kept") {
		t.Errorf("text:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "**Load tests** (last 12; 3 earlier left out)") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// Every machine prints a test's load line, so a recording of several
// machines holds it from each: the report lists the test once. The same
// result a minute later is another test.
func TestReportLoadOncePerTest(t *testing.T) {
	s := &summary{r: &report{}}
	e := loadEventOf(t, completeLoad)
	for _, at := range []time.Duration{90 * time.Second, 90*time.Second + 150*time.Millisecond, 91 * time.Second} {
		s.load(at, e) // the tester's, the peer's, a watcher's
	}
	other := loadEventOf(t, completeLoad)
	other.To = "cyd"
	s.load(92*time.Second, other)
	s.load(150*time.Second, e)
	s.finishLoads()
	if len(s.r.Loads) != 3 || s.r.Loads[0].AtMs != 90000 || s.r.Loads[1].To != "cyd" || s.r.Loads[2].AtMs != 150000 {
		t.Fatalf("load tests %+v, want ada's to bob at 90 s, to cyd, and to bob again at 150 s", s.r.Loads)
	}
}

// Names in a load test reach the text table escaped for a terminal and the
// markdown table escaped for a cell.
func TestReportLoadEscapesNames(t *testing.T) {
	e := loadEventOf(t, completeLoad)
	e.From, e.To = hostile+"a", "c|d"
	s := &summary{r: &report{}}
	s.load(time.Second, e)
	s.finishLoads()
	var txt, md bytes.Buffer
	s.r.textLoads(&txt)
	s.r.markdownLoads(&md)
	checkTerminalClean(t, "text load table", txt.String())
	checkMarkdownClean(t, "markdown load table", md.String())
	if !strings.Contains(txt.String(), `pwned\a|<b>x</b>\u009b31ma → c|d`) || !strings.Contains(md.String(), `\|&lt;b&gt;x&lt;/b&gt;\\u009b31ma → c\|d`) {
		t.Fatalf("names not shown escaped:\n%s\n%s", txt.String(), md.String())
	}
}

// A View's load testing is recorded and read back as it was — the test
// running, the latest results, the cap — and one no machine holds is
// damage.
func TestViewLoadRecordRoundTrip(t *testing.T) {
	lv := &feed.LoadView{
		Running: &feed.LoadRun{Peer: "cyd", Tester: true, Progress: loadtest.Progress{Tester: true, Phase: "upload", Began: 95 * time.Second,
			Phases: []loadtest.PhaseProgress{{Name: "idle", Began: 95 * time.Second, Samples: 200, Median: 12 * time.Millisecond}}}},
		Results: []feed.LoadEvent{*loadEventOf(t, completeLoad)},
		Cap:     50e6, NextAt: 150 * time.Second,
	}
	v := feed.View{At: 100 * time.Second, Session: "s", Self: "ada", Load: lv}
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "test"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.View(v); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil || len(rec.Records) != 1 {
		t.Fatalf("read: %v %v %+v", err, rec.Stop, rec.Records)
	}
	if got := rec.Records[0].View.Load; !reflect.DeepEqual(got, lv) {
		t.Fatalf("load view read back\n%+v\nwant\n%+v", got, lv)
	}
	view := func(load string) string { return `{"at_ns":1,"from":"ada","view":{"Self":"ada","Load":` + load + `}}` }
	for _, c := range []struct{ name, body, want string }{
		{"result against itself", view(`{"Results":[` + strings.Replace(completeLoad, `"to":"bob"`, `"to":"ada"`, 1) + `]}`), "against itself"},
		{"running peer", view(`{"Running":{"Peer":"","Progress":{"Phase":"idle"}}}`), "load peer"},
		{"phase with escapes", view(`{"Running":{"Peer":"bob","Progress":{"Phase":"\u001b[2J"}}}`), "load phase"},
		{"negative samples", view(`{"Running":{"Peer":"bob","Progress":{"Phase":"idle","Phases":[{"Name":"idle","Samples":-1}]}}}`), "samples -1"},
		{"unknown phase", view(`{"Running":{"Peer":"bob","Progress":{"Phase":"sideways"}}}`), "load phase"},
		{"negative cap", view(`{"Cap":-5}`), "load cap -5"},
		{"next at before the start", view(`{"NextAt":-1}`), "load next at"},
	} {
		b := append(headerLine(feed.ProtocolVersion), appendLine(nil, KindView, []byte(c.body))...)
		rec, err := readAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch s := rec.Stop; {
		case s == nil:
			t.Errorf("%s: read without a word", c.name)
		case !errors.Is(s, errCorrupt) || len(rec.Records) != 0:
			t.Errorf("%s: stop %v with %d records", c.name, s, len(rec.Records))
		case !strings.Contains(s.Error(), c.want) || strings.ContainsAny(s.Error(), "\n\x1b"):
			t.Errorf("%s: %q, want one clean line with %q", c.name, s.Error(), c.want)
		}
	}
}
