package probe

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// quietAll names the pair under test on every machine, as the session
// tells every member when a test starts and ends.
func (w *tmWorld) quietAll(a, b string) {
	for _, m := range w.ms {
		m.peer.QuietPair(a, b)
	}
}

// NoteLoad keeps one test per player, the latest; a direction the latest
// left unmeasured keeps the earlier figure.
func TestLoadNoteKeepsTheLatestPerPlayer(t *testing.T) {
	var p Peer
	nan := math.NaN()
	p.NoteLoad(diagnosis.Load{Player: "ada", UploadMs: 380, DownloadMs: 20})
	p.NoteLoad(diagnosis.Load{Player: "bob", UploadMs: nan, DownloadMs: 90})
	p.NoteLoad(diagnosis.Load{Player: "ada", UploadMs: 12, DownloadMs: nan})
	if len(p.load.latest) != 2 {
		t.Fatalf("latest %+v", p.load.latest)
	}
	if a := p.load.latest[0]; a.Player != "ada" || a.UploadMs != 12 || a.DownloadMs != 20 {
		t.Errorf("ada %+v, want 12 up (the latest) and 20 down (kept)", a)
	}
	if b := p.load.latest[1]; b.Player != "bob" || !math.IsNaN(b.UploadMs) || b.DownloadMs != 90 {
		t.Errorf("bob %+v", b)
	}
	if p.load.testing() {
		t.Error("testing with no pair named")
	}
	p.QuietPair("ada", "bob")
	if !p.load.testing() || !p.load.quietLink("ada", "bob") || !p.load.quietLink("bob", "ada") ||
		p.load.quietLink("ada", "cy") || p.load.quietLink("cy", "bob") {
		t.Errorf("quiet %q: the pair, either way, and no other", p.load.quiet)
	}
	p.QuietPair("", "")
	if p.load.testing() || p.load.quietLink("ada", "bob") {
		t.Error("still quiet after the test ended")
	}
}

// The diagnosis takes every machine's load notes for the players in its
// input, and none for a line outside the session. While a test runs no
// machine publishes a diagnosis — the View keeps the last — yet the
// evaluation goes on (its wait marks move); once the test ends the
// diagnoses come back at the next evaluation, with the tested line's
// bufferbloat.
func TestLoadTestHoldsTheDiagnosis(t *testing.T) {
	log := diagLog{}
	w := newTMWorldWith(t, 4, 0, impair.Profile{Delay: 20 * time.Millisecond}, 3, func(_ int, c *Config) { c.Telemetry, c.Sink = true, log.sink() })
	w.runUntilFrame(t, 300)
	for _, m := range w.ms {
		m.peer.NoteLoad(diagnosis.Load{Player: "p2", UploadMs: 380, DownloadMs: math.NaN()})
		m.peer.NoteLoad(diagnosis.Load{Player: "zed", UploadMs: 500, DownloadMs: 500})
	}
	last := map[string]*diagnosis.Diagnosis{}
	marks := map[string]time.Duration{}
	for _, m := range w.ms {
		evs := log[m.peer.Name()]
		if len(evs) == 0 || evs[len(evs)-1].Frame != 256 {
			t.Fatalf("%s: no diagnosis at 256 before the test", m.peer.Name())
		}
		last[m.peer.Name()] = m.peer.LastDiagnosis()
		marks[m.peer.Name()] = m.peer.dg.marks[1].at
	}
	count := func(from int) map[string]int {
		n := map[string]int{}
		for name, evs := range log {
			for _, e := range evs {
				if e.Frame > from {
					n[name]++
				}
			}
		}
		return n
	}

	w.quietAll("p1", "p2")
	w.runUntilFrame(t, 1100) // evaluations at 512, 768 and 1024
	if n := count(300); len(n) != 0 {
		t.Fatalf("diagnoses while a load test runs: %v", n)
	}
	for _, m := range w.ms {
		name := m.peer.Name()
		if m.peer.LastDiagnosis() != last[name] || m.peer.View(w.sched.Now()).Diagnosis != last[name] {
			t.Errorf("%s: the last diagnosis changed while a test ran", name)
		}
		if at := m.peer.dg.marks[1].at; at <= marks[name] {
			t.Errorf("%s: wait marks at %v, still %v from before the test: the evaluation stopped", name, at, marks[name])
		}
		in := m.peer.dg.in
		if len(in.Loads) != 1 || in.Loads[0].Player != "p2" {
			t.Errorf("%s: the input's loads %+v, want p2's alone", name, in.Loads)
		}
	}

	w.quietAll("", "")
	w.runUntilFrame(t, 1300) // the evaluation at 1280
	n := count(1100)
	for _, m := range w.ms {
		name := m.peer.Name()
		evs := log[name]
		if n[name] != 1 || evs[len(evs)-1].Frame != 1280 {
			t.Fatalf("%s: %d diagnoses after the test, want the one at 1280", name, n[name])
		}
		d := evs[len(evs)-1].Diagnosis
		var p2 diagnosis.PlayerDiagnosis
		for _, p := range d.Players {
			if p.Player == "p2" {
				p2 = p
			}
		}
		if b := p2.Bufferbloat; b == nil || b.UploadMs != 380 || !math.IsNaN(b.DownloadMs) || !hasCause(p2.Causes, diagnosis.CauseBufferbloat) {
			t.Errorf("%s: p2's line %+v causes %v", name, p2.Bufferbloat, p2.Causes)
		}
		if !strings.Contains(d.Verdict, "p2's upload adds 380 ms when p2's line is busy") {
			t.Errorf("%s: verdict without p2's advice: %s", name, d.Verdict)
		}
		if m.peer.LastDiagnosis() == last[name] {
			t.Errorf("%s: the View still holds the diagnosis from before the test", name)
		}
	}
}

