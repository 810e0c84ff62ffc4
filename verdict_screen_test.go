package main

// The verdict agrees with the screen it sits on: the demo's own plan played
// for three minutes in virtual time, its screen read every second at
// 80×24. The rung in the verdict's "holds the match at" and "runs at"
// clauses is the header's target (or the target just decided, whose event
// executes within the next second); the ladder's marks sit where the
// header and the verdict say; ada is named from the first evaluation that
// sees its spike until it ends; after it, the verdict says when the match
// is back down, and that time comes true within one evaluation interval
// (256 frames, S9); and the verdict area keeps its height in every frame.

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/ui"
)

const verdictDemoLength = 3 * time.Minute

// demoUpdates plays the demo with the demo command's own defaults, one
// update a second.
func demoUpdates(t *testing.T, length time.Duration) []feed.Update {
	t.Helper()
	return playDemo(t, length, time.Second)
}

// frames records the UI's picture once per second of session time, in a
// real bubbletea program fed the updates.
type frames struct {
	m     tea.Model
	fd    *steppedFeed
	sized bool
	last  string
	shots []string
	until string
}

// Init starts nothing: the model starts (and reads the feed) once the
// window's size has come, so no update is drawn at a size not asked for
// and none goes by unrecorded, however late the size message comes.
func (c *frames) Init() tea.Cmd { return nil }

func (c *frames) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.WindowSizeMsg); ok && !c.sized {
		c.sized = true
		var cmd tea.Cmd
		c.m, cmd = c.m.Update(msg)
		return c, tea.Batch(cmd, c.m.Init())
	}
	if !c.sized {
		return c, nil
	}
	var cmd tea.Cmd
	c.m, cmd = c.m.Update(msg)
	if ui.FeedUpdates(msg) > 0 {
		c.fd.next() // the next update only once this one is drawn
	}
	v := c.m.View()
	if clock := clockIn(v); clock != "" && clock != c.last {
		c.last = clock
		c.shots = append(c.shots, v)
		if clock == c.until {
			return c, tea.Quit
		}
	}
	return c, cmd
}

func (c *frames) View() string { return c.m.View() }

var clockRe = regexp.MustCompile(`t (\d\d:\d\d)`)

func clockIn(screen string) string {
	first, _, _ := strings.Cut(screen, "\n")
	if m := clockRe.FindStringSubmatch(first); m != nil {
		return m[1]
	}
	return ""
}

