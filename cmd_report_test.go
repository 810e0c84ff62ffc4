package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
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

func TestReportFormatsShort(t *testing.T) {
	file := recordScenario(t, "handoff.json")
	for _, f := range []string{"text", "markdown"} {
		var out, errb bytes.Buffer
		if code := run([]string{"report", file, "--format", f}, &out, &errb); code != 0 {
			t.Fatalf("%s: %s", f, errb.String())
		}
		s := out.String()
		if n := strings.Count(s, "\n"); n > 40 || !strings.Contains(s, "bob → carol") || !strings.Contains(s, "Normal") {
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
