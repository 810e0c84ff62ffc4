package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// header is two lines: who and where, with the view tabs and the clock; then
// the frame rate, the timing in force → target and the tier badge.
// headerPane is the two header lines. It keeps nothing of its own: what it
// shows is the session and the status the model hands it.
type headerPane struct {
	*ctx
	drawn memo[headerKey, []string]
}

// headerKey is what the header is drawn from.
type headerKey struct {
	s     *session
	in    headerInputs
	hs    headerStatus
	w     int
	theme string
}

// headerInputs are the parts of a session the header shows. A new picture
// mostly leaves them as they were (the status is calmed to one change a
// second), so the header is drawn again only when one of them changes, not
// with every picture. The lobby's pending pairs are a list: while
// they are shown, every update counts as a change.
type headerInputs struct {
	self, master, session string
	fps, speed            int
	inForce, target       rungs.Timing
	have, started         bool
	status                status
	done                  bool
	errText               string
	verdict               string
	lobbyGen              uint64
}

func headerInputsOf(s *session) headerInputs {
	v := &s.view
	in := headerInputs{self: v.Self, master: v.Master, session: v.Session, fps: v.FPS, speed: v.Speed,
		inForce: v.InForce, target: v.Target, have: s.have, started: v.Started, status: s.status, done: s.done}
	if s.err != nil {
		in.errText = s.err.Error()
	}
	in.verdict = strings.Join(s.verdict(), " ")
	if !v.Started && v.Lobby != nil {
		in.lobbyGen = s.gen
	}
	return in
}

// cached is the header, drawn again only when what it shows changes.
func (p *headerPane) cached(s *session, hs headerStatus, w int) []string {
	return p.drawn.get(headerKey{s, headerInputsOf(s), hs, w, p.st.theme.Name}, func() []string {
		return p.view(s, hs, w)
	})
}

// headerStatus is what the header shows besides the session: the view
// open, the program's state and the clock text.
type headerStatus struct {
	screen           int
	quitting, paused bool
	clock            string // the session time, or a replay's position
	session          string // a replay's session time, "" elsewhere
	wall             string // the wall clock, "" without one
	noVerdict        bool   // the view open shows the whole verdict itself
	bell             bool   // the bell rings on alerts
}

// view is the header's lines: the tabs line, the session line, then the
// lobby's pending pairs and the diagnosis's verdict when there are any.
func (p *headerPane) view(s *session, hs headerStatus, w int) []string {
	out := []string{p.tabsLine(s, hs, w), p.sessionLine(s, w)}
	return p.noteLines(out, s, hs, w)
}

// tabsLine is line 1: program, tabs, clock and status on the right. When
// they do not all fit, the wall clock goes first, then a replay's session
// time, then the program's name: the tabs and the clock (the session time;
// a replay's position) stay whole. It also places the tabs in the hit map.
func (p *headerPane) tabsLine(s *session, hs headerStatus, w int) string {
	st := &p.st
	var tabs strings.Builder
	for i, sc := range screens {
		tabs.WriteString(st.tab(sc.name, i == hs.screen))
	}
	right := p.statusWords(s, hs, false)
	name := st.title.Render("lagscope") + " "
	join := func(parts ...string) string {
		out := parts[0]
		for _, s := range parts[1:] {
			if s != "" {
				out += "  " + s
			}
		}
		return out
	}
	fits := func(name, clock string) bool {
		r := append(right[:len(right):len(right)], clock)
		return width(name)+width(tabs.String())+1+width(strings.Join(r, "  ")) <= w
	}
	if !fits("", hs.clock) {
		// An error too long for the line: the word alone, the reason is
		// on the screen below it (the lobby panel, the messages).
		right = p.statusWords(s, hs, true)
	}
	var clock string
	for _, c := range []string{join(hs.clock, hs.session, hs.wall), join(hs.clock, hs.session), hs.clock} {
		if clock == "" && fits(name, c) {
			clock = c
		}
	}
	if clock == "" {
		clock, name = hs.clock, ""
	}
	right = append(right, st.text.Render(clock))
	x := width(name)
	p.hits.tabs = p.hits.tabs[:0]
	for _, sc := range screens {
		n := width(st.tab(sc.name, false))
		p.hits.tabs = append(p.hits.tabs, span{x, x + n})
		x += n
	}
	return spread(name+tabs.String(), strings.Join(right, "  "), w)
}

