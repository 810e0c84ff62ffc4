package ui

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// incidentLine is one `incident` line of the fixture's incidents.
func incidentLine(at int, id int, phase vocab.IncidentPhase, opened int, closed *int, who string, cause vocab.Cause, waitMs float64) *feed.IncidentEvent {
	tms := float64(at * 1000)
	inc := feed.Incident{ID: id, Phase: phase, OpenedMs: float64(opened * 1000), OpenedFrame: opened * 30, Cause: cause,
		WaitMs: waitMs, FramesWaited: int(waitMs / 100), RungFrom: 2, RungPeak: 2}
	if closed != nil {
		c := float64(*closed * 1000)
		f := *closed * 30
		inc.ClosedMs, inc.ClosedFrame = &c, &f
	}
	if strings.Contains(who, "–") {
		a, b, _ := strings.Cut(who, "–")
		inc.Between = &[2]string{a, b}
	} else if who != "" {
		inc.Player = ptr(who)
	}
	return &feed.IncidentEvent{Header: feed.Header{Type: vocab.EventIncident, Frame: at * 30, TMs: &tms}, Incident: inc}
}

// incidentUpdates is the fixture with incidents: bob's long round trips
// from 00:20 (told at 00:22) to 00:40 (its close told at 00:45), a path
// carol–dave losing packets from 01:00 to 01:10, and dave's slow machine
// open since 01:25. The times are the fixture's seconds.
func incidentUpdates() []feed.Update {
	us := fixtureUpdates()
	c40, c70 := 40, 70
	bob := func(at int, phase vocab.IncidentPhase, closed *int, wait float64) *feed.IncidentEvent {
		e := incidentLine(at, 1, phase, 20, closed, "bob", vocab.CauseLatency, wait)
		e.AddedMs, e.Loss = ptr(540.0), ptr(0.012)
		e.RungPeak = 5
		e.Text = "Waiting for bob since 00:20: bob's round trips are 540 ms above normal."
		if phase == vocab.IncidentClose {
			e.Text = "bob's side held the match back from 00:20 to 00:40: round trips up to 540 ms above normal; the match waited 3.2 s."
			e.Where = &feed.IncidentWhere{Link: vocab.HopUplink, TTL: 2, AddedMs: 510}
		}
		return e
	}
	add := func(at int, e feed.Event) { us[at].Events = append(us[at].Events, e) }
	add(22, bob(22, vocab.IncidentOpen, nil, 800))
	add(27, bob(27, vocab.IncidentUpdate, nil, 2100))
	add(45, bob(45, vocab.IncidentClose, &c40, 3200))
	path := func(at int, phase vocab.IncidentPhase, closed *int) *feed.IncidentEvent {
		e := incidentLine(at, 2, phase, 60, closed, "carol–dave", vocab.CauseLoss, 900)
		e.Loss = ptr(0.08)
		e.Text = "The path between carol and dave loses 8% of its packets; neither player's own connection explains it."
		return e
	}
	add(61, path(61, vocab.IncidentOpen, nil))
	add(75, path(75, vocab.IncidentClose, &c70))
	dave := incidentLine(86, 3, vocab.IncidentOpen, 85, nil, "dave", vocab.CauseProcessing, 450)
	dave.Text = "Waiting for dave since 01:25: dave's machine needs 45 ms per frame, more than a frame's 33 ms."
	add(86, dave)
	return us
}

