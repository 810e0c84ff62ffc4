package ui

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// model builds a model on feed with updates applied, at w×h, without a
// running program: Update and View are called directly.
func model(t testing.TB, fd feed.Feed, w, h int, updates []feed.Update) *tuiModel {
	t.Helper()
	m, err := newModel(fd, Options{NoColor: true, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	m.tick = fakeTick
	for _, u := range updates {
		m.Update(updateMsg{u})
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// tickPending stands for a timer that was armed: fakeTick reports it at
// once instead of waiting.
type tickPending struct{ d time.Duration }

func fakeTick(d time.Duration, _ func(time.Time) tea.Msg) tea.Cmd {
	return func() tea.Msg { return tickPending{d} }
}

func press(m *tuiModel, msgs ...tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	for _, msg := range msgs {
		_, cmd = m.Update(msg)
	}
	return cmd
}

var (
	keyUp    = tea.KeyMsg{Type: tea.KeyUp}
	keyDown  = tea.KeyMsg{Type: tea.KeyDown}
	keyEnter = tea.KeyMsg{Type: tea.KeyEnter}
	keyEsc   = tea.KeyMsg{Type: tea.KeyEsc}
	keyRight = tea.KeyMsg{Type: tea.KeyRight}
	keyLeft  = tea.KeyMsg{Type: tea.KeyLeft}
	shiftTab = tea.KeyMsg{Type: tea.KeyShiftTab}
	ctrlC    = tea.KeyMsg{Type: tea.KeyCtrlC}
)

// runCmd runs a command and every command it batches, returning the
// messages they produce.
func runCmd(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, runCmd(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

func hasMsg[T any](msgs []tea.Msg) bool {
	for _, m := range msgs {
		if _, ok := m.(T); ok {
			return true
		}
	}
	return false
}

func TestQuitSendsQuitControlThenLeavesOnDone(t *testing.T) {
	fd := newStaticFeed(fixtureUpdates()...)
	m := model(t, fd, 120, 40, nil)
	msgs := runCmd(press(m, typed("q")))
	if !hasMsg[tickPending](msgs) {
		t.Error("quitting should arm the fallback timer")
	}
	for _, msg := range msgs {
		if tp, ok := msg.(tickPending); ok && tp.d != time.Second {
			t.Errorf("fallback after %v, want 1s", tp.d)
		}
	}
	if c := fd.Controls(); len(c) != 1 || !c[0].Quit {
		t.Fatalf("controls after q = %+v, want one Quit", c)
	}
	if !strings.Contains(m.View(), "QUITTING") {
		t.Error("header should say the UI is quitting")
	}
	// The feed answers with Done: the UI ends.
	var last feed.Update
	for u := range fd.Updates() {
		last = u
	}
	if !last.Done {
		t.Fatal("static feed did not end with Done")
	}
	if msgs := runCmd(press(m, updateMsg{last})); !hasMsg[tea.QuitMsg](msgs) {
		t.Errorf("Done while quitting should quit, got %v", msgs)
	}
}

func TestCtrlCQuitsLikeQ(t *testing.T) {
	fd := newStaticFeed()
	m := model(t, fd, 120, 40, fixtureUpdates())
	runCmd(press(m, ctrlC))
	if c := fd.Controls(); len(c) != 1 || !c[0].Quit {
		t.Fatalf("controls after ctrl+c = %+v, want one Quit", c)
	}
	// A second press does not send another Quit.
	runCmd(press(m, ctrlC))
	if c := fd.Controls(); len(c) != 1 {
		t.Fatalf("second ctrl+c sent another control: %+v", c)
	}
}

func TestQuitTimeoutLeavesWithoutDone(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	if msgs := runCmd(press(m, quitTimeout{})); !hasMsg[tea.QuitMsg](msgs) {
		t.Errorf("the quit fallback should quit, got %v", msgs)
	}
}

// An engine that never answers Quit: the program still ends, a moment
// after q (the program is real; the wait is shortened for the test).
func TestQuitWithSilentEngineStillExits(t *testing.T) {
	fd := newStaticFeed(fixtureUpdates()...)
	fd.QuitIgnored = true
	m, err := newModel(fd, Options{NoColor: true, Output: io.Discard, QuitWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	t.Cleanup(func() { fd.Close(); close(m.stop) })
	waitFor(t, tm, "t 01:40")
	tm.Send(typed("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	if c := fd.Controls(); len(c) != 1 || !c[0].Quit {
		t.Fatalf("controls = %+v, want one Quit", c)
	}
}

func TestFeedDoneEndsUIUnlessKeptOpen(t *testing.T) {
	done := feed.Update{View: fixtureView(5), Done: true}
	m := model(t, newStaticFeed(), 120, 40, nil)
	if msgs := runCmd(press(m, updateMsg{done})); !hasMsg[tea.QuitMsg](msgs) {
		t.Error("Done should end the UI")
	}
	k, err := newModel(newStaticFeed(), Options{NoColor: true, Output: io.Discard, KeepOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	k.tick = fakeTick
	k.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	if msgs := runCmd(press(k, updateMsg{done})); hasMsg[tea.QuitMsg](msgs) {
		t.Error("KeepOpen: Done should not end the UI")
	}
	if !strings.Contains(k.View(), "ENDED") {
		t.Error("header should say the session ended")
	}
	// Then q leaves at once: there is nobody left to tell.
	if msgs := runCmd(press(k, typed("q"))); !hasMsg[tea.QuitMsg](msgs) {
		t.Error("q after Done should quit at once")
	}
}

func TestTabCyclesViews(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	want := []string{"Link alice → bob", "Who made us wait", "in all", "Matrix  row → column", "who and what holds", "Path · bob", "Round trip · bob"}
	for _, w := range want {
		press(m, tab)
		if !strings.Contains(m.View(), w) {
			t.Fatalf("after tab: %q not on screen:\n%s", w, m.View())
		}
	}
	press(m, shiftTab)
	if !strings.Contains(m.View(), "Path · bob") {
		t.Fatal("shift+tab should go back to Path")
	}
	press(m, shiftTab)
	if !strings.Contains(m.View(), "who and what holds") {
		t.Fatal("shift+tab should go back to Diagnosis")
	}
}

func TestArrowsAndEnterFocusALink(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	// The worst link (bob, the longest round trip) is focused at first.
	if !strings.Contains(m.View(), "Round trip · bob") {
		t.Fatal("the worst link should be focused by default")
	}
	press(m, keyDown)
	if m.table.selected != "carol" || !strings.Contains(m.View(), "Round trip · bob") {
		t.Fatalf("↓ should only move the cursor: selected %q", m.table.selected)
	}
	press(m, keyEnter)
	if !strings.Contains(m.View(), "Round trip · carol") {
		t.Fatal("enter should focus carol")
	}
	press(m, keyDown, keyDown, keyDown, keyDown)
	if m.table.selected != "erin" {
		t.Fatalf("cursor should stop at the last link, at %q", m.table.selected)
	}
	press(m, keyUp)
	if m.table.selected != "dave" {
		t.Fatalf("↑ should move back, at %q", m.table.selected)
	}
}

func TestOptionsDialogShowsRungAndSendsSpeed_S17(t *testing.T) {
	fd := newStaticFeed()
	m := model(t, fd, 120, 40, fixtureUpdates())
	press(m, typed("o"))
	v := m.View()
	inForce := m.live.view.InForce
	if !strings.Contains(v, inForce.Label()) || !strings.Contains(v, "(rung 5)") {
		t.Fatalf("dialog lacks the Connection label %q:\n%s", inForce.Label(), v)
	}
	// alice is the master here: the dialog says who sets it, in the
	// second person, never that the master does it elsewhere.
	if !strings.Contains(v, "you are the master") || strings.Contains(v, "the session's master sets it") {
		t.Errorf("the Connection slider should say that the master's own machine sets it:\n%s", v)
	}
	// The knob of the mirrored slider sits at rung 5's place: rung 10 is
	// the left end, rung 1 the right end.
	track := ""
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, "Bad  ├") {
			track = l[strings.Index(l, "├"):]
		}
	}
	knob := strings.Index(track, "●")
	if knob < 0 {
		t.Fatalf("no knob on the Connection slider:\n%s", v)
	}
	if pos := (len([]rune(track[:knob])) - 1) / 3; pos != inForce.SliderPosition() {
		t.Errorf("knob at position %d, want %d (SliderPosition)", pos, inForce.SliderPosition())
	}
	press(m, keyRight, keyRight, keyLeft)
	if !strings.Contains(m.View(), "35 fps") {
		t.Fatalf("speed slider should point at 35:\n%s", m.View())
	}
	runCmd(press(m, keyEnter))
	if c := fd.Controls(); len(c) != 1 || c[0].Speed != 35 || c[0].Quit {
		t.Fatalf("controls = %+v, want Speed 35", c)
	}
	if m.dialog != nil {
		t.Error("enter should close the dialog")
	}
	press(m, typed("o"), keyEsc)
	if m.dialog != nil {
		t.Error("esc should close the dialog")
	}
}

// Every rung's label reads tier and rung, and the knob moves right as the
// rung falls (S17: mirrored, rung 1 at the right end).
func TestConnectionSliderMirrored_S17(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, nil)
	prev := -1
	for n := rungs.Rungs; n >= 1; n-- {
		lines := newDialog(m.ctx, &feed.View{}).connectionSlider(rungs.RungTiming(n))
		knob := len([]rune(lines[0][:strings.Index(lines[0], "●")]))
		if knob <= prev {
			t.Fatalf("rung %d knob at %d, not right of rung %d's %d", n, knob, n+1, prev)
		}
		prev = knob
	}
	if got := rungs.RungTiming(2).Label(); got != "Fast (rung 2)" {
		t.Fatalf("label %q", got)
	}
}

func TestPauseFreezesDisplayButKeepsMeasuring(t *testing.T) {
	ups := fixtureUpdates()
	m := model(t, newStaticFeed(), 120, 40, ups[:50])
	press(m, typed(" "))
	frozen := m.View()
	if !strings.Contains(frozen, "PAUSED") {
		t.Fatal("header should say PAUSED")
	}
	for _, u := range ups[50:] {
		m.Update(updateMsg{u})
	}
	if got := m.View(); got != frozen {
		t.Fatalf("display changed while paused:\n%s\nwas\n%s", got, frozen)
	}
	if n := len(m.live.msgs); n != 6 {
		t.Errorf("live session has %d messages, want all 6 (events are never lost)", n)
	}
	press(m, typed(" "))
	if v := m.View(); !strings.Contains(v, "t 01:40") || strings.Contains(v, "PAUSED") {
		t.Fatalf("after unpausing the newest picture should show:\n%s", v)
	}
}

func TestThemeKeyCyclesThemes(t *testing.T) {
	m, err := newModel(newStaticFeed(), Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	seen := []string{m.Theme()}
	for i := 0; i < 5; i++ {
		press(m, typed("t"))
		seen = append(seen, m.Theme())
	}
	want := []string{"dark", "light", "high-contrast", "colour-blind", "monochrome", "dark"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("themes %v, want %v", seen, want)
	}
}

func TestNoColorEnvPicksMonochrome(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	m, err := newModel(newStaticFeed(), Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if m.Theme() != "monochrome" {
		t.Errorf("theme %q under NO_COLOR, want monochrome", m.Theme())
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for _, u := range fixtureUpdates() {
		m.Update(updateMsg{u})
	}
	v := m.View()
	// Attributes stay (bold 1, underline 4, reverse 7); colours go: no
	// foreground or background code (30–37, 38;…, 39, 40–49, 90–107).
	if !strings.Contains(v, "\x1b[") {
		t.Error("NO_COLOR: the picture has no attributes: the active tab is not marked")
	}
	for _, m := range regexp.MustCompile(`\x1b\[([0-9;]*)m`).FindAllStringSubmatch(v, -1) {
		for _, p := range strings.Split(m[1], ";") {
			if n, err := strconv.Atoi(p); err == nil && (n >= 30 && n <= 49 || n >= 90 && n <= 107) {
				t.Fatalf("NO_COLOR: a colour code %q in the picture", m[0])
			}
		}
	}
	if _, err := newModel(newStaticFeed(), Options{Theme: "nope"}); err == nil {
		t.Error("an unknown theme should be an error")
	}
}

// In colour, each tier gets its own look in every theme (tier colours
// carry meaning), and the tier is written as a word too.
func TestTierStylesDifferInEveryTheme(t *testing.T) {
	m, err := newModel(newStaticFeed(), Options{Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	m.r.SetColorProfile(0) // TrueColor
	for i := 0; i < 5; i++ {
		seen := map[string]rungs.Tier{}
		for tier := rungs.Fast; tier <= rungs.Bad; tier++ {
			if out := stripANSI(m.st.tierStyle(tier).Render(tier.String())); out != tier.String() {
				t.Errorf("%s: tier %v written as %q", m.Theme(), tier, out)
			}
			look := m.st.tierStyle(tier).Render("x")
			if other, dup := seen[look]; dup {
				t.Errorf("%s: tiers %v and %v look alike", m.Theme(), other, tier)
			}
			seen[look] = tier
		}
		press(m, typed("t"))
	}
}

func TestSortKeys(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	order := func() string {
		var names []string
		for _, h := range m.table.sorted(m.display()) {
			names = append(names, h.peer)
		}
		return strings.Join(names, ",")
	}
	if got := order(); got != "bob,carol,dave,erin" {
		t.Fatalf("house order %s", got)
	}
	press(m, typed("s"), typed("s"), typed("s")) // peer, state, SRTT
	if m.table.sortBy != sortSRTT {
		t.Fatalf("sort key %v", m.table.sortBy)
	}
	// Longest first; erin's unknown SRTT always last.
	if got := order(); got != "bob,dave,carol,erin" {
		t.Fatalf("by SRTT %s", got)
	}
	press(m, typed("S"))
	if got := order(); got != "carol,dave,bob,erin" {
		t.Fatalf("by SRTT reversed %s (unknown stays last)", got)
	}
	// The arrow follows the whole heading: the unit stays.
	if !strings.Contains(m.View(), "RTT ms▲") {
		t.Errorf("the sort column should be marked after its heading and unit:\n%s", m.View())
	}
}

func TestMouseClickWheelAndTabs(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	m.View()
	y := m.hits.tableY
	click := func(x, y int) {
		press(m, tea.MouseMsg{X: x, Y: y, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
		m.View()
	}
	click(5, y+3) // dave's row
	if m.charts.focus != "dave" || !strings.Contains(m.View(), "Round trip · dave") {
		t.Fatalf("click on a row should focus it, focus %q", m.charts.focus)
	}
	press(m, tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelUp})
	if m.table.selected != "carol" {
		t.Fatalf("wheel up should move the cursor up, at %q", m.table.selected)
	}
	// Click the SRTT heading: sort by it.
	for i, k := range m.hits.colKeys {
		if k == sortSRTT {
			click(m.hits.cols[i].from, y)
		}
	}
	if m.table.sortBy != sortSRTT {
		t.Fatalf("heading click sorted by %v", m.table.sortBy)
	}
	click(m.hits.tabs[2].from, 0)
	if m.screen != 2 || !strings.Contains(m.View(), "Who made us wait") {
		t.Fatal("clicking a tab should open it")
	}
}

func TestResizeReflowsAndTooSmallSaysWhatIsNeeded(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {200, 60}, {120, 40}} {
		press(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		checkSize(t, m.View(), sz[0], sz[1])
	}
	press(m, tea.WindowSizeMsg{Width: 60, Height: 20})
	if v := m.View(); !strings.Contains(v, "at least 80×24") || !strings.Contains(v, "60×20") {
		t.Fatalf("too-small message:\n%s", v)
	}
	press(m, tea.WindowSizeMsg{Width: 80, Height: 23})
	if !strings.Contains(m.View(), "at least 80×24") {
		t.Fatal("80×23 is too small")
	}
}

// The picture is cached until something changes: the renderer's ticks on
// an idle screen cost nothing (redraw at most 10 times a second).
func TestViewIsCachedUntilSomethingChanges(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	m.View()
	n := m.renders
	for i := 0; i < 10; i++ {
		m.View()
	}
	if m.renders != n {
		t.Fatalf("%d renders without a change", m.renders-n)
	}
	m.Update(updateMsg{feed.Update{View: fixtureView(101)}})
	m.View()
	if m.renders != n+1 {
		t.Fatalf("an update should redraw once, drew %d", m.renders-n)
	}
}

// Unknown is "—", never 0 (L3): erin has no round trip and no report from
// the peer.
func TestUnknownIsDashNeverZero_L3(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	var row string
	for _, l := range strings.Split(m.View(), "\n") {
		if strings.Contains(l, "erin") && strings.Contains(l, "unmeasured") {
			row = l
		}
	}
	f := strings.Fields(row)
	// peer state SRTT VAR RTO CONN RESEND IN OUT WAIT
	if len(f) < 10 {
		t.Fatalf("erin's row %q", row)
	}
	for i, col := range map[int]string{2: "SRTT", 3: "RTTVAR", 7: "in loss", 8: "out loss"} {
		if f[i] != unknown {
			t.Errorf("%s = %q, want %s", col, f[i], unknown)
		}
	}
	if f[4] != "1000" {
		t.Errorf("RTO %q: an unmeasured link still has its fixed retry interval (T9)", f[4])
	}
}

// Messages come newest first, each with the session time it happened at
// and no frame number (the header has the frame).
func TestMessagesNewestFirstWithTime_S18(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	press(m, tab, tab, tab)
	v := m.View()
	line := func(time, text string) int {
		for i, l := range strings.Split(v, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == time && strings.Contains(l, "  "+text) {
				return i
			}
		}
		return -1
	}
	first := line("01:35", "Connection quality target: Fast")
	second := line("01:10", "frank left the session")
	oldest := line("00:00", "you are the master") // alice is this machine
	if first < 0 || second < 0 || oldest < 0 || !(first < second && second < oldest) {
		t.Fatalf("messages not newest first with their time (%d %d %d):\n%s", first, second, oldest, v)
	}
	if regexp.MustCompile(`(?m)^\d\d:\d\d +f\d+ `).MatchString(v) {
		t.Errorf("a message carries a frame number:\n%s", v)
	}
	press(m, keyDown)
	if strings.Contains(m.View(), "target: Fast") {
		t.Error("↓ should scroll the list past the newest message")
	}
}

func TestLadderMarksInForceTargetAndStagedSteps_S12(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	v := m.View()
	for _, want := range []string{"5/15   Normal", "in force", "target", "staged 5/15 › 2/10 › 2/8 › 2/6"} {
		if !strings.Contains(v, want) {
			t.Errorf("ladder lacks %q:\n%s", want, v)
		}
	}
}

func TestLadderShowsExtendedLookAheadPastRung10_S4(t *testing.T) {
	u := fixtureUpdates()
	last := &u[len(u)-1].View
	last.InForce, last.Target, last.Staged = rungs.Timing{SendPeriod: 10, LookAhead: 40}, rungs.Timing{SendPeriod: 10, LookAhead: 40}, false
	m := model(t, newStaticFeed(), 120, 40, u)
	lines := strings.Split(m.View(), "\n")
	ext, r10 := -1, -1
	for i, l := range lines {
		if strings.Contains(l, "10/40") && strings.Contains(l, "Bad") && strings.Contains(l, "in force") {
			ext = i
		}
		if strings.Contains(l, "10 10/30") {
			r10 = i
		}
	}
	if ext < 0 || r10 < 0 || ext > r10 {
		t.Fatalf("extended row %d should sit above rung 10's row %d:\n%s", ext, r10, strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[1], "10/40") || !strings.Contains(lines[1], "BAD") {
		t.Errorf("header should show 10/40 and BAD: %q", lines[1])
	}
}
