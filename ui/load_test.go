package ui

import (
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
)

// Fixtures for the load test: the fixture session with this machine's
// load testing from 50 s on, as set makes it in each picture.
func loadUpdates(set func(v *feed.View)) func() []feed.Update {
	return func() []feed.Update {
		us := fixtureUpdates()
		for i := 50; i < len(us); i++ {
			set(&us[i].View)
		}
		return us
	}
}

const fixtureCap = 50_000_000

// loadIdle: this machine may test; nothing has run.
var loadIdle = loadUpdates(func(v *feed.View) { v.Load = &feed.LoadView{Cap: fixtureCap} })

// loadRunning: this machine's test toward bob, 14 s in, in the download
// hold: idle and upload graded, download under way, both to come; the
// upload hold's trace put the delay at this machine's uplink.
var loadRunning = loadUpdates(func(v *feed.View) {
	v.Load = &feed.LoadView{Cap: fixtureCap, Seen: &feed.LoadSeen{From: "alice", To: "bob", Began: secs(86), For: 25 * time.Second},
		Running: &feed.LoadRun{Peer: "bob", Tester: true, Where: &loadtest.WhereAt{Link: "uplink", TTL: 1, AddedMS: 191.3}, Progress: loadtest.Progress{
			Tester: true, Phase: "download", Began: secs(86),
			Phases: []loadtest.PhaseProgress{
				{Name: "idle", Began: 86100 * time.Millisecond, Samples: 198, Median: msd(31.4)},
				{Name: "upload", Began: 90200 * time.Millisecond, Samples: 402, Median: msd(243.5)},
				{Name: "download", Began: 98200 * time.Millisecond, Samples: 120, Median: msd(96.3)},
			},
		}}}
})

// loadAnswering: bob tests the line to this machine, since 88 s.
var loadAnswering = loadUpdates(func(v *feed.View) {
	v.Load = &feed.LoadView{Cap: fixtureCap, Seen: &feed.LoadSeen{From: "bob", To: "alice", Began: secs(88), For: 25 * time.Second},
		Running: &feed.LoadRun{Peer: "bob", Progress: loadtest.Progress{Phase: "answering"}}}
})

// loadOthers: bob tests the line to carol, since 90 s; this machine takes
// no part.
var loadOthers = loadUpdates(func(v *feed.View) {
	v.Load = &feed.LoadView{Cap: fixtureCap, Seen: &feed.LoadSeen{From: "bob", To: "carol", Began: secs(90), For: 25 * time.Second}}
})

// bobResult is a finished test toward bob at 45 s: a bloated upload
// (grade D) and a clean, capped download (A+).
func bobResult() feed.LoadEvent {
	return feed.LoadEvent{Header: feed.Header{Type: vocab.EventLoad, TMs: ptr(45000.0)}, From: "alice", To: "bob", Result: loadtest.Result{
		IdleRTTMS: ptr(31.2),
		Upload:    &loadtest.DirResult{AddedMS: ptr(212.4), P90AddedMS: ptr(260.8), Mbps: ptr(18.2), Loss: ptr(0.089), Grade: ptr("D")},
		Download:  &loadtest.DirResult{AddedMS: ptr(2.1), P90AddedMS: ptr(4.0), Mbps: ptr(49.6), Loss: ptr(0.003), Grade: ptr("A+"), Capped: true},
		Both:      &loadtest.BothResult{AddedMS: ptr(230.0), P90AddedMS: ptr(290.5), Loss: ptr(0.091)},
		Where:     &loadtest.WhereAt{Link: "uplink", TTL: 2, AddedMS: 205.3},
		Cost:      &loadtest.GameCost{FramesLate: 12, MaxWaitMS: 180, RungFrom: 3, RungTo: 5, ForMS: 9000},
		Cap:       fixtureCap,
	}}
}