// TestGoldenIncidents pins the incident strip on the Session view and
// the Incidents list on the Diagnosis view, with an incident open and
// two closed, at every golden size, in plain text and under NO_COLOR
// with its attributes.
func TestGoldenIncidents(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, v := range []struct {
			name string
			keys []tea.Msg
			want string
		}{{"Session", nil, ""}, {"Diagnosis", toDiagnosis, "who and what holds"}, {"DiagnosisOlder", append(toDiagnosis[:len(toDiagnosis):len(toDiagnosis)], typed("[")), "▶ 01:00"}} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], incidentUpdates(), v.keys, v.want)
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// TestGoldenIncidentsNoColorEnv pins the strip and the list under
// NO_COLOR with their escape codes: no colour, the open incident reversed.
func TestGoldenIncidentsNoColorEnv(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	for _, sz := range goldenSizes {
		for _, v := range []struct {
			name string
			keys []tea.Msg
		}{{"Session", nil}, {"Diagnosis", toDiagnosis}} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, sz[0], sz[1]), func(t *testing.T) {
				m, err := newModel(newStaticFeed(), Options{Output: io.Discard})
				if err != nil {
					t.Fatal(err)
				}
				m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				for _, u := range incidentUpdates() {
					m.Update(updateMsg{u})
				}
				press(m, v.keys...)
				out := m.View()
				if regexp.MustCompile(`\x1b\[[0-9;]*3[0-9];`).MatchString(out) || strings.Contains(out, "38;") {
					t.Errorf("a colour under NO_COLOR:\n%q", out)
				}
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// stripOf is the strip's line of a plain picture.
func stripOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, stripLabel) {
			return l
		}
	}
	t.Fatalf("no incident strip:\n%s", out)
	return ""
}

// The strip puts each incident where it opened, counted back from now at
// the right end: the cause's letter there, ━ while it lasted, ▶ at now
// for the one still open; after the track the open one in words.
func TestIncidentStripMarksAtTheirTime(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		m := model(t, newStaticFeed(), w, 40, incidentUpdates())
		line := []rune(stripOf(t, m.View()))
		n := stripTrack(w)
		step := stripStep(n)
		if time.Duration(n)*step < 5*time.Minute || time.Duration(n)*(step-time.Second) >= 5*time.Minute {
			t.Errorf("at %d: %d cells of %v do not span the last 5 minutes", w, n, step)
		}
		start := len([]rune(stripLabel))
		track := string(line[start : start+n])
		now := int(100 * time.Second / step) // the fixture ends at 01:40
		cell := func(sec int) int { return n - 1 - (now - int(time.Duration(sec)*time.Second/step)) }
		for _, c := range []struct {
			letter rune
			opened int
		}{{'L', 20}, {'X', 60}, {'P', 85}} {
			if got := []rune(track)[cell(c.opened)]; got != c.letter {
				t.Errorf("at %d: cell %d (%d s) is %q, want %q: %q", w, cell(c.opened), c.opened, got, c.letter, track)
			}
		}
		if r := []rune(track); r[n-1] != '▶' || r[cell(40)] != '━' || r[cell(20)-1] != '·' {
			t.Errorf("at %d: the open incident does not reach now, or bob's span is wrong: %q", w, track)
		}
		if rest := string(line[start+n:]); !strings.Contains(rest, "dave: processing since 01:25") {
			t.Errorf("at %d: the open incident is not in words: %q", w, rest)
		}
	}
}

