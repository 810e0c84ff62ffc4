package main

// One meaning per label: the demo recorded for 20 s (ada's spike) and
// replayed to its end, every view drawn at 80×24 and 120×40 from that one moment. A figure
// shown under one label in two views is the same figure: a link's round
// trip, jitter, retry time, timeout and this machine's wait for it read
// the same in the link table, the Link view and the Matrix; a player's
// processing time the same in the Players, Matrix and Diagnosis views.
// The Matrix's "needs" and each cell's tier are `lagscope rung --rtt`'s
// answer with headroom for that link's round trip. No heading appears in
// two views for two different figures, and the `?` glossary explains
// every heading, the Incidents list's too.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/ui"
	"github.com/lagscope/lagscope/units"
)

// viewShots drives the UI over a feed: once the picture shows ready, it
// presses each step's keys in turn and keeps the picture after each.
type viewShots struct {
	m     tea.Model
	ready func(string) bool
	// updates: the picture must have taken in this many of the feed's
	// updates first (ui.FeedUpdates counts them); 0 for any.
	updates, seen int
	steps         []shotStep
	sized         bool
	shots         map[string]string
	done          bool
}

type shotStep struct {
	name string
	keys []tea.Msg
}

func (c *viewShots) Init() tea.Cmd { return c.m.Init() }

func (c *viewShots) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.WindowSizeMsg); ok {
		c.sized = true
	}
	c.seen += ui.FeedUpdates(msg)
	var cmd tea.Cmd
	c.m, cmd = c.m.Update(msg)
	if c.done || !c.sized || c.seen < c.updates || !c.ready(c.m.View()) {
		return c, cmd
	}
	c.done = true
	for _, s := range c.steps {
		for _, k := range s.keys {
			c.m, _ = c.m.Update(k) // the views' own commands (a trace asked for) are not needed here
		}
		c.shots[s.name] = c.m.View()
	}
	return c, tea.Quit
}

func (c *viewShots) View() string { return c.m.View() }

func keys(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}

var (
	keyTab  = tea.KeyMsg{Type: tea.KeyTab}
	keyPgDn = tea.KeyMsg{Type: tea.KeyPgDown}
)

func repeat(k tea.Msg, n int) []tea.Msg {
	out := make([]tea.Msg, n)
	for i := range out {
		out[i] = k
	}
	return out
}

// labelsAt is the moment: the demo's spike between you and ada, whose
// round trip is then in the span where the headroom moves it a rung.
const labelsAt = 20 * time.Second