// loadResult: the finished test, and the minute before the next one not
// over yet (next at 105 s).
var loadResult = loadUpdates(func(v *feed.View) {
	v.Load = &feed.LoadView{Cap: fixtureCap, NextAt: secs(105), Results: []feed.LoadEvent{bobResult()}}
})

// loadRefused: bob takes no load tests.
var loadRefused = loadUpdates(func(v *feed.View) {
	v.Load = &feed.LoadView{Cap: fixtureCap, Results: []feed.LoadEvent{{Header: feed.Header{Type: vocab.EventLoad, TMs: ptr(61000.0)},
		From: "alice", To: "bob", Result: loadtest.Result{Stopped: ptr("peer refused")}}}}
})

// loadSoon: the last test ended 18 s before the last picture: the next
// may start in 42 s.
var loadSoon = loadUpdates(func(v *feed.View) { v.Load = &feed.LoadView{Cap: fixtureCap, NextAt: secs(142)} })

var toLoadConfirm = []tea.Msg{tab, typed("L")}

// loadViews are the load test's states on the Link view, for the goldens
// and the checks every view passes.
func loadViews() []screenCase {
	return []screenCase{
		{"LoadConfirm", loadIdle, toLoadConfirm},
		{"LoadRunning", loadRunning, []tea.Msg{tab}},
		{"LoadResult", loadResult, []tea.Msg{tab}},
		{"LoadRefused", loadRefused, []tea.Msg{tab}},
		{"LoadAnswering", loadAnswering, []tea.Msg{tab}},
	}
}

// TestGoldenLoad pins the Link view's Load section at every size: the
// confirmation, a test running, a finished result graded D and A+, and a
// test the peer refused.
func TestGoldenLoad(t *testing.T) {
	want := map[string]string{"LoadConfirm": "y start", "LoadRunning": "PROBES", "LoadResult": "ADDED ms", "LoadRefused": "peer refused"}
	for _, sz := range goldenSizes {
		for _, c := range loadViews()[:4] {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], c.updates(), c.keys, want[c.name])
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// clearControls forgets the controls f has received.
func clearControls(f *staticFeed) {
	f.mu.Lock()
	f.controls = nil
	f.mu.Unlock()
}

// L asks before anything is sent, and says what the test does; any key
// but y closes the question and sends nothing (q included: it does not
// quit from the question); y sends exactly one LoadTest for the link in
// focus.
func TestLoadKeyAsksBeforeSending(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 80, 24, loadIdle()) // the section is the screen's width: its lines join into the question
	pressRun(m, tab, typed("L"))
	question := "Load your upload and download to bob for about 25 s? It sends and receives up to 81 MB each way, at most 50 Mbit/s. The game keeps running and will slow while the line is full."
	if flat := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(flat, question) || !strings.Contains(flat, "y start · n cancel") {
		t.Fatalf("no confirmation:\n%s", m.View())
	}
	if !strings.Contains(lastLine(m.View()), "y start load test") {
		t.Errorf("footer does not say how to answer: %q", lastLine(m.View()))
	}
	if c := f.Controls(); len(c) != 0 {
		t.Fatalf("L sent %+v before y", c)
	}
	for i, k := range []tea.Msg{typed("n"), typed("q"), keyDown, keyEsc, typed("Y")} {
		if i > 0 {
			pressRun(m, typed("L"))
		}
		pressRun(m, k)
		if c := f.Controls(); len(c) != 0 {
			t.Fatalf("%v sent %+v", k, c)
		}
		if m.load.confirm != "" || m.quitting || strings.Contains(m.View(), "Load your upload") {
			t.Fatalf("%v left the confirmation open or quit", k)
		}
		if !strings.Contains(lastLine(m.View()), "load test not started") {
			t.Errorf("%v: footer %q", k, lastLine(m.View()))
		}
	}
	pressRun(m, typed("L"), typed("y"), typed("y"))
	if got, want := f.Controls(), []feed.Control{{LoadTest: "bob"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("controls %+v, want %+v", got, want)
	}
}

// From another view L opens the Link view on the link in focus (the
// cursor's) and asks there; a click closes the question.
func TestLoadKeyOpensLinkViewOnTheCursor(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, loadIdle())
	pressRun(m, keyDown, typed("L"))
	if screens[m.screen].name != linkName || !strings.Contains(m.View(), "Link alice → carol") || !strings.Contains(m.View(), "to carol for about") {
		t.Fatalf("not asking on the Link view of carol:\n%s", m.View())
	}
	pressRun(m, tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonLeft, X: 5, Y: 10})
	if m.load.confirm != "" || len(f.Controls()) != 0 {
		t.Fatalf("a click left the question open or sent %+v", f.Controls())
	}
}

