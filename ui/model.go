package ui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/themes"
	"github.com/muesli/termenv"
)

// Minimum terminal size the UI draws in; below it a short message says what
// is needed.
const (
	MinWidth  = 80
	MinHeight = 24
)

// redrawFPS caps how often the screen is redrawn (issue 6: at most ten times
// a second), which also keeps an idle UI cheap.
const redrawFPS = 10

// quitWait is how long `q` waits for the engine to say it is done before the
// UI leaves anyway.
const quitWait = time.Second

// Options configure the UI.
type Options struct {
	// Theme names a palette of package themes; "" is the default (dark, or
	// monochrome when NO_COLOR is set).
	Theme string
	// NoColor draws without colours or text attributes. NO_COLOR in the
	// environment (any non-empty value) has the same effect.
	NoColor bool
	// Input and Output default to the process's terminal.
	Input  io.Reader
	Output io.Writer
	// KeepOpen keeps the last picture on screen after the feed is done,
	// until the user quits; otherwise the UI ends with the feed.
	KeepOpen bool
	// Clock, when set, adds the wall-clock time to the header.
	Clock func() time.Time
	// NoMouse turns mouse reporting off.
	NoMouse bool
	// QuitWait is how long quitting waits for the feed's Done; 0 is one
	// second.
	QuitWait time.Duration
}

// Model is the bubbletea model of the UI. Use NewModel and Run; the zero
// value is not usable.
type Model struct {
	feed probe.Feed
	// playback is the feed's replay controls, nil for a live feed.
	playback Playback
	opts     Options
	stop     chan struct{} // closed by Run when the program ends

	r     *lipgloss.Renderer
	st    styles
	keys  keyMap
	help  help.Model
	w, h  int
	live  *session
	shown *session // frozen copy while paused; nil otherwise

	screen   int
	selected string // the link under the cursor, by peer
	focus    string // the focused link; "" follows the worst link
	sortBy   sortKey
	sortDesc bool
	tableTop int // first row of the table shown
	msgTop   int // first message shown on the Messages view
	mx       matrixCursor

	showHelp bool
	dialog   *optionsDialog
	paused   bool
	quitting bool
	feedDone bool

	// tick makes a timer command; tests replace it so that no test waits
	// on the wall clock.
	tick func(time.Duration, func(time.Time) tea.Msg) tea.Cmd

	rtt *rttCanvas // the round-trip chart, kept between pictures

	cache   string
	dirty   bool
	renders int    // pictures drawn, for tests of the redraw cache
	hits    hitMap // where things were drawn, for the mouse
}

// NewModel builds the UI's model on feed. It fails only for an unknown
// theme name.
func NewModel(feed probe.Feed, opts Options) (*Model, error) {
	if opts.QuitWait <= 0 {
		opts.QuitWait = quitWait
	}
	noColor := opts.NoColor || os.Getenv("NO_COLOR") != ""
	name := opts.Theme
	if name == "" {
		name = themes.Default
		if noColor {
			name = "monochrome"
		}
	}
	th, ok := themes.ByName(name)
	if !ok {
		return nil, fmt.Errorf("ui: unknown theme %q (themes: %s)", opts.Theme, strings.Join(themes.Names(), ", "))
	}
	out := opts.Output
	if out == nil {
		out = os.Stdout
	}
	r := lipgloss.NewRenderer(out)
	if noColor {
		r.SetColorProfile(termenv.Ascii)
	}
	m := &Model{feed: feed, opts: opts, stop: make(chan struct{}), r: r, keys: newKeyMap(), help: help.New(), live: newSession(), dirty: true, tick: tea.Tick}
	if pb, ok := feed.(Playback); ok {
		m.playback, m.keys.replay = pb, true
	}
	m.setTheme(th)
	return m, nil
}

func (m *Model) setTheme(t themes.Theme) {
	m.st = newStyles(m.r, t)
	m.help.Styles.ShortKey = m.st.accent
	m.help.Styles.FullKey = m.st.accent
	m.help.Styles.ShortDesc = m.st.muted
	m.help.Styles.FullDesc = m.st.muted
	m.help.Styles.ShortSeparator = m.st.border
	m.help.Styles.FullSeparator = m.st.border
	m.help.Styles.Ellipsis = m.st.border
}

