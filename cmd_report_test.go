package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/vocab"
)

func recordScenario(t *testing.T, name string) string {
	t.Helper()
	file, _ := recordedScenario(t, name)
	return file
}

// recordedScenario is recordScenario's file and what the sim printed
// while it recorded.
func recordedScenario(t *testing.T, name string) (file string, printed []byte) {
	t.Helper()
	// The sim is deterministic: a scenario is recorded once per test
	// binary, and the tests that read the recording share the file,
	// which none of them changes.
	c, _ := recordings.LoadOrStore(name, &recording{})
	r := c.(*recording)
	r.once.Do(func() {
		dir, err := os.MkdirTemp("", "lagscope-rec-")
		if err != nil {
			r.err = err
			return
		}
		recordingDirs.Store(dir, true)
		file := filepath.Join(dir, "run.lsrec")
		var out, errb bytes.Buffer
		if code := run([]string{"sim", "--record", file, filepath.Join("testdata", "scenarios", name)}, &out, &errb); code != 0 {
			r.err = fmt.Errorf("sim: %s", errb.String())
			return
		}
		r.file, r.printed = file, out.Bytes()
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.file, r.printed
}

var (
	recordings    sync.Map // scenario name → *recording
	recordingDirs sync.Map // their directories, removed by TestMain
)

type recording struct {
	once    sync.Once
	file    string
	printed []byte
	err     error
}

// reportDoc is the part of `lagscope report --format json` the tests
// read, under the keys the report prints.
type reportDoc struct {
	Protocol int          `json:"protocol"`
	Players  []string     `json:"players"`
	Stopped  string       `json:"stopped"`
	Links    []reportLink `json:"links"`
	Timing   []struct {
		SendPeriod int    `json:"send_period"`
		LookAhead  int    `json:"look_ahead"`
		Tier       string `json:"tier"`
		Reason     string `json:"reason"`
	} `json:"timing"`
	Waits []struct {
		Player string  `json:"player"`
		Cause  string  `json:"cause"`
		WaitMs float64 `json:"wait_ms"`
	} `json:"longest_waits"`
	Causes []struct {
		Cause   string  `json:"cause"`
		TotalMs float64 `json:"total_ms"`
	} `json:"causes"`
	Removed []struct {
		Player string `json:"player"`
	} `json:"removed"`
	Commands []struct {
		Player string `json:"player"`
		Count  int    `json:"count"`
		Moved  int    `json:"moved"`
	} `json:"commands"`
	Loads []struct {
		From    string    `json:"from"`
		To      string    `json:"to"`
		Upload  *struct{} `json:"upload"`
		Stopped *string   `json:"stopped"`
	} `json:"load_tests"`
}

// reportLink is one entry of the report's "links".
type reportLink struct {
	From string `json:"from"`
	To   string `json:"to"`
	Sent uint64 `json:"sent"`
	SRTT struct {
		Min  *float64 `json:"min"`
		Mean *float64 `json:"mean"`
		P95  *float64 `json:"p95"`
		Max  *float64 `json:"max"`
	} `json:"srtt_ms"`
	ResendShare  *float64 `json:"resend_share"`
	InboundLoss  *float64 `json:"inbound_loss"`
	OutboundLoss *float64 `json:"outbound_loss"`
	Bad          []struct {
		FromMs float64 `json:"from_ms"`
		ToMs   float64 `json:"to_ms"`
	} `json:"bad"`
}

func reportJSON(t *testing.T, file string) reportDoc {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--format", "json", file}, &out, &errb); code != 0 {
		t.Fatalf("report: exit %d %s", code, errb.String())
	}
	var r reportDoc
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("report json: %v", err)
	}
	return r
}

func link(r reportDoc, from, to string) reportLink {
	for _, l := range r.Links {
		if l.From == from && l.To == to {
			return l
		}
	}
	return reportLink{}
}

