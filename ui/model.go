package ui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/themes"
	"github.com/muesli/termenv"
)

// Minimum terminal size the UI draws in; below it a short message says what
// is needed.
const (
	minWidth  = 80
	minHeight = 24
)

// redrawFPS caps how often the screen is redrawn (at most ten times a
// second), which also keeps an idle UI cheap.
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
	// Bell starts with the bell on (the config file's alerts.bell); b
	// toggles it either way.
	Bell bool
}

// tuiModel is the bubbletea model of the UI. Use newModel and Run; the
// zero value is not usable.
type tuiModel struct {
	fd feed.Feed
	// playback is the feed's replay controls, nil for a live feed.
	playback Playback
	opts     Options
	stop     chan struct{} // closed by Run when the program ends

	*ctx  // size, styles, keys, help and the mouse's hit map, shared by the panes
	live  *session
	shown *session // frozen copy while paused; nil otherwise

	// The panes, each with its own state, keys and view.
	header  headerPane
	table   tablePane
	charts  chartPane
	ladder  ladderPane
	msgs    messagesPane
	matrix  matrixPane
	diag    diagnosisPane
	players playersPane
	path    pathPane
	load    loadPane
	strip   stripPane     // the Session view's incident strip (strip.go)
	incs    incidentsPane // the Diagnosis view's Incidents list (incidents.go)
	helpv   helpPane
	dialog  *optionsDialog // nil when closed

	screen int
	flash  string // a short note in the footer ("theme: light") until the next key
	bellOn bool   // ring the terminal bell on an alert; off until the user turns it on
	// ring rings the terminal bell; tests replace it to count the rings.
	ring     func() tea.Cmd
	showHelp bool
	paused   bool
	quitting bool
	feedDone bool

	// tick makes a timer command; tests replace it so that no test waits
	// on the wall clock.
	tick func(time.Duration, func(time.Time) tea.Msg) tea.Cmd

	foot    memo[footerKey, string] // the footer, kept with its inputs
	cache   string
	dirty   bool
	renders int // pictures drawn, for tests of the redraw cache
}

// NewModel builds the UI's bubbletea model on feed, for a program the
// caller runs itself (Run makes one on the terminal). It fails only for
// an unknown theme name.
func NewModel(fd feed.Feed, opts Options) (tea.Model, error) {
	m, err := newModel(fd, opts)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newModel builds the UI's model on feed. It fails only for an unknown
// theme name.
func newModel(fd feed.Feed, opts Options) (*tuiModel, error) {
	if opts.QuitWait <= 0 {
		opts.QuitWait = quitWait
	}
	// NO_COLOR asks only that colour go (no-color.org): the monochrome
	// theme draws with bold, underline and reverse alone, so the active
	// tab and the focused row stay visible. Options.NoColor (the tests'
	// plain pictures) drops the attributes too.
	envNoColor := os.Getenv("NO_COLOR") != ""
	noColor := opts.NoColor || envNoColor
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
	switch {
	case opts.NoColor:
		r.SetColorProfile(termenv.Ascii)
	case envNoColor:
		// The 16-colour profile carries the attributes; the monochrome
		// theme asks for no colour, so none is drawn.
		r.SetColorProfile(termenv.ANSI)
	}
	c := &ctx{r: r, keys: newKeyMap(), help: help.New()}
	m := &tuiModel{fd: fd, opts: opts, stop: make(chan struct{}), ctx: c, live: newSession(), dirty: true, tick: tea.Tick}
	m.header, m.table, m.charts, m.ladder = headerPane{ctx: c}, tablePane{ctx: c}, chartPane{ctx: c}, ladderPane{ctx: c}
	m.msgs, m.matrix, m.players, m.helpv = messagesPane{ctx: c}, matrixPane{ctx: c}, playersPane{c}, helpPane{ctx: c}
	m.diag, m.path, m.load = diagnosisPane{ctx: c}, pathPane{ctx: c}, loadPane{ctx: c}
	m.strip, m.incs = stripPane{ctx: c}, incidentsPane{ctx: c}
	m.ring = bellCmd(out)
	m.bellOn = opts.Bell
	if pb, ok := fd.(Playback); ok {
		m.playback, m.keys.replay = pb, true
	}
	m.setTheme(th)
	return m, nil
}

// Theme is the name of the theme in use.
func (m *tuiModel) Theme() string { return m.st.theme.Name }

// Run shows the UI on the terminal until the user quits or the feed ends.
// It returns the feed's error, if it ended with one.
func Run(fd feed.Feed, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	m, err := newModel(fd, opts)
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
	if fm, ok := final.(*tuiModel); ok && fm.live.err != nil {
		return fm.live.err
	}
	return nil
}

// Messages the model receives besides bubbletea's own.
type (
	updateMsg     struct{ u feed.Update }
	updatesMsg    []feed.Update // updates that were waiting together, in order
	feedClosedMsg struct{}
	quitTimeout   struct{}
)

// control sends cs to the engine in order, off the UI's goroutine, so a
// slow engine can never freeze the screen.
func (m *tuiModel) control(cs ...feed.Control) tea.Cmd {
	f := m.fd
	return func() tea.Msg {
		for _, c := range cs {
			f.Control(c)
		}
		return nil
	}
}

// Init implements tea.Model.
func (m *tuiModel) Init() tea.Cmd { return m.waitFeed() }

// Update implements tea.Model.
func (m *tuiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case updateMsg:
		return m, m.takeUpdates(msg.u)
	case updatesMsg:
		return m, m.takeUpdates(msg...)
	case feedClosedMsg:
		m.live.done = true
		m.live.gen++ // the header says so: its cached copy is stale
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
		return m, m.mouse(msg)
	}
	return m, nil
}