// screens renders every update at w×h and returns one picture a second.
// The feed hands the UI one update at a time (a UI takes the updates
// waiting together in one go, and draws once for them all).
func screens(t *testing.T, updates []feed.Update, w, h int) []string {
	t.Helper()
	fd := newSteppedFeed(updates)
	defer fd.Close()
	m, err := ui.NewModel(fd, ui.Options{NoColor: true, Output: io.Discard,
		Clock: func() time.Time { return time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	c := &frames{m: m, fd: fd, until: clockOf(updates[len(updates)-1].View.Game)}
	if !runHeadless(t, c, w, h, 2*time.Minute) {
		t.Fatalf("the UI never reached %s", c.until)
	}
	return c.shots
}

var (
	timingRe  = regexp.MustCompile(`(\d+)/(\d+)`)
	clauseRe  = regexp.MustCompile(`(holds the match at|runs at) (Fast|Normal|Poor|Bad) \(rung (\d+)\)`)
	descentRe = regexp.MustCompile(`steps back down (?:from .*? )?to (Fast|Normal|Poor|Bad) \(rung (\d+)\)`)
	ladderRe  = regexp.MustCompile(`([ ▶])([ ◆])([ ○])\s+(\d+) \d+/\d+\s`)
)

// screenFacts is what one picture says.
type screenFacts struct {
	inForce, target int    // the header's rungs (send periods)
	verdict         string // the verdict area's text
	verdictTop      int    // the line the verdict area starts on
	below           int    // the first line under the verdict area
	ladder          map[rune]int
}

// readScreen reads a picture; ok is false before the engine's first one
// (the header has no timing yet).
func readScreen(s string) (f screenFacts, ok bool) {
	lines := strings.Split(s, "\n")
	f.ladder = map[rune]int{}
	ts := timingRe.FindAllStringSubmatch(lines[1], -1)
	if len(ts) == 0 || len(lines) < 5 {
		return f, false
	}
	f.inForce, _ = strconv.Atoi(ts[0][1])
	f.target, _ = strconv.Atoi(ts[len(ts)-1][1])
	// The verdict area: the two lines under the session line.
	f.verdictTop, f.below = 2, 4
	var v []string
	for _, l := range lines[2:4] {
		v = append(v, strings.TrimSpace(l))
	}
	f.verdict = strings.Join(v, " ")
	for _, l := range lines {
		for _, m := range ladderRe.FindAllStringSubmatch(l, -1) {
			r, _ := strconv.Atoi(m[4])
			for _, mark := range m[1:4] {
				if mark != " " {
					f.ladder[[]rune(mark)[0]] = r
				}
			}
		}
	}
	return f, true
}

func TestVerdictAgreesWithTheScreen_S9_S11(t *testing.T) {
	updates := demoUpdates(t, verdictDemoLength)
	shots := screens(t, updates, 80, 24)
	// One picture a second of session time: the game's clock stands still
	// while it waits (some 10 s of the demo's 3 min).
	if len(shots) < 150 {
		t.Fatalf("%d pictures, want one a second for %v", len(shots), verdictDemoLength)
	}
	var table = -1
	checked := 0
	for i, s := range shots {
		f, ok := readScreen(s)
		if !ok {
			continue
		}
		at := clockIn(s)
		// The verdict area keeps its height: the line under it is the
		// same in every frame.
		lines := strings.Split(s, "\n")
		row := -1
		for k, l := range lines {
			if strings.Contains(l, "PLAYER") {
				row = k
				break
			}
		}
		if table < 0 {
			table = row
		} else if row != table {
			t.Errorf("%s: the link table starts on line %d, before on %d: the verdict area changed height:\n%s", at, row, table, s)
		}
		next := f
		if i+1 < len(shots) {
			if n, ok := readScreen(shots[i+1]); ok {
				next = n
			}
		}
		for _, m := range clauseRe.FindAllStringSubmatch(f.verdict, -1) {
			n, _ := strconv.Atoi(m[3])
			if n != f.target && n != next.target {
				t.Errorf("%s: the verdict says %q but the header's target is rung %d (then %d):\n%s", at, m[0], f.target, next.target, s)
			}
			checked++
		}
		if r, ok := f.ladder['◆']; ok && r != f.target {
			t.Errorf("%s: the ladder's ◆ is on rung %d, the header's target rung %d:\n%s", at, r, f.target, s)
		}
		if r, ok := f.ladder['▶']; ok && r != f.inForce {
			t.Errorf("%s: the ladder's ▶ is on rung %d, the header's timing in force rung %d:\n%s", at, r, f.inForce, s)
		}
		if m := descentRe.FindStringSubmatch(f.verdict); m != nil {
			n, _ := strconv.Atoi(m[2])
			if r, ok := f.ladder['○']; ok && r != n {
				t.Errorf("%s: the verdict says the match steps down to rung %d, the ladder's ○ (needed now) is on rung %d:\n%s", at, n, r, s)
			}
		}
	}
	if checked == 0 {
		t.Error("no verdict on any picture named a rung")
	}
	t.Logf("%d pictures, %d rung clauses checked", len(shots), checked)
	checkSpikeAndDescent(t, updates)
}

// checkSpikeAndDescent reads the demo's events: ada is the culprit from the
// first evaluation that worsens the target for its spike until the spike
// ends, and each "steps back down … in about N s" comes true within 256
// frames.
func checkSpikeAndDescent(t *testing.T, updates []feed.Update) {
	t.Helper()
	const fps = 30
	type diag struct {
		frame   int
		at      time.Duration
		culprit string
		verdict string
	}
	var diags []diag
	var actives []*feed.TimingActiveEvent
	firstWorse := -1
	for _, u := range updates {
		for _, e := range u.Events {
			switch e := e.(type) {
			case *feed.DiagnosisEvent:
				diags = append(diags, diag{e.Frame, u.View.At, e.Diagnosis.Culprit, e.Diagnosis.Verdict})
			case *feed.TimingEvent:
				if e.Reason == "worse" && firstWorse < 0 {
					firstWorse = e.Decided
				}
			case *feed.TimingActiveEvent:
				actives = append(actives, e)
			}
		}
	}
	if firstWorse < 0 {
		t.Fatal("ada's spike never worsened the target")
	}
	spikeEnds := 30 * time.Second
	named, descents := 0, 0
	for _, d := range diags {
		if d.frame >= firstWorse && d.at < spikeEnds {
			named++
			// The verdict leads with ada's incident, and says what ada's
			// connection costs the timing after it.
			first, _, _ := strings.Cut(d.verdict, ". ")
			if d.culprit != "ada" || !strings.Contains(first, "ada") || !strings.Contains(d.verdict, "ada's connection adds") {
				t.Errorf("frame %d (during ada's spike): culprit %q, verdict %q", d.frame, d.culprit, d.verdict)
			}
		}
		m := regexp.MustCompile(`steps back down (?:from .*? )?to (?:Fast|Normal|Poor|Bad) \(rung (\d+)\) in (a few seconds|about (\d+) s)`).FindStringSubmatch(d.verdict)
		if m == nil {
			continue
		}
		descents++
		rung, _ := strconv.Atoi(m[1])
		secs := 5.0
		if m[3] != "" {
			secs, _ = strconv.ParseFloat(m[3], 64)
		}
		predicted := d.frame + int(secs*fps)
		actual := -1
		for _, a := range actives {
			if a.Frame > d.frame && a.Rung == rung {
				actual = a.Frame
				break
			}
		}
		if actual < 0 {
			t.Errorf("frame %d: %q, but the timing in force never reached rung %d", d.frame, d.verdict, rung)
			continue
		}
		t.Logf("frame %d: predicts rung %d at frame %d, in force at %d (%+d frames)", d.frame, rung, predicted, actual, predicted-actual)
		if diff := predicted - actual; diff > 256 || diff < -256 {
			t.Errorf("frame %d: %q predicts frame %d; rung %d came into force at frame %d (%d frames off, more than one evaluation interval)",
				d.frame, d.verdict, predicted, rung, actual, diff)
		}
	}
	t.Logf("%d diagnoses, %d during the spike, %d with a descent's time", len(diags), named, descents)
	if named == 0 {
		t.Error("no evaluation during ada's spike")
	}
	if descents == 0 {
		t.Error("after the spike no verdict said the match steps back down")
	}
}

// steppedFeed hands out its updates one at a time: the next only once
// next is called, so no two ever wait together.
type steppedFeed struct {
	mu     sync.Mutex
	us     []feed.Update
	i      int
	ch     chan feed.Update
	closed bool
}

func newSteppedFeed(us []feed.Update) *steppedFeed {
	f := &steppedFeed{us: us, ch: make(chan feed.Update, 1)}
	f.next()
	return f
}

// next puts the next update in the channel, or closes it after the last.
func (f *steppedFeed) next() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if f.i == len(f.us) {
		f.closed = true
		close(f.ch)
		return
	}
	f.ch <- f.us[f.i]
	f.i++
}

func (f *steppedFeed) Updates() <-chan feed.Update { return f.ch }

// Control ends the feed on Quit.
func (f *steppedFeed) Control(c feed.Control) {
	if c.Quit {
		f.Close()
	}
}

// Close ends the feed; it is safe to call more than once.
func (f *steppedFeed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
}