// handoff.json: bob–carol at 400 ms until frame 400, 60 ms elsewhere;
// alice leaves at frame 300. The report finds the slow link's round trips,
// the timing history with its tiers (S17) and who left.
func TestReportHandoff_S17(t *testing.T) {
	r := reportJSON(t, recordScenario(t, "handoff.json"))
	if len(r.Links) != 6 || len(r.Players) != 3 || r.Protocol == 0 {
		t.Fatalf("%d links, players %v", len(r.Links), r.Players)
	}
	slow := link(r, "bob", "carol")
	if slow.SRTT.Max == nil || math.Abs(*slow.SRTT.Max-400) > 5 || math.Abs(*slow.SRTT.Min-60) > 5 || *slow.SRTT.P95 < 300 {
		t.Fatalf("bob→carol SRTT %+v", slow.SRTT)
	}
	fast := link(r, "alice", "bob")
	if math.Abs(*fast.SRTT.Mean-60) > 3 || fast.ResendShare == nil || *fast.ResendShare != 0 || fast.Sent == 0 {
		t.Fatalf("alice→bob %+v", fast)
	}
	if len(r.Timing) < 2 || r.Timing[0].Reason != "initial" || r.Timing[0].Tier != "Normal" || r.Timing[len(r.Timing)-1].Tier != "Fast" {
		t.Fatalf("timing %+v", r.Timing)
	}
	if len(r.Removed) != 1 || r.Removed[0].Player != "alice" {
		t.Fatalf("removed %+v", r.Removed)
	}
	if len(r.Waits) == 0 || r.Waits[0].WaitMs < r.Waits[len(r.Waits)-1].WaitMs || len(r.Causes) == 0 {
		t.Fatalf("waits %+v causes %+v", r.Waits, r.Causes)
	}
}

// lossy.json loses 5% of datagrams each way: the inbound and outbound
// shares read about 5%, and the resend share reads higher (L8).
func TestReportLossShares_L8(t *testing.T) {
	r := reportJSON(t, recordScenario(t, "lossy.json"))
	l := link(r, "alice", "bob")
	if l.InboundLoss == nil || l.OutboundLoss == nil || l.ResendShare == nil {
		t.Fatalf("shares missing: %+v", l)
	}
	if math.Abs(*l.InboundLoss-0.05) > 0.015 || math.Abs(*l.OutboundLoss-0.05) > 0.015 || *l.ResendShare <= *l.InboundLoss {
		t.Fatalf("in %.3f out %.3f resend %.3f", *l.InboundLoss, *l.OutboundLoss, *l.ResendShare)
	}
}

// vanish.json: alice disappears without a word at frame 700; the links to
// her go bad (T11) until her removal, and the report shows the episode.
func TestReportBadEpisodes_T11(t *testing.T) {
	r := reportJSON(t, recordScenario(t, "vanish.json"))
	l := link(r, "bob", "alice")
	if len(l.Bad) != 1 || l.Bad[0].ToMs <= l.Bad[0].FromMs {
		t.Fatalf("bob→alice bad episodes %+v", l.Bad)
	}
	if len(link(r, "bob", "dave").Bad) != 0 {
		t.Fatal("a healthy link has a bad episode")
	}
}

// A report is short enough to paste into a chat: the handoff scenario's
// (three players, six links, four timing changes, a leave) fits in 45
// lines, in text and in markdown, its session line included.
func TestReportFormatsShort(t *testing.T) {
	file := recordScenario(t, "handoff.json")
	for _, f := range []string{"text", "markdown"} {
		var out, errb bytes.Buffer
		if code := run([]string{"report", file, "--format", f}, &out, &errb); code != 0 {
			t.Fatalf("%s: %s", f, errb.String())
		}
		s := out.String()
		if n := strings.Count(s, "\n"); n > 45 || !strings.Contains(s, "bob → carol") || !strings.Contains(s, "Normal") {
			t.Fatalf("%s report (%d lines):\n%s", f, n, s)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"report", file, "--format", "html"}, &out, &errb); code != exitUsage || out.Len() != 0 {
		t.Fatalf("bad format: exit %d", code)
	}
}

// requirementNumber is a SPEC item as a report could cite it: T6, S13, L8a.
var requirementNumber = regexp.MustCompile(`\b[TSLQ][0-9]{1,2}[a-d]?\b`)

// A report is for players, not for whoever wrote the SPEC — no
// requirement number in the text or markdown report of the committed
// golden recording or of recordings of scenarios that exercise every
// section (moved commands, removals, bad links, loss, slow processing).
func TestReportNoRequirementNumbers(t *testing.T) {
	files := []string{filepath.Join("testdata", "golden", "handoff.lsrec")}
	for _, sc := range []string{"handoff.json", "vanish.json", "lossy.json", "slow_cpu.json", "worsening.json"} {
		files = append(files, recordScenario(t, sc))
	}
	for _, file := range files {
		for _, f := range []string{"text", "markdown"} {
			var out, errb bytes.Buffer
			if code := run([]string{"report", file, "--format", f}, &out, &errb); code != 0 {
				t.Fatalf("report %s --format %s: exit %d %s", file, f, code, errb.String())
			}
			if out.Len() == 0 {
				t.Fatalf("report %s --format %s is empty", file, f)
			}
			for i, line := range strings.Split(out.String(), "\n") {
				if m := requirementNumber.FindString(line); m != "" {
					t.Errorf("report %s --format %s line %d cites %s: %s", filepath.Base(file), f, i+1, m, line)
				}
			}
		}
	}
}