// While this machine's test runs L stops it, from any view, and the
// footer says so.
func TestLoadKeyStopsThisMachinesTest(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, loadRunning())
	if !strings.Contains(lastLine(m.View()), "L stop load test") {
		t.Errorf("footer does not offer the stop: %q", lastLine(m.View()))
	}
	pressRun(m, typed("L"))
	if got, want := f.Controls(), []feed.Control{{LoadCancel: true}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("controls %+v, want %+v", got, want)
	}
	if m.load.confirm != "" {
		t.Fatal("the stop asked a question")
	}
}

// L opens no question, sends nothing and says why when no test can start:
// the minute after the last test is not over, the feed runs no tests (a
// replay, the simulator), the peer is testing this machine, the link goes
// through the host.
func TestLoadKeyRefusedSaysWhy(t *testing.T) {
	relayed := func() []feed.Update {
		us := loadIdle()
		for i := range us {
			us[i].View.Links[0].Relayed = true
		}
		return us
	}
	for _, c := range []struct {
		name    string
		updates func() []feed.Update
		want    string
	}{
		{"next", loadSoon, "next test possible in 42 s"},
		{"none", fixtureUpdates, "only a live session runs one"},
		{"answering", loadAnswering, "bob is load-testing the line to you: one test at a time"},
		{"others", loadOthers, "bob is load-testing the line to carol: one test at a time"},
		{"relayed", relayed, "goes through the host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newStaticFeed()
			m := model(t, f, 120, 40, c.updates())
			pressRun(m, tab, typed("L"))
			if m.load.confirm != "" || strings.Contains(m.View(), "Load your upload") {
				t.Fatal("the question opened")
			}
			if !strings.Contains(lastLine(m.View()), c.want) {
				t.Errorf("footer %q, want %q", lastLine(m.View()), c.want)
			}
			pressRun(m, typed("y"))
			if got := f.Controls(); len(got) != 0 {
				t.Fatalf("sent %+v", got)
			}
		})
	}
}

// y checks again: a test that began since the question opened (here
// bob's, toward this machine) stops it from sending.
func TestLoadConfirmChecksAgainOnYes(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, loadIdle())
	pressRun(m, tab, typed("L"))
	u := loadAnswering()[fixtureSeconds]
	m.Update(updateMsg{u})
	pressRun(m, typed("y"))
	if got := f.Controls(); len(got) != 0 {
		t.Fatalf("sent %+v", got)
	}
	if !strings.Contains(lastLine(m.View()), "one test at a time") {
		t.Errorf("footer %q", lastLine(m.View()))
	}
}

// The footer offers L on the Link view where a test can start, and not
// where none can (no load testing, the minute not over, another test).
func TestLoadKeyInFooter(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, loadIdle())
	if strings.Contains(lastLine(m.View()), "L load test") {
		t.Errorf("offered on the Session view: %q", lastLine(m.View()))
	}
	press(m, tab)
	if !strings.Contains(lastLine(m.View()), "L load test") {
		t.Errorf("not offered on the Link view: %q", lastLine(m.View()))
	}
	for _, us := range []func() []feed.Update{fixtureUpdates, loadSoon, loadAnswering} {
		m = model(t, newStaticFeed(), 120, 40, us())
		press(m, tab)
		if strings.Contains(lastLine(m.View()), "L load test") {
			t.Errorf("offered where no test can start: %q", lastLine(m.View()))
		}
	}
	press(m, typed("?"))
	if !strings.Contains(m.View(), "load test") {
		t.Errorf("help does not list L:\n%s", m.View())
	}
}

