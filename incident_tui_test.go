package main

// Incidents where people look, on the demo as `go run .` plays it in
// virtual time (live.PlayDemo): the Session view's strip and the
// Diagnosis view's Incidents list during ada's incident and after it
// closes, pinned at 80×24, 120×40 and 200×60, plain and under NO_COLOR
// (testdata/golden/demo_incident_*; `go test -run TestGoldenDemoIncident
// -update .` rewrites them); the layout read every second for three
// minutes at each size; and a recording of the demo replayed, sought to
// ada's incident with `]`, listing it as the live screen did.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/ui"
	"github.com/lagscope/lagscope/vocab"
)

var tuiSizes = [][2]int{{80, 24}, {120, 40}, {200, 60}}

var ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)

func plain(s string) string { return ansiRe.ReplaceAllString(s, "") }

// step is one step of a script: once the picture shows want, the keys
// are typed.
type step struct {
	want string
	keys []tea.Msg
}

// script drives the UI's model in a real bubbletea program: at each step
// it waits for the step's text on the picture (escape codes left out),
// types its keys, and after the last step quits with the picture.
type script struct {
	m     tea.Model
	steps []step
	i     int
	sized bool
	got   string
	// updates: the first step waits until the UI has taken this many of
	// the feed's updates (ui.FeedUpdates counts them); several
	// updates may show one second of session time.
	updates, seen int
}

func (c *script) Init() tea.Cmd { return c.m.Init() }

func (c *script) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.WindowSizeMsg); ok {
		c.sized = true
	}
	c.seen += ui.FeedUpdates(msg)
	var cmd tea.Cmd
	c.m, cmd = c.m.Update(msg)
	cmds := []tea.Cmd{cmd}
	for c.sized && c.seen >= c.updates && c.i < len(c.steps) && strings.Contains(plain(c.m.View()), c.steps[c.i].want) {
		for _, k := range c.steps[c.i].keys {
			var kc tea.Cmd
			c.m, kc = c.m.Update(k)
			cmds = append(cmds, kc)
		}
		c.i++
		if c.i == len(c.steps) {
			c.got = c.m.View()
			return c, tea.Quit
		}
	}
	return c, tea.Batch(cmds...)
}

func (c *script) View() string { return c.m.View() }

// runScript runs the UI on fd at w×h through steps and returns the last
// picture, its lines' trailing blanks cut.
func runScript(t *testing.T, fd feed.Feed, opts ui.Options, w, h int, steps ...step) string {
	t.Helper()
	return runScriptAfter(t, fd, 0, opts, w, h, steps...)
}