// ended handles the end of the feed.
func (m *tuiModel) ended() tea.Cmd {
	m.feedDone = true
	m.dirty = true
	if m.quitting || !m.opts.KeepOpen {
		return tea.Quit
	}
	return nil
}

func (m *tuiModel) quit() tea.Cmd {
	if m.feedDone {
		return tea.Quit
	}
	if m.quitting {
		return nil
	}
	m.quitting = true
	cs := []feed.Control{{Quit: true}}
	if m.path.asked {
		// The trace stops before the session does.
		m.path.asked = false
		cs = append([]feed.Control{{PathClosed: true}}, cs...)
	}
	return tea.Batch(m.control(cs...),
		m.tick(m.opts.QuitWait, func(time.Time) tea.Msg { return quitTimeout{} }))
}

func (m *tuiModel) key(msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	k.startable = m.canStart()
	m.flash = "" // a note in the footer lasts until the next key
	if m.load.confirm != "" {
		return m.confirmKey(msg)
	}
	if key.Matches(msg, k.Quit) {
		return m.quit()
	}
	if m.dialog != nil {
		closed, speed := m.dialog.key(msg)
		if closed {
			m.dialog = nil
		}
		if speed > 0 {
			return m.control(feed.Control{Speed: speed})
		}
		return nil
	}
	if m.showHelp {
		if key.Matches(msg, k.Help, k.Close) {
			m.showHelp = false
		} else {
			m.helpv.key(msg)
		}
		return nil
	}
	if m.playback != nil && m.playbackKey(msg) {
		return nil
	}
	if m.incidentKey(msg) {
		return nil
	}
	if sc := screens[m.screen]; sc.key != nil && sc.key(m, msg) {
		return nil
	}
	if m.onPath() && m.path.key(msg) {
		return nil
	}
	if m.keys.startable && key.Matches(msg, k.Start) {
		m.flash = "starting the game with the " + itoa(m.live.view.Lobby.Seated) + " seated…"
		return m.control(feed.Control{Start: true})
	}
	if m.table.key(msg) {
		return nil
	}
	switch {
	case key.Matches(msg, k.Help):
		m.showHelp, m.helpv.top = true, 0
	case key.Matches(msg, k.NextView):
		return m.setScreen((m.screen + 1) % len(screens))
	case key.Matches(msg, k.PrevView):
		return m.setScreen((m.screen + len(screens) - 1) % len(screens))
	case key.Matches(msg, k.Up):
		return m.move(-1)
	case key.Matches(msg, k.Down):
		return m.move(+1)
	case key.Matches(msg, k.PageUp):
		return m.move(-10)
	case key.Matches(msg, k.PageDown):
		return m.move(+10)
	case key.Matches(msg, k.Path):
		return m.pathKey()
	case key.Matches(msg, k.LoadTest):
		return m.loadKey()
	case key.Matches(msg, k.Close) && m.onPath():
		return m.setScreen(m.path.back)
	case key.Matches(msg, k.Focus):
		if m.table.selected != "" {
			m.charts.focus = m.table.selected
		}
	case key.Matches(msg, k.Options):
		m.dialog = newDialog(m.ctx, &m.display().view)
	case key.Matches(msg, k.Pause):
		m.togglePause()
	case key.Matches(msg, k.Theme):
		m.setTheme(themes.Next(m.st.theme.Name))
		m.flash = "theme: " + m.st.theme.Name
	case key.Matches(msg, k.Bell):
		m.bellOn = !m.bellOn
		m.flash = "bell off"
		if m.bellOn {
			m.flash = "bell on: it rings on alerts"
		}
	}
	return nil
}