// Under NO_COLOR the open incident's cells are reversed (highlighted) and
// the closed ones are not.
func TestIncidentStripHighlightsTheOpenOne(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	m, err := newModel(newStaticFeed(), Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for _, u := range incidentUpdates() {
		m.Update(updateMsg{u})
	}
	var line string
	for _, l := range strings.Split(m.View(), "\n") {
		if strings.Contains(stripANSI(l), "incidents ·") {
			line = l
		}
	}
	for _, want := range []string{"\x1b[1;7mP\x1b[0m", "\x1b[1;7m▶\x1b[0m"} {
		if !strings.Contains(line, want) {
			t.Errorf("the open incident's %q is not reversed: %q", stripANSI(want), line)
		}
	}
	if strings.Contains(line, "7mL") || strings.Contains(line, "7mX") {
		t.Errorf("a closed incident is highlighted: %q", line)
	}
}

// The strip costs one line and keeps it: the verdict area, the link table
// and the strip start on the same lines before any incident, while one is
// open and after it closes; the picture fills the screen.
func TestIncidentStripKeepsTheLayout(t *testing.T) {
	us := incidentUpdates()
	for _, sz := range goldenSizes {
		var rows []string
		for _, upto := range []int{10, 30, 50, 90, 100} {
			m := model(t, newStaticFeed(), sz[0], sz[1], us[:upto+1])
			out := m.View()
			checkSize(t, out, sz[0], sz[1])
			lines := strings.Split(out, "\n")
			pos := map[string]int{}
			for i, l := range lines {
				for _, mark := range []string{"PLAYER", stripLabel + "·", "── Round trip"} {
					if _, ok := pos[mark]; !ok && strings.Contains(l, mark) {
						pos[mark] = i
					}
				}
			}
			rows = append(rows, fmt.Sprint(pos))
		}
		for i := range rows {
			if rows[i] != rows[0] {
				t.Errorf("at %dx%d the layout moved: %v", sz[0], sz[1], rows)
				break
			}
		}
	}
}

// `[` moves the Incidents list's focus to the older incident, `]` to the
// newer; the focused one's text is shown in full. Off the Diagnosis view
// the footer says which incident is in focus.
func TestIncidentKeysMoveTheFocus(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, incidentUpdates())
	press(m, toDiagnosis...)
	focused := func() string {
		for _, l := range strings.Split(m.View(), "\n") {
			if strings.HasPrefix(l, "▶ ") {
				return strings.Fields(l)[2]
			}
		}
		return ""
	}
	want := []string{"dave", "carol–dave", "bob", "bob", "carol–dave", "dave", "dave"}
	got := []string{focused()}
	for _, k := range []string{"[", "[", "[", "]", "]", "]"} {
		press(m, typed(k))
		got = append(got, focused())
		if strings.Join(got, " ") == strings.Join(want[:len(got)], " ") && got[len(got)-1] == "bob" {
			if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "bob's side held the match back from 00:20 to 00:40: round trips up to 540 ms above normal; the match waited 3.2 s.") {
				t.Errorf("the focused incident's text is not there in full:\n%s", m.View())
			}
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("focus went %v, want %v", got, want)
	}
	// A new incident: the focus follows the newest again.
	m.Update(updateMsg{feed.Update{View: fixtureUpdates()[100].View, Events: []feed.Event{incidentLine(100, 4, vocab.IncidentOpen, 99, nil, "erin", vocab.CauseJitter, 0)}}})
	if f := focused(); f != "erin" {
		t.Errorf("after a new incident the focus is on %q, want erin", f)
	}
	// On the Session view the footer names the incident in focus.
	press(m, tab, tab)
	press(m, typed("["))
	if v := m.View(); !strings.Contains(v, "incident 01:25 dave: processing, open") {
		t.Errorf("the footer does not say which incident:\n%s", v)
	}
	// Before any incident the keys say there is none.
	m = model(t, newStaticFeed(), 80, 24, fixtureUpdates())
	press(m, typed("]"))
	if !strings.Contains(m.View(), "no incident yet") {
		t.Errorf("no word that there is no incident:\n%s", m.View())
	}
}

// replayWithIncidents is a replay that knows when its incidents were told.
type replayWithIncidents struct {
	*fakeReplay
	times []time.Duration
}

func (r *replayWithIncidents) IncidentTimes() []time.Duration { return r.times }