// A test bob runs toward this machine is said in words; a test toward
// another peer is noted on the focused link's view.
func TestLoadSectionOtherTests(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, loadAnswering())
	press(m, tab)
	if !strings.Contains(m.View(), "bob is load-testing the line to you — 12 s of 25") {
		t.Errorf("answering not shown:\n%s", m.View())
	}
	m = model(t, newStaticFeed(), 120, 40, loadRunning())
	press(m, tab, keyDown)
	if !strings.Contains(m.View(), "a load test to bob is running: L stops it") {
		t.Errorf("carol's view does not note bob's test:\n%s", m.View())
	}
}

// The tested player's screen says, on every view and without a key, who
// is loading its line and how far the test is; so does a screen of a
// machine that takes no part, naming both; both the Link view's section
// on either member says it too.
func TestLoadStatusOnEveryScreen(t *testing.T) {
	for _, c := range []struct {
		name    string
		updates func() []feed.Update
		want    string
	}{
		{"tested", loadAnswering, "bob is load-testing the line to you — 12 s of 25"},
		{"others", loadOthers, "bob is load-testing the line to carol — 10 s of 25"},
		{"tester", loadRunning, "load-testing the line to bob — 14 s of 25"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := model(t, newStaticFeed(), 120, 40, c.updates())
			for range screens {
				if !strings.Contains(lastLine(m.View()), c.want) {
					t.Errorf("%s view's footer %q, want %q", screens[m.screen].name, lastLine(m.View()), c.want)
				}
				press(m, tab)
			}
		})
	}
	m := model(t, newStaticFeed(), 120, 40, loadOthers())
	press(m, tab) // the Link view on bob, the tester
	if !strings.Contains(m.View(), "Load test · bob → carol") {
		t.Errorf("bob's Link view does not show his test to carol:\n%s", m.View())
	}
}

// A test started with L: the footer says it is starting until the engine
// shows it waiting or running, the status line follows it, and once it
// has ended — however it ended — the footer says nothing of it.
func TestLoadStatusClearsWhenTheTestEnds(t *testing.T) {
	us := loadIdle()
	f := newStaticFeed()
	m := model(t, f, 120, 40, us)
	pressRun(m, tab, typed("L"), typed("y"))
	if got := lastLine(m.View()); !strings.Contains(got, "load test to bob starting…") {
		t.Fatalf("footer %q after y", got)
	}
	at := func(sec int, l *feed.LoadView) {
		u := us[len(us)-1]
		u.View.At = secs(sec)
		u.View.Load = l
		m.Update(updateMsg{u})
	}
	at(101, &feed.LoadView{Cap: fixtureCap}) // nothing yet: the note stays
	if got := lastLine(m.View()); !strings.Contains(got, "starting…") {
		t.Errorf("footer %q before the engine took the test", got)
	}
	at(102, &feed.LoadView{Cap: fixtureCap, Running: &feed.LoadRun{Peer: "bob", Tester: true, Waiting: true}})
	if got := lastLine(m.View()); strings.Contains(got, "starting…") || !strings.Contains(got, "load test to bob: waiting for the session's turn") {
		t.Errorf("footer %q while the test waits its turn", got)
	}
	seen := &feed.LoadSeen{From: "alice", To: "bob", Began: secs(103), For: 25 * time.Second}
	at(115, &feed.LoadView{Cap: fixtureCap, Seen: seen, Running: &feed.LoadRun{Peer: "bob", Tester: true, Progress: loadtest.Progress{Tester: true, Phase: "upload"}}})
	if got := lastLine(m.View()); !strings.Contains(got, "load-testing the line to bob — 12 s of 25") {
		t.Errorf("footer %q while the test runs", got)
	}
	for _, end := range []loadtest.Result{bobResult().Result, {Stopped: new("peer left")}} {
		e := bobResult()
		e.Result = end
		at(130, &feed.LoadView{Cap: fixtureCap, NextAt: secs(190), Results: []feed.LoadEvent{e}})
		if got := lastLine(m.View()); strings.Contains(got, "load test") || strings.Contains(got, "load-testing") {
			t.Errorf("footer %q after the test ended (stopped %v)", got, end.Stopped)
		}
	}
	// One that stops at once (busy) never shows as running: its result
	// clears the note.
	m = model(t, f, 120, 40, us)
	pressRun(m, tab, typed("L"), typed("y"))
	e := bobResult()
	e.Result = loadtest.Result{Stopped: new("busy")}
	at(101, &feed.LoadView{Cap: fixtureCap, Results: []feed.LoadEvent{e}})
	if got := lastLine(m.View()); strings.Contains(got, "starting…") {
		t.Errorf("footer %q after the test stopped busy", got)
	}
}