func (m *tuiModel) togglePause() {
	m.paused = !m.paused
	if m.paused {
		m.shown = m.live.clone()
	} else {
		m.shown = nil
	}
}

// display is the session being drawn: the frozen copy while paused.
func (m *tuiModel) display() *session {
	if m.shown != nil {
		return m.shown
	}
	return m.live
}

// move moves the cursor through the link table, or scrolls the message list
// on the Messages view. On the Path view the trace follows the cursor.
func (m *tuiModel) move(d int) tea.Cmd {
	if screens[m.screen].scrolls {
		m.msgs.scroll(m.display(), d)
		return nil
	}
	m.table.move(m.display(), d)
	if screens[m.screen].focusFollowsCursor && m.table.selected != "" {
		m.charts.focus = m.table.selected
	}
	if m.onPath() && m.table.selected != "" && m.table.selected != m.path.peer {
		return m.tracePath(m.table.selected)
	}
	return nil
}

// onPath reports whether the Path view is open.
func (m *tuiModel) onPath() bool { return screens[m.screen].name == pathName }

// screenNamed is the index of the view called name.
func screenNamed(name string) int {
	for i, sc := range screens {
		if sc.name == name {
			return i
		}
	}
	return 0
}

// setScreen opens view i. A link's hop trace runs only while the Path
// view shows it: opening the view asks the engine to trace the link in
// focus, leaving it asks the engine to stop.
func (m *tuiModel) setScreen(i int) tea.Cmd {
	if i == m.screen {
		return nil
	}
	peer, from, was := m.linkInFocus(), m.screen, m.onPath()
	m.screen, m.load.confirm = i, "" // the confirmation belongs to the Link view
	switch now := m.onPath(); {
	case was && !now:
		return m.closePath()
	case now && !was:
		m.path.back = from
		return m.tracePath(peer)
	}
	return nil
}

// pathKey is `p`: it opens the Path view on the link in focus, or closes
// it again.
func (m *tuiModel) pathKey() tea.Cmd {
	if m.onPath() {
		return m.setScreen(m.path.back)
	}
	if m.linkInFocus() == "" {
		m.flash = "no link to trace yet"
		return nil
	}
	return m.setScreen(screenNamed(pathName))
}

// linkInFocus is the link the Path view opens on: the link shown where
// the view shows one link (the Link view), else the link table's cursor,
// the first row before it moves.
func (m *tuiModel) linkInFocus() string {
	s := m.display()
	if screens[m.screen].focusFollowsCursor {
		if h := m.charts.focused(s); h != nil {
			return h.peer
		}
		return ""
	}
	links := m.table.sorted(s)
	if i := indexOf(links, m.table.selected); i >= 0 {
		return links[i].peer
	}
	if len(links) > 0 {
		return links[0].peer
	}
	return ""
}

// tracePath shows peer's path and asks the engine to trace it; the cursor
// and the charts follow, as on the Link view.
func (m *tuiModel) tracePath(peer string) tea.Cmd {
	m.path.peer, m.path.top = peer, 0
	if peer == "" {
		return nil
	}
	m.table.selected, m.charts.focus, m.path.asked = peer, peer, true
	return m.control(feed.Control{Path: peer})
}

// closePath tells the engine the Path view has closed.
func (m *tuiModel) closePath() tea.Cmd {
	asked := m.path.asked
	m.path.peer, m.path.asked = "", false
	if !asked {
		return nil
	}
	return m.control(feed.Control{PathClosed: true})
}