// Theme is the name of the theme in use.
func (m *Model) Theme() string { return m.st.theme.Name }

// Run shows the UI on the terminal until the user quits or the feed ends.
// It returns the feed's error, if it ended with one.
func Run(feed probe.Feed, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	m, err := NewModel(feed, opts)
	if err != nil {
		return err
	}
	defer close(m.stop)
	popts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithFPS(redrawFPS)}
	if !opts.NoMouse {
		popts = append(popts, tea.WithMouseCellMotion())
	}
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	final, err := tea.NewProgram(m, popts...).Run()
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return err
	}
	if fm, ok := final.(*Model); ok && fm.live.err != nil {
		return fm.live.err
	}
	return nil
}

// Messages the model receives besides bubbletea's own.
type (
	updateMsg     struct{ u probe.Update }
	feedClosedMsg struct{}
	quitTimeout   struct{}
)

// waitFeed is the bridge from engine to UI: a command that waits for the
// next update (or for the program to end, so it never outlives it).
func (m *Model) waitFeed() tea.Cmd {
	ch, stop := m.feed.Updates(), m.stop
	return func() tea.Msg {
		select {
		case u, ok := <-ch:
			if !ok {
				return feedClosedMsg{}
			}
			return updateMsg{u}
		case <-stop:
			return nil
		}
	}
}

// control sends c to the engine off the UI's goroutine, so a slow engine
// can never freeze the screen.
func (m *Model) control(c probe.Control) tea.Cmd {
	f := m.feed
	return func() tea.Msg {
		f.Control(c)
		return nil
	}
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return m.waitFeed() }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case updateMsg:
		if m.playback != nil && m.live.have && msg.u.View.At < m.live.view.At {
			// A replay sought back: it hands out every event from the
			// start again, and the picture starts over with them.
			m.live = newSession()
		}
		m.live.apply(msg.u)
		if !m.paused {
			m.dirty = true
		}
		if msg.u.Done {
			return m, m.ended()
		}
		return m, m.waitFeed()
	case feedClosedMsg:
		m.live.done = true
		m.dirty = true
		return m, m.ended()
	case quitTimeout:
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.dirty = true
		return m, nil
	case tea.KeyMsg:
		m.dirty = true
		return m, m.key(msg)
	case tea.MouseMsg:
		m.dirty = true
		m.mouse(msg)
		return m, nil
	}
	return m, nil
}

// ended handles the end of the feed.
func (m *Model) ended() tea.Cmd {
	m.feedDone = true
	m.dirty = true
	if m.quitting || !m.opts.KeepOpen {
		return tea.Quit
	}
	return nil
}

func (m *Model) quit() tea.Cmd {
	if m.feedDone {
		return tea.Quit
	}
	if m.quitting {
		return nil
	}
	m.quitting = true
	return tea.Batch(m.control(probe.Control{Quit: true}),
		m.tick(m.opts.QuitWait, func(time.Time) tea.Msg { return quitTimeout{} }))
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	if key.Matches(msg, k.Quit) {
		return m.quit()
	}
	if m.dialog != nil {
		return m.dialogKey(msg)
	}
	if m.showHelp {
		if key.Matches(msg, k.Help, k.Close) {
			m.showHelp = false
		}
		return nil
	}
	if m.playback != nil && m.playbackKey(msg) {
		return nil
	}
	if sc := screens[m.screen]; sc.key != nil && sc.key(m, msg) {
		return nil
	}
	switch {
	case key.Matches(msg, k.Help):
		m.showHelp = true
	case key.Matches(msg, k.NextView):
		m.screen = (m.screen + 1) % len(screens)
	case key.Matches(msg, k.PrevView):
		m.screen = (m.screen + len(screens) - 1) % len(screens)
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(+1)
	case key.Matches(msg, k.PageUp):
		m.move(-10)
	case key.Matches(msg, k.PageDown):
		m.move(+10)
	case key.Matches(msg, k.Focus):
		if m.selected != "" {
			m.focus = m.selected
		}
	case key.Matches(msg, k.Options):
		m.openDialog()
	case key.Matches(msg, k.Pause):
		m.togglePause()
	case key.Matches(msg, k.Theme):
		m.setTheme(themes.Next(m.st.theme.Name))
	case key.Matches(msg, k.Sort):
		m.sortBy = (m.sortBy + 1) % sortKeys
		m.sortDesc = m.sortBy != sortHouse && m.sortBy != sortPeer
	case key.Matches(msg, k.Reverse):
		m.sortDesc = !m.sortDesc
	}
	return nil
}