func hasCause(causes []vocab.Cause, c vocab.Cause) bool {
	for _, x := range causes {
		if x == c {
			return true
		}
	}
	return false
}

// alertLog keeps every alert each machine published and when.
type alertLog map[string][]*feed.AlertEvent

// texts is what me raised, for a failure's message.
func (l alertLog) texts(me string) []string {
	var out []string
	for _, a := range l[me] {
		out = append(out, a.Text)
	}
	return out
}

func (l alertLog) count(me, to string, kind feed.AlertKind) int {
	n := 0
	for _, a := range l[me] {
		if a.Kind == kind && (to == "" || a.To != nil && *a.To == to) {
			n++
		}
	}
	return n
}

// While a test runs between p1 and p2, the link between them loses 20 %
// each way (the test's load fills its queue): neither end raises an alert
// about it, though p1's other link, losing as much, raises one. Once the
// test ends the link is judged again on a whole window of its own, and its
// loss, still there, raises the alert.
func TestLoadTestQuietsItsLinksAlerts_L2(t *testing.T) {
	got := alertLog{}
	w := newTMWorldWith(t, 3, 0, impair.Profile{Delay: 30 * time.Millisecond}, 5, func(_ int, c *Config) {
		c.Sink = feed.SinkFunc(func(from string, e feed.Event) {
			if a, ok := e.(*feed.AlertEvent); ok {
				got[from] = append(got[from], a)
			}
		})
	})
	w.sched.RunUntil(20 * time.Second)
	roster := w.ms[0].peer.cfg.Roster
	lossy := impair.Profile{Delay: 30 * time.Millisecond, Loss: 0.20}
	w.quietAll("p1", "p2")
	w.net.SetLink(roster[0].Addr, roster[1].Addr, lossy)
	w.net.SetLink(roster[0].Addr, roster[2].Addr, lossy)
	w.sched.RunUntil(45 * time.Second)
	if n := got.count("p1", "p2", feed.AlertLoss) + got.count("p2", "p1", feed.AlertLoss); n != 0 {
		t.Fatalf("%d loss alerts on the link under test: %q %q", n, got.texts("p1"), got.texts("p2"))
	}
	if got.count("p1", "p3", feed.AlertLoss) != 1 || got.count("p3", "p1", feed.AlertLoss) != 1 {
		t.Fatalf("p1–p3 loses as much and is not under test: alerts p1 %q, p3 %q", got.texts("p1"), got.texts("p3"))
	}
	if n := len(got["p2"]); n != 0 {
		t.Fatalf("p2 raised %q", got.texts("p2"))
	}

	w.quietAll("", "")
	w.sched.RunUntil(w.sched.Now() + 9*time.Second) // less than a whole window after the test
	if n := got.count("p1", "p2", feed.AlertLoss) + got.count("p2", "p1", feed.AlertLoss); n != 0 {
		t.Fatalf("a loss alert on readings from the test: %q %q", got.texts("p1"), got.texts("p2"))
	}
	w.sched.RunUntil(w.sched.Now() + 3*time.Second)
	if got.count("p1", "p2", feed.AlertLoss) != 1 || got.count("p2", "p1", feed.AlertLoss) != 1 {
		t.Fatalf("after the test the lossy link raises its alert at each end: p1 %q, p2 %q", got.texts("p1"), got.texts("p2"))
	}
}

// A target that worsens while a test runs is the test's cost, not an
// alarm: no tier alert on any machine. Once the test ends, the next
// worsening raises one.
func TestLoadTestQuietsTierAlerts_S18(t *testing.T) {
	got := alertLog{}
	timings := map[string][]*feed.TimingEvent{}
	w := newTMWorldWith(t, 3, 0, impair.Profile{Delay: 5 * time.Millisecond}, 7, func(_ int, c *Config) {
		c.Sink = feed.SinkFunc(func(from string, e feed.Event) {
			switch e := e.(type) {
			case *feed.AlertEvent:
				got[from] = append(got[from], e)
			case *feed.TimingEvent:
				timings[from] = append(timings[from], e)
			}
		})
	})
	w.sched.RunUntil(20 * time.Second)
	tierNow := func(name string) rungs.Tier {
		ts := timings[name]
		if len(ts) == 0 {
			return rungs.Fast
		}
		return rungs.Timing{SendPeriod: ts[len(ts)-1].SendPeriod, LookAhead: ts[len(ts)-1].LookAhead}.Tier()
	}
	before := tierNow("p1")

	w.quietAll("p1", "p2")
	w.net.SetDefault(impair.Profile{Delay: 150 * time.Millisecond})
	w.sched.RunUntil(40 * time.Second)
	during := tierNow("p1")
	if during <= before {
		t.Fatalf("the target's tier went from %v to %v: the test needs a worsening", before, during)
	}
	for _, m := range w.ms {
		if n := got.count(m.peer.Name(), "", feed.AlertTier); n != 0 {
			t.Fatalf("%s: %d tier alerts while a test ran: %q", m.peer.Name(), n, got.texts(m.peer.Name()))
		}
	}

	w.quietAll("", "")
	w.net.SetDefault(impair.Profile{Delay: 400 * time.Millisecond})
	w.sched.RunUntil(70 * time.Second)
	if after := tierNow("p1"); after <= during {
		t.Fatalf("the target's tier went from %v to %v: the test needs a second worsening", during, after)
	}
	for _, m := range w.ms {
		if n := got.count(m.peer.Name(), "", feed.AlertTier); n != 1 {
			t.Errorf("%s: %d tier alerts after the test, want 1: %q", m.peer.Name(), n, got.texts(m.peer.Name()))
		}
	}
}