// In a replay `]` seeks to the next incident's first line and `[` to the
// one before (more than a second back); the help names the keys. Without
// the recording's times it seeks among the incidents seen so far.
func TestIncidentKeysSeekTheReplay(t *testing.T) {
	f := &replayWithIncidents{fakeReplay: &fakeReplay{staticFeed: newStaticFeed(), at: 5 * time.Second, end: 100 * time.Second, speed: 1},
		times: []time.Duration{22 * time.Second, 61 * time.Second, 86 * time.Second}}
	m := model(t, f, 120, 40, incidentUpdates()[:6])
	press(m, typed("]"), typed("]"), typed("["), typed("["), typed("["), typed("]"), typed("]"), typed("]"), typed("]"))
	want := "seek 22s|seek 1m1s|seek 22s|seek 1m1s|seek 1m26s"
	if got := strings.Join(f.calls, "|"); got != want {
		t.Errorf("seeks %s, want %s", got, want)
	}
	if v := m.View(); !strings.Contains(v, "no incident after 01:26") {
		t.Errorf("past the last incident the footer does not say so:\n%s", v)
	}
	// Within a second of an incident's start, [ goes to the one before.
	for _, c := range []struct {
		at   time.Duration
		want string
	}{{63 * time.Second, "seek 1m1s"}, {62 * time.Second, "seek 22s"}} {
		f.at = c.at
		press(m, typed("["))
		if got := f.calls[len(f.calls)-1]; got != c.want {
			t.Errorf("[ at %v went to %s, want %s", c.at, got, c.want)
		}
	}
	press(m, typed("?"))
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "[/] seek to an incident") {
		t.Errorf("help does not list the replay's incident keys:\n%s", v)
	}

	// A replay without the recording's times seeks among those seen.
	g := &fakeReplay{staticFeed: newStaticFeed(), at: 100 * time.Second, end: 100 * time.Second, speed: 1}
	m = model(t, g, 120, 40, incidentUpdates())
	press(m, typed("["), typed("]"))
	if got := strings.Join(g.calls, "|"); got != "seek 1m26s" {
		t.Errorf("seeks %s, want the incident told at 01:26, then none after it", got)
	}
	if v := m.View(); !strings.Contains(v, "no incident after 01:26") {
		t.Errorf("no word that no incident follows:\n%s", v)
	}
}

// Outside text in an incident — a name, the text, a hop link — is escaped
// on the strip and in the list.
func TestIncidentTextIsSafe(t *testing.T) {
	us := fixtureUpdates()
	e := incidentLine(50, 1, vocab.IncidentOpen, 45, nil, "bo\x1b]0;pwned\x07b", vocab.CauseLatency, 100)
	e.Text = "bad \x1b[2J text"
	e.Where = &feed.IncidentWhere{Link: "up\x1blink", TTL: 2}
	us[50].Events = append(us[50].Events, e)
	m := model(t, newStaticFeed(), 120, 40, us)
	for _, keys := range [][]tea.Msg{nil, toDiagnosis} {
		press(m, keys...)
		if v := m.View(); strings.ContainsAny(v, "\x1b\x07") {
			t.Errorf("an escape reached the screen: %q", v)
		}
	}
}

// The log keeps at most incidentCap incidents, dropping the oldest closed
// ones first; a paused display keeps its own copy.
func TestIncidentLogIsBounded(t *testing.T) {
	s := newSession()
	closed := 1
	for i := 1; i <= incidentCap+100; i++ {
		e := incidentLine(i, i, vocab.IncidentClose, i, &closed, "bob", vocab.CauseLoss, 1)
		if i == 1 {
			e = incidentLine(i, i, vocab.IncidentOpen, i, nil, "bob", vocab.CauseLoss, 1)
		}
		s.apply(feed.Update{View: feed.View{At: time.Duration(i) * time.Second}, Events: []feed.Event{e}})
	}
	if n := len(s.incidents.rows); n != incidentCap {
		t.Fatalf("%d incidents kept, want %d", n, incidentCap)
	}
	if s.incidents.rows[0].ID != 1 || s.incidents.rows[1].ID != 102 {
		t.Errorf("kept ids %d, %d…: want the open one and the newest closed", s.incidents.rows[0].ID, s.incidents.rows[1].ID)
	}
	c := s.clone()
	s.apply(feed.Update{Events: []feed.Event{incidentLine(1, 1, vocab.IncidentClose, 1, &closed, "bob", vocab.CauseLoss, 5)}})
	if !c.incidents.rows[0].open() || s.incidents.rows[0].open() {
		t.Error("the paused copy changed with the live session")
	}
}

func TestIncidentPictures(t *testing.T) {
	for _, sz := range goldenSizes {
		m := model(t, newStaticFeed(), sz[0], sz[1], incidentUpdates())
		t.Logf("\n%s", m.View())
		press(m, toDiagnosis...)
		t.Logf("\n%s", m.View())
	}
}