// View implements tea.Model. The picture is cached until something in it
// changes, so the renderer's ticks cost nothing on an idle screen.
func (m *tuiModel) View() string {
	if !m.dirty && m.cache != "" {
		return m.cache
	}
	m.cache = m.render()
	m.dirty = false
	m.renders++
	return m.cache
}

func (m *tuiModel) render() string {
	w, h := m.w, m.h
	if w == 0 || h == 0 {
		return "lagscope: starting…"
	}
	if w < minWidth || h < minHeight {
		return m.tooSmall()
	}
	s := m.display()
	m.keys.startable, m.keys.load = m.canStart(), m.loadKeyState()
	// The hit map is not cleared: a part drawn from its cache keeps (or
	// restores) its own entries, and every view sets hasTable.
	hs := m.headerStatus()
	head := m.header.cached(s, hs, w)
	status := loadStatus(&m.live.view)
	foot := m.foot.get(footerKey{m.flash, w, m.dialog != nil, m.st.theme.Name, m.keys.startable, m.keys.load, status}, func() string {
		return m.footer(w, status)
	})
	bh := h - len(head) - 1
	var body string
	switch {
	case m.showHelp:
		body = m.helpv.view(w, bh, m.matrixColumnKeys())
	case m.dialog != nil:
		body = m.dialog.view(s, w, bh)
	default:
		body = screens[m.screen].render(m, s, w, bh, len(head))
	}
	return strings.Join(head, "\n") + "\n" + body + "\n" + foot
}

// bellCmd rings the terminal bell by writing BEL to out: a single byte
// that moves nothing on screen, so it cannot disturb the renderer.
func bellCmd(out io.Writer) func() tea.Cmd {
	return func() tea.Cmd {
		return func() tea.Msg {
			_, _ = out.Write([]byte{'\a'})
			return nil
		}
	}
}

// headerStatus is what the header shows besides the session.
func (m *tuiModel) headerStatus() headerStatus {
	clock, session := sessionClock(&m.display().view), ""
	if m.playback != nil {
		// The replay's position (on the recording's clock) comes first;
		// the session time beside it where there is room.
		clock, session = m.playbackStatus(), clock
	}
	wall := ""
	if m.opts.Clock != nil {
		wall = m.opts.Clock().Format("15:04:05")
	}
	return headerStatus{screen: m.screen, wall: wall, session: session, quitting: m.quitting, paused: m.paused, clock: clock, bell: m.bellOn,
		noVerdict: screens[m.screen].name == "Diagnosis" && !m.showHelp && m.dialog == nil}
}

func (m *tuiModel) tooSmall() string {
	// Wrapped to the terminal, so the whole message shows however small.
	var lines []string
	for _, s := range []string{fmt.Sprintf("lagscope needs a terminal of at least %d×%d.", minWidth, minHeight),
		fmt.Sprintf("This one is %d×%d: please make it larger.", m.w, m.h)} {
		lines = append(lines, wrap(s, max(m.w, 1))...)
	}
	return lipgloss.Place(m.w, m.h, lipgloss.Center, lipgloss.Center, lipgloss.JoinVertical(lipgloss.Center, lines...))
}

// footerKey is what the footer is drawn from.
type footerKey struct {
	flash     string
	w         int
	dialog    bool
	theme     string
	startable bool // the host's lobby: the footer lists s
	load      loadKeys
	status    string // the load test running in the session (loadStatus)
}

// footer is the keys, and on the right a note: the last key's, else the
// load test running in the session (status).
func (m *tuiModel) footer(w int, status string) string {
	m.help.Width = w
	note := ""
	switch {
	case m.flash != "":
		note = m.st.accent.Render(m.flash)
	case status != "":
		note = m.st.accent.Render(status)
	}
	if note != "" {
		m.help.Width = max(10, w-lipgloss.Width(note)-2)
	}
	var line string
	switch {
	case m.dialog != nil:
		line = m.help.ShortHelpView(dialogKeys{m.keys}.ShortHelp())
	case m.keys.load == loadKeyConfirm:
		line = m.help.ShortHelpView(confirmKeys{m.keys}.ShortHelp())
	default:
		line = m.help.ShortHelpView(m.keys.ShortHelp())
	}
	if note != "" {
		return spread(line, note, w)
	}
	return fit(line, w)
}