// runScriptAfter is runScript once the UI has taken n of the feed's
// updates.
func runScriptAfter(t *testing.T, fd feed.Feed, n int, opts ui.Options, w, h int, steps ...step) string {
	t.Helper()
	opts.Output = io.Discard
	opts.Clock = func() time.Time { return time.Date(2026, 1, 1, 18, 41, 8, 0, time.UTC) }
	m, err := ui.NewModel(fd, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := &script{m: m, steps: steps, updates: n}
	if !runHeadless(t, c, w, h, time.Minute) {
		t.Fatalf("the UI at %dx%d never got past step %d of %v; it shows:\n%s", w, h, c.i, steps, c.m.View())
	}
	lines := strings.Split(c.got, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// upTo is the updates up to and including time at.
func upTo(us []feed.Update, at time.Duration) []feed.Update {
	for i, u := range us {
		if u.View.At > at {
			return us[:i]
		}
	}
	return us
}

var tabs5 = []tea.Msg{tea.KeyMsg{Type: tea.KeyTab}, tea.KeyMsg{Type: tea.KeyTab}, tea.KeyMsg{Type: tea.KeyTab},
	tea.KeyMsg{Type: tea.KeyTab}, tea.KeyMsg{Type: tea.KeyTab}}

// adaSince is when ada's incident opened as its sentences and the
// screens say it: the session time of its opening frame, from its first
// line's session time and the frames between (the demo runs at 30 fps).
func adaSince(t *testing.T, us []feed.Update) string {
	t.Helper()
	for _, u := range us {
		for _, e := range u.Events {
			if inc, ok := e.(*feed.IncidentEvent); ok && inc.Player != nil && *inc.Player == "ada" && inc.GameMs != nil {
				ms := *inc.GameMs - float64(inc.Frame-inc.OpenedFrame)*1000/30
				return clockOf(time.Duration(ms * float64(time.Millisecond)))
			}
		}
	}
	t.Fatal("ada's incident has no line with a session time")
	return ""
}

// adaSession is when ada's incident was first told and when it closed in
// session time (the screens' t).
func adaSession(t *testing.T, us []feed.Update) (told, closed time.Duration) {
	t.Helper()
	told, closed = -1, -1
	for _, u := range us {
		for _, e := range u.Events {
			inc, ok := e.(*feed.IncidentEvent)
			if !ok || inc.Player == nil || *inc.Player != "ada" || inc.GameMs == nil {
				continue
			}
			g := time.Duration(*inc.GameMs * float64(time.Millisecond))
			switch {
			case inc.Phase == vocab.IncidentOpen && told < 0:
				told = g
			case inc.Phase == vocab.IncidentClose:
				closed = g - time.Duration(inc.Frame-*inc.ClosedFrame)*time.Second/30
			}
		}
	}
	if told < 0 || closed < 0 {
		t.Fatalf("ada's incident in session time: told at %v, closed at %v", told, closed)
	}
	return told, closed
}

// adaIncident is when ada's incident opened, was first told and closed,
// read off the demo's own incident lines.
func adaIncident(t *testing.T, us []feed.Update) (opened, told, closed time.Duration) {
	t.Helper()
	told, closed = -1, -1
	for _, u := range us {
		for _, e := range u.Events {
			inc, ok := e.(*feed.IncidentEvent)
			if !ok || inc.Player == nil || *inc.Player != "ada" {
				continue
			}
			switch {
			case inc.Phase == vocab.IncidentOpen && told < 0:
				opened, told = time.Duration(inc.OpenedMs*float64(time.Millisecond)), time.Duration(*inc.TMs*float64(time.Millisecond))
			case inc.Phase == vocab.IncidentClose:
				closed = time.Duration(*inc.ClosedMs * float64(time.Millisecond))
			}
		}
	}
	if told < 0 || closed < 0 {
		t.Fatalf("ada's incident: told at %v, closed at %v", told, closed)
	}
	return opened, told, closed
}

// The demo during ada's incident (30 s) and after it closed (55 s): the
// Session view's strip and the Diagnosis view's list, at every size,
// plain and under NO_COLOR with its escape codes.
func TestGoldenDemoIncident(t *testing.T) {
	all := playDemo(t, 56*time.Second, 100*time.Millisecond)
	_, _, closed := adaIncident(t, all)
	if closed >= 50*time.Second {
		t.Fatalf("ada's incident closes at %v, after the golden's 'after' at 55 s", closed)
	}
	since := adaSince(t, all)
	for _, noColor := range []bool{false, true} {
		if noColor {
			t.Setenv("NO_COLOR", "1")
		}
		for _, when := range []struct {
			name string
			at   time.Duration
		}{{"during", 30 * time.Second}, {"after", 55 * time.Second}} {
			for _, sz := range tuiSizes {
				for _, view := range []struct {
					name string
					keys []tea.Msg
					want string
				}{{"session", nil, ""}, {"diagnosis", tabs5, "who and what holds"}} {
					name := fmt.Sprintf("demo_incident_%s_%s_%dx%d", when.name, view.name, sz[0], sz[1])
					if noColor {
						name += "_nocolor"
					}
					t.Run(name, func(t *testing.T) {
						us := upTo(all, when.at)
						fd := newQueuedFeed(us)
						defer fd.Close()
						steps := []step{{want: "t " + clockOf(us[len(us)-1].View.Game), keys: view.keys}}
						if view.want != "" {
							steps = append(steps, step{want: view.want})
						}
						got := runScriptAfter(t, fd, len(us), ui.Options{NoColor: !noColor}, sz[0], sz[1], steps...)
						p := plain(got)
						switch {
						case view.name == "session" && when.name == "during":
							if !strings.Contains(p, "incidents ·") || !strings.Contains(p, "L━") || !strings.Contains(p, "━▶ ada: latency since "+since) {
								t.Errorf("the strip does not show ada's open incident:\n%s", p)
							}
						case view.name == "session":
							if strings.Contains(p, "▶ ada") || !strings.Contains(p, "last: ada, ") {
								t.Errorf("the strip does not show ada's incident closed:\n%s", p)
							}
						case when.name == "during":
							if !regexp.MustCompile(`▶ ` + since + ` +ada +latency .* open`).MatchString(p) {
								t.Errorf("the list does not show ada's incident open:\n%s", p)
							}
						default:
							if !regexp.MustCompile(`▶ ` + since + ` +ada +\w+ .* closed`).MatchString(p) {
								t.Errorf("the list does not show ada's incident closed:\n%s", p)
							}
						}
						if noColor && (strings.Contains(got, "38;") || !strings.Contains(got, "\x1b[")) {
							t.Errorf("under NO_COLOR the picture should have attributes and no colour:\n%q", got)
						}
						golden(t, name+".txt", []byte(got+"\n"))
					})
				}
			}
		}
	}
}

// The demo's screen read every second for three minutes at each size: the
// verdict area, the link table, the strip and the chart start on the same
// line in every frame once the game runs; the strip names ada while her
// incident is open and after it closed says it was the last one.
func TestDemoIncidentStripKeepsTheLayoutEverySecond(t *testing.T) {
	updates := demoUpdates(t, verdictDemoLength)
	told, closed := adaSession(t, updates)
	since := adaSince(t, updates)
	for _, sz := range tuiSizes {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			shots := screens(t, updates, sz[0], sz[1]) // verdict_screen_test.go
			// One picture a second of session time: the game's clock stands
			// still while it waits (some 10 s of the demo's 3 min).
			if len(shots) < 150 {
				t.Fatalf("%d pictures, want one a second for %v", len(shots), verdictDemoLength)
			}
			var first map[string]int
			open, after := 0, 0
			read := 0
			for _, s := range shots {
				lines := strings.Split(s, "\n")
				if _, ok := readScreen(s); !ok || !strings.Contains(lines[1], "· frame ") {
					continue // before the game runs: the lobby's own picture
				}
				read++
				pos := map[string]int{}
				for i, l := range lines {
					for _, mark := range []string{"you · master", "PLAYER", "  incidents ", "── Round trip"} {
						if _, ok := pos[mark]; !ok && strings.HasPrefix(strings.TrimLeft(l, ">! "), strings.TrimSpace(mark)) {
							pos[mark] = i
						}
					}
				}
				if len(pos) != 4 {
					t.Fatalf("%s: a part is missing (%v):\n%s", clockIn(s), pos, s)
				}
				// The verdict area is the lines between the session line
				// and the table.
				pos["verdict"] = pos["you · master"] + 1
				if first == nil {
					first = pos
				} else if fmt.Sprint(pos) != fmt.Sprint(first) {
					t.Errorf("%s: the layout moved: %v, at first %v:\n%s", clockIn(s), pos, first, s)
				}
				strip := lines[pos["  incidents "]]
				at := clockIn(s)
				switch {
				case at > clockOf(told+time.Second) && at < clockOf(closed):
					open++
					if !regexp.MustCompile(`[▶LX] ada: (latency|loss) since ` + since).MatchString(strip) {
						t.Errorf("%s: ada's incident is open, the strip says %q", at, strip)
					}
				case at > clockOf(closed+10*time.Second):
					after++
					if !strings.Contains(strip, "last: ada, ") || strings.Contains(strip, "▶") {
						t.Errorf("%s: ada's incident has closed, the strip says %q", at, strip)
					}
				}
			}
			if read < 150 || open < 12 || after < 100 {
				t.Errorf("%d seconds read, %d with ada's incident open, %d after: too few", read, open, after)
			}
			t.Logf("%d seconds read (%d with ada's incident open, %d after it): the layout %v in every one", read, open, after, first)
		})
	}
}

// A recording of the demo, replayed: `]` seeks to ada's incident (its
// first line), and the Diagnosis view lists it as the live screen did at
// that moment; the strip shows it open.
func TestReplayOfTheDemoSeeksToAdasIncident(t *testing.T) {
	updates := playDemo(t, 50*time.Second, 100*time.Millisecond)
	_, told, _ := adaIncident(t, updates)
	path := filepath.Join(t.TempDir(), "demo.lsrec")
	w, err := record.Create(path, record.Header{Program: "lagscope demo", Self: "you"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range updates {
		w.Observe(u)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Open(path)
	if err != nil || rec.Stop != nil {
		t.Fatalf("the recording: %v, %v", err, rec.Stop)
	}
	// The live screen, from the update that told ada's incident.
	var live []feed.Update
	for i := 0; i < len(updates) && live == nil; i++ {
		for _, e := range updates[i].Events {
			if inc, ok := e.(*feed.IncidentEvent); ok && inc.Phase == vocab.IncidentOpen {
				live = updates[:i+1]
			}
		}
	}
	// The feed ends there (a last update, Done): the header says ENDED
	// once the UI has taken every update.
	live = append(live[:len(live):len(live)], feed.Update{View: live[len(live)-1].View, Done: true})
	const w8, h8 = 120, 40
	fd := newQueuedFeed(live)
	defer fd.Close()
	liveScreen := runScript(t, fd, ui.Options{NoColor: true, KeepOpen: true}, w8, h8, step{want: "ENDED", keys: tabs5},
		step{want: "who and what holds"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := record.NewPlayer(ctx, rec, "", 1)
	space := tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	seek := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{']'}}
	replayed := runScript(t, p, ui.Options{NoColor: true}, w8, h8,
		step{want: "▶ 00:0", keys: []tea.Msg{space, seek}},
		step{want: "⏸ " + clockOf(told), keys: nil},
		step{want: "since " + adaSince(t, updates), keys: tabs5},
		step{want: "who and what holds"})
	if !strings.Contains(replayed, "⏸ "+clockOf(told)+" / ") {
		t.Errorf("the replay is not at ada's incident (%v):\n%s", told, replayed)
	}
	l, r := incidentsSection(liveScreen), incidentsSection(replayed)
	if l == "" || !strings.Contains(l, "ada") {
		t.Fatalf("the live screen lists no incident of ada's:\n%s", liveScreen)
	}
	if l != r {
		t.Errorf("the replay's Incidents list differs from the live screen's:\nlive:\n%s\nreplay:\n%s", l, r)
	}
	t.Logf("ada's incident told at %v; the replay sought there and lists:\n%s", told, r)
}

// incidentsSection is the Incidents list of a Diagnosis view's picture:
// from under its rule (which names the keys, a replay's its own) to the
// blank line after it.
func incidentsSection(screen string) string {
	var out []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		switch {
		case strings.HasPrefix(l, "── Incidents"):
			in = true
			continue
		case in && strings.TrimSpace(l) == "":
			return strings.Join(out, "\n")
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