// The running test's own where: during the upload hold, the hold's trace
// names this machine's uplink.
func TestLoadRunningShowsItsWhere(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, loadRunning())
	press(m, tab)
	if !regexp.MustCompile(`where the delay is +hop 1 · uplink · \+191 ms`).MatchString(m.View()) {
		t.Errorf("the running test's where is not shown:\n%s", m.View())
	}
}

// The overdrive note is for a loss there was: a result that lost nothing
// does not blame the overdrive; one that lost some load does.
func TestLoadOverdriveNoteOnlyWithLoss(t *testing.T) {
	note := "mostly the test's own overdrive"
	for _, c := range []struct {
		name string
		set  func(r *loadtest.Result)
		want bool
	}{
		{"loss", func(r *loadtest.Result) {}, true},
		{"none", func(r *loadtest.Result) { r.Upload.Loss, r.Download.Loss, r.Both.Loss = ptr(0.0), ptr(0.0), ptr(0.0) }, false},
		{"unknown", func(r *loadtest.Result) { r.Upload.Loss, r.Download.Loss, r.Both.Loss = nil, ptr(0.0), nil }, false},
		{"both only", func(r *loadtest.Result) {
			r.Upload.Loss, r.Download.Loss, r.Both.Loss = ptr(0.0), ptr(0.0), ptr(0.0004)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			us := loadUpdates(func(v *feed.View) {
				e := bobResult()
				c.set(&e.Result)
				v.Load = &feed.LoadView{Cap: fixtureCap, Results: []feed.LoadEvent{e}}
			})()
			m := model(t, newStaticFeed(), 120, 40, us)
			press(m, tab)
			if got := strings.Contains(m.View(), note); got != c.want {
				t.Errorf("the overdrive note shown %v, want %v:\n%s", got, c.want, m.View())
			}
		})
	}
}

