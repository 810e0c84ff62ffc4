package main

// The README's screen: what `go run .` — the demo with its
// default flags — shows in an 80×24 terminal 34 seconds in, rendered by the
// real UI from the demo's real sessions run in virtual time
// (live.PlayDemo), so it can be compared byte for byte. The test fails when
// the README's block drifts from it; `go test -run Readme -update .`
// rewrites the block.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/live"
	"github.com/lagscope/lagscope/ui"
)

const (
	screenBegin = "<!-- screen:begin: `go test -run Readme -update .` rewrites this block -->\n"
	screenEnd   = "<!-- screen:end -->\n"
	screenAt    = 34 * time.Second
	screenW     = 80
	screenH     = 24
)

// demoScreen renders the demo as `go run .` runs it: the flags' defaults
// are read off the demo command itself, so a changed default changes the
// screen.
func demoScreen(t *testing.T) string {
	t.Helper()
	screen, _ := demoScreenAt(t)
	return screen
}

// demoScreenAt is demoScreen and the session time its header shows.
func demoScreenAt(t *testing.T) (string, string) {
	t.Helper()
	updates := playDemo(t, screenAt, 100*time.Millisecond)
	session := "t " + clockOf(updates[len(updates)-1].View.Game)

	fd := newQueuedFeed(updates)
	// ui.Run adds the wall clock to the header; a fixed one here.
	clock := func() time.Time { return time.Date(2026, 1, 1, 18, 41, 8, 0, time.UTC) }
	m, err := ui.NewModel(fd, ui.Options{NoColor: true, Output: io.Discard, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	// The real model in a real bubbletea program (no terminal: the input
	// is off, the output discarded), stopped by capture once the picture
	// of the last update is drawn at the README's size. teatest is not used
	// here: its -update flag would clash with this package's.
	// The picture of the last update: several updates may show the same
	// second of session time (it stands still while the game waits).
	c := &capture{m: m, want: session, updates: len(updates)}
	if !runHeadless(t, c, screenW, screenH, 30*time.Second) {
		t.Fatalf("the UI never showed %q at %dx%d after %d of %d updates", c.want, screenW, screenH, c.seen, c.updates)
	}
	lines := strings.Split(c.got, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n"), session
}

// queuedFeed is a feed.Feed over a fixed list of updates, all queued at
// once: it ends after a Done update, on Quit (with a Done update of the
// last View, as a live engine does) or on Close.
type queuedFeed struct {
	ch     chan feed.Update
	mu     sync.Mutex
	closed bool
	last   feed.View
}

func newQueuedFeed(updates []feed.Update) *queuedFeed {
	f := &queuedFeed{ch: make(chan feed.Update, len(updates)+1)}
	for _, u := range updates {
		f.ch <- u
		f.last = u.View
		if u.Done {
			f.closed = true
			close(f.ch)
			break
		}
	}
	return f
}

func (f *queuedFeed) Updates() <-chan feed.Update { return f.ch }

func (f *queuedFeed) Control(c feed.Control) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Quit && !f.closed {
		f.closed = true
		f.ch <- feed.Update{View: f.last, Done: true}
		close(f.ch)
	}
}

// Close ends the feed without a Done update; it is safe to call more than
// once.
func (f *queuedFeed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
}

// playDemo plays the demo in virtual time with the demo command's own
// defaults (read off its flags, so a changed default changes what the
// tests see), an update every `every` up to length.
func playDemo(t *testing.T, length, every time.Duration) []feed.Update {
	t.Helper()
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	setupDemo(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	players, _ := fs.GetInt("players")
	profile, _ := fs.GetString("profile")
	seed, _ := fs.GetUint64("seed")
	fps, _ := fs.GetInt("fps")
	name := fs.Lookup("name").DefValue
	updates, err := live.PlayDemo(live.DemoConfig{Players: players, Profile: profile, Seed: seed, Speed: fps, Name: name, Spike: true},
		length, every)
	if err != nil {
		t.Fatal(err)
	}
	return updates
}

// capture runs the UI's model and quits with its picture once the
// terminal's size has arrived and the picture shows want.
type capture struct {
	m     tea.Model
	want  string
	sized bool
	got   string
	// updates is how many of the feed's updates the picture must have
	// taken in; seen counts them by ui.FeedUpdates.
	updates, seen int
}

func (c *capture) Init() tea.Cmd { return c.m.Init() }

func (c *capture) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.WindowSizeMsg); ok {
		c.sized = true
	}
	c.seen += ui.FeedUpdates(msg)
	var cmd tea.Cmd
	c.m, cmd = c.m.Update(msg)
	if v := c.m.View(); c.sized && c.seen >= c.updates && strings.Contains(v, c.want) {
		c.got = v
		return c, tea.Quit
	}
	return c, cmd
}

func (c *capture) View() string { return c.m.View() }

// clockOf is a time as the header shows the session time, mm:ss.
func clockOf(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func TestReadmeScreenIsTheDemo(t *testing.T) {
	screen, session := demoScreenAt(t)
	// What makes it the demo's and today's UI, not a fixture's.
	for _, want := range []string{"you", "ada", "bob", "cyd", "Matrix", "Diagnosis", session} {
		if !strings.Contains(screen, want) {
			t.Errorf("the demo's screen has no %q:\n%s", want, screen)
		}
	}
	if n := strings.Count(screen, "\n") + 1; n != screenH {
		t.Errorf("the screen has %d lines, want %d", n, screenH)
	}

	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(doc), screenBegin)
	block, tail, ok2 := strings.Cut(rest, screenEnd)
	if !ok || !ok2 {
		t.Fatalf("README.md has no block between %q and %q", screenBegin, screenEnd)
	}
	want := "```text\n" + screen + "\n```\n"
	if *update {
		if err := os.WriteFile("README.md", []byte(head+screenBegin+want+screenEnd+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if block != want {
		gl, wl := strings.Split(want, "\n"), strings.Split(block, "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("README.md's screen drifted from `go run .` at line %d (go test -run Readme -update . rewrites it):\n demo   %q\n README %q", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("README.md's screen drifted from `go run .`: %d lines, the demo's %d (go test -run Readme -update . rewrites it)", len(wl), len(gl))
	}
}