func (m *Model) togglePause() {
	m.paused = !m.paused
	if m.paused {
		m.shown = m.live.clone()
	} else {
		m.shown = nil
	}
}

// display is the session being drawn: the frozen copy while paused.
func (m *Model) display() *session {
	if m.shown != nil {
		return m.shown
	}
	return m.live
}

// move moves the cursor through the link table, or scrolls the message list
// on the Messages view.
func (m *Model) move(d int) {
	if screens[m.screen].scrolls {
		m.msgTop = max(0, min(m.msgTop+d, len(m.display().msgs)-1))
		return
	}
	links := m.sorted(m.display())
	if len(links) == 0 {
		return
	}
	i := indexOf(links, m.selected)
	if i < 0 {
		i = 0
		if d < 0 {
			d = 0
		}
	}
	i = max(0, min(len(links)-1, i+d))
	m.selected = links[i].peer
	if screens[m.screen].focusFollowsCursor {
		m.focus = m.selected
	}
}

func indexOf(links []*linkHist, peer string) int {
	for i, h := range links {
		if h.peer == peer {
			return i
		}
	}
	return -1
}

// View implements tea.Model. The picture is cached until something in it
// changes, so the renderer's ticks cost nothing on an idle screen.
func (m *Model) View() string {
	if !m.dirty && m.cache != "" {
		return m.cache
	}
	m.cache = m.render()
	m.dirty = false
	m.renders++
	return m.cache
}

func (m *Model) render() string {
	w, h := m.w, m.h
	if w == 0 || h == 0 {
		return "lagscope: starting…"
	}
	if w < MinWidth || h < MinHeight {
		return m.tooSmall()
	}
	s := m.display()
	m.hits = hitMap{}
	head := m.header(s, w)
	foot := m.footer(w)
	bh := h - len(head) - 1
	var body string
	switch {
	case m.showHelp:
		body = m.helpScreen(w, bh)
	case m.dialog != nil:
		body = m.dialogScreen(s, w, bh)
	default:
		body = screens[m.screen].render(m, s, w, bh, len(head))
	}
	return strings.Join(head, "\n") + "\n" + body + "\n" + foot
}

func (m *Model) tooSmall() string {
	msg := fmt.Sprintf("lagscope needs a terminal of at least %d×%d.\nThis one is %d×%d: please make it larger.", MinWidth, MinHeight, m.w, m.h)
	return lipgloss.Place(m.w, m.h, lipgloss.Center, lipgloss.Center, msg)
}

func (m *Model) footer(w int) string {
	m.help.Width = w
	var line string
	switch {
	case m.dialog != nil:
		line = m.help.ShortHelpView(dialogKeys{m.keys}.ShortHelp())
	default:
		line = m.help.ShortHelpView(m.keys.ShortHelp())
	}
	return fit(line, w)
}