// A live recording of ada's machine with two load tests, one complete and
// one the peer refused, as its sink published them: the report lists both
// in its "Load tests" table, in text and in markdown, unknown figures as —.
func TestReportLoadTests(t *testing.T) {
	file := filepath.Join(t.TempDir(), "load.lsrec")
	w, err := record.Create(file, record.Header{Program: "lagscope host", Self: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		at   time.Duration
		line string
	}{
		{90 * time.Second, `{"type":"load","t_ms":90000,"from":"ada","to":"bob","idle_rtt_ms":12.1,` +
			`"upload":{"added_ms":368.0,"p90_added_ms":420.5,"mbps":9.6,"loss":0.002,"grade":"D","capped":false},` +
			`"download":{"added_ms":8.2,"p90_added_ms":11.0,"mbps":48.0,"loss":0.0,"grade":"A+","capped":false},` +
			`"both":{"added_ms":371.0,"p90_added_ms":430.0,"loss":0.003},"where":{"link":"uplink","ttl":2,"added_ms":360.5},` +
			`"cost":{"frames_late":4,"max_wait_ms":120,"rung_from":1,"rung_to":4,"for_ms":40000},"stopped":null}`},
		{155 * time.Second, `{"type":"load","t_ms":155000,"from":"ada","to":"cyd","idle_rtt_ms":null,"upload":null,"download":null,` +
			`"both":null,"where":null,"cost":null,"stopped":"peer refused"}`},
	} {
		var e feed.LoadEvent
		if err := json.Unmarshal([]byte(x.line), &e); err != nil {
			t.Fatal(err)
		}
		w.Observe(feed.Update{View: feed.View{At: x.at, Session: "f41de538", Self: "ada"}, Events: []feed.Event{&e}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"text": "\nLoad tests (round trip added under load, median/p90 ms, and its grade; Mbit/s up/down; loss of the load up/down/both)\n" +
			"  time   test       idle ms  upload         download     both         Mbit/s    loss            where                      cost                                              stopped\n" +
			"  01:30  ada → bob  12.1     368.0/420.5 D  8.2/11.0 A+  371.0/430.0  9.6/48.0  0.2%/0.0%/0.3%  hop 2 (uplink), +360.5 ms  4 frames late, max wait 120 ms, rung 1→4 for 40s  no\n" +
			"  02:35  ada → cyd  —        —              —            —            —         —               —                          —                                                 peer refused\n\n",
		"markdown": "\n**Load tests**: round trip added under load, median/p90 ms, and its grade; Mbit/s up/down; loss of the load up/down/both.\n\n" +
			"| time | test | idle ms | upload | download | both | Mbit/s | loss | where | cost | stopped |\n" +
			"| --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- |\n" +
			"| 01:30 | ada → bob | 12.1 | 368.0/420.5 D | 8.2/11.0 A+ | 371.0/430.0 | 9.6/48.0 | 0.2%/0.0%/0.3% | hop 2 (uplink), +360.5 ms | 4 frames late, max wait 120 ms, rung 1→4 for 40s | no |\n" +
			"| 02:35 | ada → cyd | — | — | — | — | — | — | — | — | peer refused |\n\n",
	}
	for _, f := range []string{"text", "markdown"} {
		var out, errb bytes.Buffer
		if code := run([]string{"report", file, "--format", f}, &out, &errb); code != 0 {
			t.Fatalf("report --format %s: exit %d %s", f, code, errb.String())
		}
		if !strings.Contains(out.String(), want[f]) {
			t.Errorf("report --format %s lacks\n%s\nin\n%s", f, want[f], out.String())
		}
		if m := requirementNumber.FindString(out.String()); m != "" {
			t.Errorf("report --format %s cites %s", f, m)
		}
	}
	r := reportJSON(t, file)
	if len(r.Loads) != 2 || r.Loads[0].To != "bob" || r.Loads[1].Stopped == nil || *r.Loads[1].Stopped != "peer refused" || r.Loads[1].Upload != nil {
		t.Fatalf("JSON load tests %+v", r.Loads)
	}
}

// demoRecording plays the demo in virtual time (its own defaults: ada's
// spike from 00:10 to 00:30) for length and records your machine as `demo
// --record` does, through the recorder's sink; it returns the file and
// the incident lines the demo published, in order.
func demoRecording(t *testing.T, length time.Duration) (string, []*feed.IncidentEvent) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "demo.lsrec")
	w, err := record.Create(file, record.Header{Program: "lagscope demo", Self: "you", Started: "2026-12-01T18:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	var published []*feed.IncidentEvent
	for _, u := range playDemo(t, length, 100*time.Millisecond) { // readme_test.go
		w.Observe(u)
		for _, e := range u.Events {
			if inc, ok := e.(*feed.IncidentEvent); ok {
				published = append(published, inc)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return file, published
}

// adaLine matches the incident of ada's in a report's list: its time
// range, its cause and its cost.
var adaLine = regexp.MustCompile(`(?m)^(?:  |- )(\d\d):(\d\d)–(\d\d):(\d\d)( \(open at the cut\))?, ada: latency \(round trips up to \d+ ms above normal\); where: not known; cost (at least )?(\d+\.\d) s of waiting`)

// The report of a recorded 60 s demo tells the session's story first:
// the recording keeps every incident line the demo published, byte for
// byte; the headline (text and markdown) is one incident, ada's, with
// the time range and cost its close line gives, before the state at the
// end — which comes under its own heading, so neither a verdict about
// what happens next nor "Culprit: nobody" heads a session with ada's
// spike; `--format json` has the incident. Cut in the middle of ada's
// incident (at 27 s, inside a record), the same recording reports it
// open at the cut with what it had cost by its latest line. The text and
// markdown say when on the session's clock.
func TestReportTellsTheDemosIncident(t *testing.T) {
	file, published := demoRecording(t, 60*time.Second)
	var closeLine *feed.IncidentEvent
	for _, inc := range published {
		if inc.Phase == vocab.IncidentClose {
			closeLine = inc
		}
	}
	if closeLine == nil || closeLine.Player == nil || *closeLine.Player != "ada" || len(published) < 3 {
		t.Fatalf("the demo published %d incident lines, no close of ada's among them", len(published))
	}
	rec, err := record.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	cut := int64(-1)
	for _, x := range rec.Records {
		if _, ok := x.Event.(*feed.IncidentEvent); ok {
			kept = append(kept, x.Raw)
		}
		if cut < 0 && x.At > 27*time.Second {
			cut = x.Offset + 20 // inside the first record after 27 s
		}
	}
	if len(kept) != len(published) {
		t.Fatalf("the recording keeps %d incident lines, the demo published %d", len(kept), len(published))
	}
	for i, e := range published {
		if b, _ := json.Marshal(e); !bytes.Equal(b, kept[i]) {
			t.Fatalf("incident line %d recorded as\n%s\npublished as\n%s", i, kept[i], b)
		}
	}

	if o, c := int(closeLine.OpenedMs/1000), int(*closeLine.ClosedMs/1000); o < 10 || o > 12 || c < 30 {
		t.Fatalf("ada's incident ran from %d s to %d s; the spike is from 10 s to 30 s", o, c)
	}
	// The report says when on the session's clock, as the incident's own
	// sentences and the screens do: the session time of its frames (the
	// close line's own, moved by the frames between at 30 fps).
	sessionOf := func(f int) int {
		return int((*closeLine.GameMs - float64(closeLine.Frame-f)*1000/30) / 1000)
	}
	opened, closed := sessionOf(closeLine.OpenedFrame), sessionOf(*closeLine.ClosedFrame)
	for _, f := range []string{"text", "markdown"} {
		out := string(runOK(t, "report", "--format", f, file))
		// The title, then the session: after a blank line in text, on the
		// title's paragraph's next line in markdown.
		head := map[string]string{"text": "\n\nSession: 1 incident, ", "markdown": "\\\n**Session:** 1 incident, "}[f]
		if title, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(out, strings.TrimSuffix(title, "\\")+head) {
			t.Fatalf("%s report does not lead with the session:\n%s", f, out)
		}
		m := adaLine.FindStringSubmatch(out)
		if m == nil || m[5] != "" || m[6] != "" {
			t.Fatalf("%s report names no closed incident of ada's:\n%s", f, out)
		}
		t.Logf("%s: %s", f, m[0])
		if from, to := atoi(m[1])*60+atoi(m[2]), atoi(m[3])*60+atoi(m[4]); from != opened || to != closed {
			t.Errorf("%s report: ada's incident %s:%s–%s:%s, its close line %d s to %d s", f, m[1], m[2], m[3], m[4], opened, closed)
		}
		if cost := closeLine.WaitMs / 1000; m[7] != fmt.Sprintf("%.1f", cost) {
			t.Errorf("%s report: cost %s s, the close line %.2f s", f, m[7], cost)
		}
		end := strings.Index(out, "End of session")
		if end < 0 {
			end = strings.Index(out, "Last diagnosis before the recording ends")
		}
		story := strings.Index(out, m[0])
		for _, later := range []string{"Culprit:", "steps back down", "Waiting for"} {
			if i := strings.Index(out, later); i >= 0 && (end < 0 || i < end) {
				t.Errorf("%s report says %q before the state at the end:\n%s", f, later, out)
			}
		}
		if end < story {
			t.Errorf("%s report: the state at the end (at %d) comes before the story (at %d):\n%s", f, end, story, out)
		}
	}
	var doc struct {
		Incidents []feed.Incident `json:"incidents"`
	}
	if err := json.Unmarshal(runOK(t, "report", "--format", "json", file), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Incidents) != 1 || !reflect.DeepEqual(doc.Incidents[0], closeLine.Incident) {
		t.Fatalf("JSON incidents %+v, want ada's close line %+v", doc.Incidents, closeLine.Incident)
	}

	// The recording cut at 27 s, in the middle of ada's incident.
	whole, err := os.ReadFile(file)
	if err != nil || cut < 0 {
		t.Fatalf("%v; cut at %d", err, cut)
	}
	cutFile := filepath.Join(t.TempDir(), "cut.lsrec")
	if err := os.WriteFile(cutFile, whole[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"report", cutFile}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "cut short") {
		t.Fatalf("report of the cut recording: exit %d, stderr %q", code, errb.String())
	}
	// Open at the cut: the session time there, which the title gives as
	// the recording's length.
	m := adaLine.FindStringSubmatch(out.String())
	title := regexp.MustCompile(` — (\d\d:\d\d), `).FindStringSubmatch(out.String())
	if m == nil || title == nil || m[5] == "" || m[6] == "" || m[3]+":"+m[4] != title[1] || atoi(m[1])*60+atoi(m[2]) != opened {
		t.Fatalf("the cut recording's report does not give ada's incident open at the cut (%v):\n%s", title, out.String())
	}
	t.Logf("cut at 27 s: %s", m[0])
	doc.Incidents = nil
	if err := json.Unmarshal(runOK(t, "report", "--format", "json", cutFile), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Incidents) != 1 || doc.Incidents[0].Player == nil || *doc.Incidents[0].Player != "ada" ||
		doc.Incidents[0].ClosedMs != nil || doc.Incidents[0].Phase == vocab.IncidentClose || doc.Incidents[0].WaitMs <= 0 {
		t.Fatalf("JSON incidents of the cut recording %+v", doc.Incidents)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// A recording made before machines told incidents (the handoff
// recording as protocol 1 wrote it) has no incident lines: its report
// says so where the session's story stands, and its JSON's incidents
// are null, not an empty list.
func TestReportOfARecordingFromBeforeIncidents(t *testing.T) {
	file := filepath.Join("testdata", "recordings", "handoff-protocol1.lsrec")
	const says = "no incidents recorded: this recording was made by a lagscope from before incidents."
	if out := string(runOK(t, "report", file)); !strings.Contains(out, "\nSession: "+says+"\n\nEnd of session (frame 2500)\n") {
		t.Errorf("text report:\n%s", out)
	}
	if out := string(runOK(t, "report", "--format", "markdown", file)); !strings.Contains(out, "\\\n**Session:** "+says+"\n") {
		t.Errorf("markdown report:\n%s", out)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(runOK(t, "report", "--format", "json", file), &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc["incidents"]) != "null" || string(doc["protocol"]) != "1" {
		t.Errorf("JSON report: protocol %s, incidents %s", doc["protocol"], doc["incidents"])
	}
}