// labelsRecording records the demo's first labelsAt as `lagscope demo
// --record` does and returns the file and the last View it holds.
func labelsRecording(t *testing.T) (string, feed.View) {
	t.Helper()
	updates := playDemo(t, labelsAt, 100*time.Millisecond)
	path := filepath.Join(t.TempDir(), "demo.lsrec")
	w, err := record.Create(path, record.Header{Program: "lagscope demo", Self: updates[0].View.Self, Started: time.Now().Format(time.RFC3339)})
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range updates {
		if i == len(updates)-1 {
			u.Done = true // the recorder keeps the last picture
		}
		w.Observe(u)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, updates[len(updates)-1].View
}

// replayShots replays the recording to its end and draws every view at
// w×h.
func replayShots(t *testing.T, path string, w, h int) map[string]string {
	t.Helper()
	rec, err := record.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := record.NewPlayer(ctx, rec, rec.Header.Self, 1)
	_, end, _, _ := p.Position()
	p.Seek(end) // straight to the moment: the picture a play to it shows
	m, err := ui.NewModel(p, ui.Options{NoColor: true, Output: io.Discard,
		Clock: func() time.Time { return time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	pos := "⏸ " + clockOf(end) + " / " + clockOf(end)
	c := &viewShots{m: m, shots: map[string]string{}, ready: func(v string) bool { return strings.Contains(v, pos) }, steps: []shotStep{
		{"Session", nil},
		{"Link", []tea.Msg{keyTab}},
		{"Players", []tea.Msg{keyTab}},
		{"Messages", []tea.Msg{keyTab}},
		// The Matrix's cursor to this machine's row (the top) and its
		// first column: the link the Link view shows.
		{"Matrix", append(append([]tea.Msg{keyTab}, keys(strings.Repeat("k", 8))...), keys(strings.Repeat("h", 8))...)},
		{"Diagnosis", []tea.Msg{keyTab}},
		{"Diagnosis2", repeat(keys("j")[0], h)},
		{"Path", []tea.Msg{keyTab}},
		{"Help", keys("?")},
	}}
	for i := range 16 {
		c.steps = append(c.steps, shotStep{fmt.Sprintf("Help%d", i+2), []tea.Msg{keyPgDn}})
	}
	if !runHeadless(t, c, w, h, 60*time.Second) {
		t.Fatalf("the replay never showed %q at %dx%d", pos, w, h)
	}
	return c.shots
}

// A table on screen: its headings found and, per row's first cell, the
// cells under each heading.
type screenTable struct {
	heads []string
	rows  map[string]map[string]string
}

// cellGap parts a row's cells: two spaces or more (a cell's own words,
// "rung 5", "you, master", "116 Fast", have one).
var cellGap = regexp.MustCompile(`\s{2,}`)

// tableHeadings is every heading a table of the views may have, today's
// and those it had before a label was given one meaning: a heading line
// is read as the longest of these at each word, and a word that is none
// of them is reported (the test must learn a new heading to judge it).
var tableHeadings = []string{
	"PLAYER", "STATE", "RTT ms", "RTT", "JITTER", "JIT", "RETRY ms", "RETRY", "TIMEOUT", "T/O", "RESENT", "RSND",
	"LOST IN", "LOST OUT", "IN", "OUT", "WAITED", "WAIT",
	"ROLE", "REPORT", "FRAME", "WORST RTT", "WORST WAIT", "LONGEST", "PROCESS ms", "PROCESS", "STATUS",
	"TOTAL", "MOSTLY FOR", "FROM╲TO",
	"SHARE ms", "SHARE", "JITTER ms", "OWN RTT ms", "OWN RTT", "OWN LOSS", "OWN JIT ms", "OWN JIT", "LOSS", "CAUSED", "WITHOUT", "CAUSES",
	"BETWEEN", "MEAN RTT", "EXPECTED", "EXCESS",
	"WHEN", "WHO", "CAUSE", "PEAK ms", "PEAK", "WHERE", "COST", "RUNGS",
}

// scanHeadings reads a heading line: the longest known heading at each
// word; unknown words are returned apart.
func scanHeadings(line string, extra []string) (heads, unknown []string) {
	known := append(slices.Clone(tableHeadings), extra...)
	slices.SortFunc(known, func(a, b string) int { return len(b) - len(a) })
	words := strings.Fields(line)
	for i := 0; i < len(words); {
		rest := strings.Join(words[i:], " ")
		found := ""
		for _, k := range known {
			if rest == k || strings.HasPrefix(rest, k+" ") {
				found = k
				break
			}
		}
		if found == "" {
			unknown = append(unknown, words[i])
			i++
			continue
		}
		heads = append(heads, found)
		i += len(strings.Fields(found))
	}
	return heads, unknown
}

// readTable reads the table whose heading line starts with first: its
// headings in order (extra: names its first line may hold, such as the
// Matrix's players), and each row's cells by their place, keyed by the
// row's first cell without its marks. It ends at a line that is not a
// row: a rule, a blank, a row seen before.
func readTable(t *testing.T, scr, first string, extra []string) screenTable {
	tb := screenTable{rows: map[string]map[string]string{}}
	lines := strings.Split(scr, "\n")
	hi := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), first+" ") {
			hi = i
			break
		}
	}
	if hi < 0 {
		return tb
	}
	var unknown []string
	tb.heads, unknown = scanHeadings(lines[hi], extra)
	for i, h := range tb.heads {
		tb.heads[i] = strings.TrimSuffix(h, " ms") // the unit is no part of the label
	}
	if len(unknown) > 0 {
		t.Errorf("a heading this test does not know, %q, in %q", unknown, lines[hi])
	}
	for _, l := range lines[hi+1:] {
		cells := cellGap.Split(strings.TrimSpace(l), -1)
		if len(cells) < 2 || strings.HasPrefix(cells[0], "─") {
			break
		}
		key := strings.TrimSpace(strings.TrimLeft(cells[0], "!> "))
		if _, seen := tb.rows[key]; seen || key == "" {
			break
		}
		row := map[string]string{}
		for i, c := range cells {
			if i < len(tb.heads) {
				row[tb.heads[i]] = c
			}
		}
		tb.rows[key] = row
	}
	return tb
}

// msOfCell reads a figure as milliseconds: "3.0s", "641ms", "12", "0.0";
// false for an unknown "—".
func msOfCell(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	mul := 1.0
	switch {
	case strings.HasSuffix(s, "ms"):
		s = strings.TrimSuffix(s, "ms")
	case strings.HasSuffix(s, "s"):
		s, mul = strings.TrimSuffix(s, "s"), 1000
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mul, err == nil
}

func TestEveryLabelMeansOneThingOnEveryView(t *testing.T) {
	path, last := labelsRecording(t)
	rec, err := record.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// The moment's own picture, as the replay shows it: the last View the
	// recording holds.
	var shown *feed.View
	for i := range rec.Records {
		if r := &rec.Records[i]; r.Kind == record.KindView && r.View.Self == last.Self {
			shown = r.View
		}
	}
	if shown == nil {
		t.Fatal("the recording holds no View")
	}
	fps := shown.FPS
	srtt := map[string]time.Duration{}
	for _, l := range shown.Links {
		srtt[l.Peer] = l.SRTT
	}
	headingsSeen := map[string]map[string]bool{} // heading → views
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		w, h := sz[0], sz[1]
		shots := replayShots(t, path, w, h)
		where := func(v string) string { return fmt.Sprintf("%s %dx%d", v, w, h) }
		note := func(view string, heads []string) {
			for _, x := range heads {
				if headingsSeen[x] == nil {
					headingsSeen[x] = map[string]bool{}
				}
				headingsSeen[x][view] = true
			}
		}

		// The link table.
		short := w < 120
		rttH, jitH, retryH, toH, waitH := "RTT", "JITTER", "RETRY", "TIMEOUT", "WAITED"
		if short {
			rttH, jitH, retryH, toH, waitH = "RTT", "JIT", "RETRY", "T/O", "WAIT"
		}
		table := readTable(t, shots["Session"], "PLAYER", []string{"history", "round trip history"})
		note("Session", table.heads)
		if len(table.rows) < 3 || !slices.Contains(table.heads, rttH) {
			t.Fatalf("%s: the link table has %d rows:\n%s", where("Session"), len(table.rows), shots["Session"])
		}

		// The Link view: the first link, a figure a line (the ladder
		// may stand beside them).
		var m []string
		if t := regexp.MustCompile(`Link (\S+) → (\S+) `).FindStringSubmatch(shots["Link"]); t != nil {
			m = t[:3]
			for _, re := range []string{`round trip ± jitter +(\S+) ± (\S+) ms`, `resend after +(\S+) ms`, `connection timeout +(\S+)`, `we waited for it +(\S+)`} {
				if f := regexp.MustCompile(re).FindStringSubmatch(shots["Link"]); f != nil {
					m = append(m, f[1:]...)
				}
			}
		}
		if len(m) != 8 {
			t.Fatalf("%s: no link figures:\n%s", where("Link"), shots["Link"])
		}
		peer := m[2]
		row := table.rows[peer]
		for _, c := range []struct{ label, table, other, where string }{
			{"round trip", row[rttH], m[3], "Link"},
			{"jitter", row[jitH], m[4], "Link"},
			{"retry", row[retryH], m[5], "Link"},
			{"timeout", row[toH], m[6], "Link"},
			{"waited", row[waitH], m[7], "Link"},
		} {
			if c.table != c.other || c.table == "" {
				t.Errorf("%s: %s to %s is %q in the link table, %q in the Link view", where(c.where), c.label, peer, c.table, c.other)
			}
		}

		// The Matrix: this machine's row, and the detail of its link to
		// the same player.
		mx := shots["Matrix"]
		grid := readTable(t, mx, "FROM╲TO", append([]string{}, func() []string {
			var names []string
			for _, p := range shown.Players {
				if !p.Observer {
					names = append(names, p.Name)
				}
			}
			return names
		}()...))
		self := grid.rows[shown.Self]
		for p, rtt := range srtt {
			cell := strings.Fields(strings.Trim(self[p], "> "))
			if len(cell) == 0 {
				t.Errorf("%s: no cell %s → %s:\n%s", where("Matrix"), shown.Self, p, mx)
				continue
			}
			if cell[0] != table.rows[p][rttH] {
				t.Errorf("%s: %s → %s reads %q in the Matrix, %q in the link table", where("Matrix"), shown.Self, p, cell[0], table.rows[p][rttH])
			}
			// The cell's tier is `rung --rtt` with headroom for its round trip.
			want := rungAnswer(t, rtt, fps)
			if len(cell) > 1 && !strings.HasPrefix(want.tier, strings.TrimSpace(cell[1])) {
				t.Errorf("%s: the cell %s → %s says %q; lagscope rung --rtt %v with headroom: %s (rung %d)", where("Matrix"), shown.Self, p, cell[1], rtt, want.tier, want.rung)
			}
		}
		fm := strings.Join(strings.Fields(mx), " ")
		d := regexp.MustCompile(regexp.QuoteMeta(shown.Self+" → "+peer) + ` \S+ round trip (\S+) ± (\S+) ms resend after (\S+) ms timeout (\S+) needs (\S+) \(rung (\d+)\) with headroom .*?` +
			regexp.QuoteMeta(shown.Self+" waited for "+peer) + ` (\S+)`).FindStringSubmatch(fm)
		if d == nil {
			t.Fatalf("%s: no detail of %s → %s:\n%s", where("Matrix"), shown.Self, peer, mx)
		}
		for i, c := range []struct{ label, want string }{{"round trip", row[rttH]}, {"jitter", row[jitH]}, {"retry", row[retryH]}, {"timeout", row[toH]}} {
			if d[i+1] != c.want {
				t.Errorf("%s: the detail's %s %q, the link table's %q", where("Matrix"), c.label, d[i+1], c.want)
			}
		}
		if d[7] != row[waitH] {
			t.Errorf("%s: the detail's wait for %s %q, the link table's %q", where("Matrix"), peer, d[7], row[waitH])
		}
		want := rungAnswer(t, srtt[peer], fps)
		t.Logf("%dx%d: %s → %s %v: needs %s (rung %s) with headroom", w, h, shown.Self, peer, srtt[peer], d[5], d[6])
		if d[5] != want.tier || d[6] != strconv.Itoa(want.rung) {
			t.Errorf("%s: %s → %s needs %s (rung %s) with headroom; lagscope rung --rtt %v --fps %d: %s (rung %d) with headroom",
				where("Matrix"), shown.Self, peer, d[5], d[6], srtt[peer], fps, want.tier, want.rung)
		}

		// Players' figures: processing time in three views.
		players := readTable(t, shots["Players"], "PLAYER", nil)
		note("Players", players.heads)
		waits := readTable(t, mx, "PLAYER", nil)
		note("Matrix", waits.heads)
		diagScr := shots["Diagnosis"] + "\n" + shots["Diagnosis2"]
		diag := readTable(t, diagScr, "PLAYER", nil)
		note("Diagnosis", diag.heads)
		note("Diagnosis", readTable(t, diagScr, "BETWEEN", nil).heads)
		// The Incidents list: ada's incident is open at this moment.
		incidents := readTable(t, diagScr, "WHEN", nil)
		note("Diagnosis", incidents.heads)
		if len(incidents.heads) < 9 || len(incidents.rows) == 0 {
			t.Errorf("%s: no Incidents list (%q, %d rows):\n%s", where("Diagnosis"), incidents.heads, len(incidents.rows), diagScr)
		}
		compared := 0
		for name, pr := range players.rows {
			a, ok := msOfCell(pr["PROCESS"])
			if !ok {
				continue
			}
			for view, tb := range map[string]screenTable{"Matrix": waits, "Diagnosis": diag} {
				if r, ok := tb.rows[name]; ok {
					if b, ok := msOfCell(r["PROCESS"]); !ok || math.Abs(a-b) > 0.05 {
						t.Errorf("%s: %s's PROCESS %q, the Players view's %q", where(view), name, r["PROCESS"], pr["PROCESS"])
					}
					compared++
				}
			}
		}
		if compared < 4 {
			t.Errorf("%dx%d: only %d processing times compared", w, h, compared)
		}

		// The glossary explains every heading.
		var help strings.Builder
		for k, v := range shots {
			if strings.HasPrefix(k, "Help") {
				help.WriteString(v + "\n")
			}
		}
		terms := map[string]bool{}
		for _, l := range strings.Split(help.String(), "\n") {
			if len(l) > 2 && l[:2] == "  " {
				for _, term := range strings.Split(strings.TrimSpace(string([]rune(l)[:min(16, len([]rune(l)))])), ", ") {
					terms[strings.TrimSpace(term)] = true
				}
			}
		}
		for x := range headingsSeen {
			if slices.Contains([]string{"PLAYER", "ROLE", "STATE", "FRAME", "CAUSES", "MOSTLY FOR", "BETWEEN", "STATUS", "WHO", "CAUSE", "history", "round trip history"}, x) {
				continue // words, not figures, and the sparkline
			}
			if !terms[x] {
				t.Errorf("%dx%d: the ? glossary does not explain %q", w, h, x)
			}
		}
	}
	// A heading in two views is one figure: only PROCESS (compared above)
	// and columns of words (a player's name, a link's or an incident's
	// state, causes) are shared.
	for x, views := range headingsSeen {
		if len(views) > 1 && !slices.Contains([]string{"PLAYER", "PROCESS", "CAUSES", "STATE"}, x) {
			t.Errorf("the heading %q is in %v: two figures under one label", x, views)
		}
	}
}

// rungAnswer is `lagscope rung --rtt RTT --fps N --json`'s answer with
// headroom.
type rungHeadroom struct {
	tier string
	rung int
}

func rungAnswer(t *testing.T, rtt time.Duration, fps int) rungHeadroom {
	t.Helper()
	var out, errb bytes.Buffer
	ms := strconv.FormatFloat(units.Millis(rtt), 'f', -1, 64)
	if code := run([]string{"rung", "--rtt", ms, "--fps", strconv.Itoa(fps), "--json"}, &out, &errb); code != 0 {
		t.Fatalf("lagscope rung --rtt %s: exit %d: %s", ms, code, errb.String())
	}
	var a struct {
		Headroom struct {
			Rung int    `json:"rung"`
			Tier string `json:"tier"`
		} `json:"headroom"`
	}
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	return rungHeadroom{a.Headroom.Tier, a.Headroom.Rung}
}