func (m *Model) helpScreen(w, h int) string {
	m.help.Width = w
	lines := []string{m.rule(m.st.title.Render("Keys"), w), ""}
	lines = append(lines, strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")...)
	lines = append(lines, "",
		m.st.muted.Render("Mouse: the wheel moves through links; click a row to focus it,"),
		m.st.muted.Render("       a heading to sort by it, a tab to open it."),
		m.st.muted.Render("Matrix view: ↑/↓ choose who measures (the row), "+m.matrixColumnKeys()+" to whom (the column)."),
		m.st.muted.Render("Unknown values show as "+unknown+", never 0. Loss and resend shares are"),
		m.st.muted.Render("per interval, differenced from the cumulative totals (L5)."))
	return block(lines, w, h)
}

// sortKey is a link-table column to sort by.
type sortKey int

const (
	sortHouse sortKey = iota
	sortPeer
	sortState
	sortSRTT
	sortRTTVAR
	sortRTO
	sortConn
	sortResend
	sortIn
	sortOut
	sortWait
	sortKeys
)

var sortNames = [...]string{"house order", "peer", "state", "SRTT", "RTTVAR", "RTO", "connection timeout", "resend share", "inbound loss", "outbound loss", "wait"}

var stateRank = [...]int{probe.LinkMeasured: 0, probe.LinkProvisional: 1, probe.LinkUnmeasured: 2, probe.LinkBad: 3}

// sortValue is a row's value in a numeric column; ok is false for unknown,
// which always sorts last.
func sortValue(h *linkHist, k sortKey) (float64, bool) {
	switch k {
	case sortHouse:
		return 0, true
	case sortState:
		if int(h.last.State) >= len(stateRank) {
			return 0, false
		}
		return float64(stateRank[h.last.State]), true
	case sortSRTT:
		return msOf(h.last.SRTT, h.last.RTTKnown)
	case sortRTTVAR:
		return msOf(h.last.RTTVAR, h.last.RTTKnown)
	case sortRTO:
		return netcore.Millis(h.last.RTO), true
	case sortConn:
		return netcore.Millis(h.last.ConnTimeout), true
	case sortResend:
		s := h.windowShares().resend
		return s.v, s.ok
	case sortIn:
		s := h.windowShares().in
		return s.v, s.ok
	case sortOut:
		s := h.windowShares().out
		return s.v, s.ok
	case sortWait:
		return float64(h.last.Caused), true
	}
	return 0, false
}

// sorted lists the current links in the table's order.
func (m *Model) sorted(s *session) []*linkHist {
	links := s.current()
	if m.sortBy == sortHouse {
		if m.sortDesc {
			for i, j := 0, len(links)-1; i < j; i, j = i+1, j-1 {
				links[i], links[j] = links[j], links[i]
			}
		}
		return links
	}
	sort.SliceStable(links, func(i, j int) bool {
		if m.sortBy == sortPeer {
			if m.sortDesc {
				return links[i].peer > links[j].peer
			}
			return links[i].peer < links[j].peer
		}
		a, aok := sortValue(links[i], m.sortBy)
		b, bok := sortValue(links[j], m.sortBy)
		if aok != bok {
			return aok
		}
		if m.sortDesc {
			return a > b
		}
		return a < b
	})
	return links
}

// worst is the link that forces the session's timing from here: a bad
// link first, then the longest measured round trip. It is "" with fewer
// than two links, or when no link is worse than the rest: a tie stands out
// from nothing.
func worst(links []*linkHist) string {
	if len(links) < 2 {
		return ""
	}
	type rank struct {
		bad bool
		rtt float64
	}
	rankOf := func(h *linkHist) rank {
		rtt, ok := msOf(h.last.SRTT, h.last.RTTKnown)
		if !ok {
			rtt = -1
		}
		return rank{h.last.Bad || h.last.State == probe.LinkBad, rtt}
	}
	worse := func(a, b rank) bool { return (a.bad && !b.bad) || (a.bad == b.bad && a.rtt > b.rtt) }
	// To stand out a round trip must be clearly longer than the next: a
	// fraction of a millisecond on a LAN is noise, not a culprit.
	clearly := func(a, b rank) bool {
		return (a.bad && !b.bad) || (a.bad == b.bad && a.rtt >= b.rtt*standOutRatio && a.rtt >= b.rtt+standOutMs)
	}
	best := 0
	for i := 1; i < len(links); i++ {
		if worse(rankOf(links[i]), rankOf(links[best])) {
			best = i
		}
	}
	b := rankOf(links[best])
	if !b.bad && b.rtt < 0 {
		return ""
	}
	for i, h := range links {
		if i != best && !clearly(b, rankOf(h)) {
			return "" // a tie, or too close to call
		}
	}
	return links[best].peer
}

// The worst link must beat the next by this much to be marked.
const (
	standOutRatio = 1.2
	standOutMs    = 5.0
)

// focused is the link the charts show: the one chosen with enter or a
// click, else the worst, else the first.
func (m *Model) focused(s *session) *linkHist {
	if h := s.links[m.focus]; h != nil && h.present {
		return h
	}
	links := s.current()
	if w := worst(links); w != "" {
		return s.links[w]
	}
	if len(links) > 0 {
		return links[0]
	}
	return nil
}