// statusWords are the program's state on the right of line 1, before the
// clock: ended (short: without the error's words) or quitting, paused,
// the bell.
func (p *headerPane) statusWords(s *session, hs headerStatus, short bool) []string {
	st := &p.st
	var right []string
	switch {
	case s.done && s.err != nil && short:
		right = append(right, st.err.Render("ENDED"))
	case s.done && s.err != nil:
		right = append(right, st.err.Render("ENDED: "+textOf(s.err.Error())))
	case s.done:
		right = append(right, st.warn.Render("ENDED"))
	case hs.quitting:
		right = append(right, st.warn.Render("QUITTING…"))
	}
	if hs.paused {
		right = append(right, st.warn.Render("PAUSED (measuring goes on)"))
	}
	if hs.bell {
		right = append(right, st.accent.Render("bell on"))
	}
	return right
}

// headerPart is one part of the session line; drop says when it goes for
// want of room: 0 never, a higher number first.
type headerPart struct {
	text string
	drop int
}

// sessionLine is line 2: the session and the timing. When it does not
// fit, the parts of least use to a glance go first: the session id, then
// the frame.
func (p *headerPane) sessionLine(s *session, w int) string {
	parts := p.sessionParts(s)
	sep := p.st.border.Render(" · ")
	join := func() string {
		var b []string
		for _, p := range parts {
			b = append(b, p.text)
		}
		return strings.Join(b, sep)
	}
	line := join()
	for width(line) > w {
		worst := -1
		for i, p := range parts {
			if p.drop > 0 && (worst < 0 || p.drop > parts[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		parts = append(parts[:worst], parts[worst+1:]...)
		line = join()
	}
	return fit(line, w)
}

// sessionParts are the session line's parts in order: the players, the
// frame rate, the timing and the game's state.
func (p *headerPane) sessionParts(s *session) []headerPart {
	st := &p.st
	v := &s.view
	label := func(k, val string) string { return st.muted.Render(k+" ") + st.text.Render(val) }
	orDash := func(s string) string {
		if s == "" {
			return unknown
		}
		return s
	}
	// In the second person where it is this machine's player: "master
	// you", and no "you you" when the player is called you (the demo).
	you := label("you", orDash(v.Self))
	if v.Self == "you" {
		you = st.text.Render("you")
	}
	master := orDash(v.Master)
	if v.Master != "" && v.Master == v.Self {
		master = "you"
	}
	parts := []headerPart{
		{you, 0},
		{label("master", master), 0},
		{label("session", orDash(v.Session)), 3},
	}
	fps := unknown
	if v.FPS > 0 {
		fps = strconv.Itoa(v.FPS) + " fps"
		if v.Speed > 0 && v.Speed != v.FPS {
			fps += " (speed " + strconv.Itoa(v.Speed) + ")"
		}
	}
	parts = append(parts, headerPart{st.text.Render(fps), 0}, headerPart{p.timing(v), 0})
	// The game's state, as calmed by the session (at most one change a
	// second).
	switch cs := &s.status; {
	case !s.have:
		parts = append(parts, headerPart{st.muted.Render("waiting for the engine…"), 0})
	case cs.kind == statusLobby:
		parts = append(parts, headerPart{st.warn.Render("lobby"), 0})
	case cs.kind == statusWaiting:
		parts = append(parts, headerPart{st.warn.Render("waiting for " + cs.waitedOn), 1})
	default:
		parts = append(parts, headerPart{st.muted.Render("frame ") + st.text.Render(strconv.Itoa(cs.frame)), 2})
	}
	return parts
}

// timing is the timing in force → target, each in its tier's ink, and the
// tier badges.
func (p *headerPane) timing(v *feed.View) string {
	st := &p.st
	if !v.InForce.Valid() {
		return unknown
	}
	timing := st.tierStyle(v.InForce.Tier()).Render(v.InForce.String())
	if v.Target.Valid() && v.Target != v.InForce {
		timing += st.muted.Render(" → ") + st.tierStyle(v.Target.Tier()).Render(v.Target.String())
	}
	badge := st.badgeWord(v.InForce.Tier())
	if v.Target.Valid() && v.Target.Tier() != v.InForce.Tier() {
		badge += st.muted.Render("→") + st.badgeWord(v.Target.Tier())
	}
	return timing + " " + badge
}

// noteLines adds to out the lines under the session line: the lobby's
// pairs not connected yet (which pair and what is tried, so a lobby that
// does not start says why), and the verdict area: always verdictRows(w)
// lines, so that nothing under it moves when the verdict's length
// changes. The verdict's sentences come in their order of priority and
// the last line that fits ends between words with "…"; the Diagnosis view
// has the whole of it.
func (p *headerPane) noteLines(out []string, s *session, hs headerStatus, w int) []string {
	st := &p.st
	v := &s.view
	if !v.Started && v.Lobby != nil {
		for _, l := range pendingLines(v.Lobby.Pending, maxPendingLines) {
			out = append(out, fit("  "+st.warn.Render(l), w))
		}
	}
	if hs.noVerdict {
		return out
	}
	rows := verdictRows(w)
	text := textOf(strings.Join(s.verdict(), " "))
	ink := st.warn
	if text == "" && v.Started {
		text, ink = "No verdict yet: it comes once every player is measured.", st.muted
	}
	for _, l := range verdictLines(text, w-2, rows) {
		if l == "" {
			out = append(out, "")
			continue
		}
		out = append(out, fit("  "+ink.Render(l), w))
	}
	return out
}

// verdictRows is the verdict area's height: 2 lines up to 199 columns, 3
// from 200.
func verdictRows(w int) int {
	if w >= 200 {
		return 3
	}
	return 2
}

// verdictLines wraps text into exactly rows lines of at most w cells,
// padded with empty lines; what does not fit ends the last line with "…".
func verdictLines(text string, w, rows int) []string {
	lines := wrap(text, max(w, 1))
	if text == "" {
		lines = nil
	}
	if len(lines) > rows {
		lines = append(lines[:rows-1], fitWords(strings.Join(lines[rows-1:], " "), w))
	}
	for len(lines) < rows {
		lines = append(lines, "")
	}
	return lines
}

// spread puts left and right on one line of width w, right-aligned; when
// both do not fit the right part wins.
func spread(left, right string, w int) string {
	lw, rw := width(left), width(right)
	if rw >= w {
		return fit(right, w)
	}
	if lw+rw+1 > w {
		left = fit(left, w-rw-1)
		lw = w - rw - 1
	}
	return left + strings.Repeat(" ", w-lw-rw) + right
}

// maxPendingLines is the most lines the header gives the lobby's pending
// pairs: a lobby of many machines says how many more, not all of them.
const maxPendingLines = 3

// pendingLines are the lobby's pending pairs, one a line ("bob ↔ cyd:
// punching, 4 s"), at most n lines; the last says "+K more" when they do
// not all fit.
func pendingLines(pending []feed.PendingPair, n int) []string {
	if len(pending) == 0 || n <= 0 {
		return nil
	}
	shown := len(pending)
	if shown > n {
		shown = n - 1
	}
	out := make([]string, 0, n)
	for i, pp := range pending[:shown] {
		l := textOf(pp.A) + " ↔ " + textOf(pp.B) + ": " + tryingWord(pp.Trying) + ", " + fmtSecs(pp.For)
		if i == 0 {
			l = "not connected yet: " + l
		} else {
			l = "                   " + l
		}
		out = append(out, l)
	}
	if more := len(pending) - shown; more > 0 {
		out = append(out, "                   +"+strconv.Itoa(more)+" more")
	}
	return out
}

// tryingWord is what a pending pair tries, in the lobby's words.
func tryingWord(t string) string {
	switch t {
	case "":
		return "waiting"
	case feed.PathRelayed:
		return "relay through the host"
	}
	return textOf(t)
}

// fmtSecs is a duration in whole seconds, "4 s".
func fmtSecs(d time.Duration) string {
	return strconv.Itoa(int(max(0, d)/time.Second)) + " s"
}