// capped is said in words: whose cap ended the ramp before the line did,
// for each direction it ended.
func TestLoadCappedInWords(t *testing.T) {
	for _, c := range []struct {
		name     string
		up, down bool
		cap      int64
		want     string
	}{
		{"download, own cap", false, true, fixtureCap, "download capped: your cap of 50 Mbit/s ended the ramp before the line did"},
		{"both ways, own cap", true, true, fixtureCap, "upload and download capped: your cap of 50 Mbit/s ended the ramp before the line did"},
		{"the peer's lower cap", true, false, 20e6, "upload capped: the peer's cap of 20 Mbit/s ended the ramp before the line did"},
		{"cap not known", false, true, 0, "download capped: the cap ended the ramp before the line did"},
		{"none", false, false, fixtureCap, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			us := loadUpdates(func(v *feed.View) {
				e := bobResult()
				e.Result.Upload.Capped, e.Result.Download.Capped, e.Result.Cap = c.up, c.down, c.cap
				v.Load = &feed.LoadView{Cap: fixtureCap, Results: []feed.LoadEvent{e}}
			})()
			m := model(t, newStaticFeed(), 200, 60, us)
			press(m, tab)
			flat := strings.Join(strings.Fields(m.View()), " ")
			if c.want == "" {
				if strings.Contains(flat, "ended the ramp") {
					t.Errorf("an uncapped result explains a cap:\n%s", m.View())
				}
				return
			}
			if !strings.Contains(flat, c.want) {
				t.Errorf("missing %q:\n%s", c.want, m.View())
			}
		})
	}
}

// The confirmation says what the test sends and receives, each way, at
// the cap in force, and for how long.
func TestLoadConfirmSaysWhatItCosts(t *testing.T) {
	for _, c := range []struct {
		cap  int64
		want string
	}{
		{50e6, "for about 25 s? It sends and receives up to 81 MB each way, at most 50 Mbit/s."},
		{4e6, "for about 25 s? It sends and receives up to 6.5 MB each way, at most 4 Mbit/s."},
		{1e9, "for about 25 s? It sends and receives up to 1625 MB each way, at most 1000 Mbit/s."},
	} {
		us := loadUpdates(func(v *feed.View) { v.Load = &feed.LoadView{Cap: c.cap} })()
		m := model(t, newStaticFeed(), 80, 24, us) // the section is the screen's width: its lines join into the question
		pressRun(m, tab, typed("L"))
		if flat := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(flat, c.want) {
			t.Errorf("cap %d: missing %q:\n%s", c.cap, c.want, m.View())
		}
	}
}

// The result shows what is not known as —, never 0: a direction whose
// hold did not finish, a figure without samples, where without a trace,
// cost not measured.
func TestLoadResultUnknownIsDash(t *testing.T) {
	us := loadUpdates(func(v *feed.View) {
		e := bobResult()
		e.Result.Download, e.Result.Where, e.Result.Cost = nil, nil, nil
		e.Result.Both = &loadtest.BothResult{}
		e.Result.Stopped = ptr("peer left")
		v.Load = &feed.LoadView{Cap: fixtureCap, Results: []feed.LoadEvent{e}}
	})()
	m := model(t, newStaticFeed(), 120, 40, us)
	press(m, tab)
	out := m.View()
	for _, want := range []string{`stopped +peer left`, `download +— +— +— +— +—  `, `both +— +— +—  `, `where the delay is +—  `, `cost to the game +—  `} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("missing %q:\n%s", want, out)
		}
	}
}

// Names and words in the load testing state are made safe before they
// reach the terminal; the engine's copy is left alone.
func TestLoadNamesMadeSafe(t *testing.T) {
	evil := "mal\x1b]0;owned\x07lory"
	us := loadUpdates(func(v *feed.View) {
		e := bobResult()
		e.To = evil
		e.Result.Stopped = ptr("x\x1b[2J")
		v.Load = &feed.LoadView{Cap: fixtureCap, Running: &feed.LoadRun{Peer: evil, Tester: true}, Results: []feed.LoadEvent{e}}
	})()
	raw := us[fixtureSeconds].View.Load
	m := model(t, newStaticFeed(), 120, 40, us)
	press(m, tab)
	out := m.View()
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") {
		t.Fatalf("an escape reached the screen: %q", out)
	}
	if !strings.Contains(out, "a load test to "+textOf(evil)+" is running") {
		t.Errorf("the escaped name is not shown:\n%s", out)
	}
	if raw.Running.Peer != evil || raw.Results[0].To != evil {
		t.Error("the engine's picture was written to")
	}
}
