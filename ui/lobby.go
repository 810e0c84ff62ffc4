package ui

import (
	"strconv"
	"strings"

	"github.com/lagscope/lagscope/probe/feed"
)

// The lobby screen: while a live session waits for its game, the overview
// shows what this machine waits for in place of the charts. On the host
// that is how others join — the line to share, this machine's addresses
// and who can reach each, what a player over the internet needs — and how
// many seats are still empty, with `s` to start now; on a joiner, the
// host it is contacting and the handshake's attempt, then the seats; on a
// watcher, what it waits for to be let in and to see the game.

// inLobby reports whether s shows a live session before its game.
func inLobby(s *session) bool { return !s.view.Started && s.view.Lobby != nil }

// canStart reports whether `s` starts the game now: this machine hosts a
// lobby that has not ended, and the feed is live (a replay starts
// nothing).
func (m *tuiModel) canStart() bool {
	s := m.live
	return inLobby(s) && s.view.Lobby.CanStart && !s.done && !m.quitting && m.playback == nil
}

// lobbyOverview is the overview in the lobby: the link table (the lobby's
// links to the host and the others), the lobby panel, and the ladder and
// messages as in the game, so that little moves when the game starts.
func (m *tuiModel) lobbyOverview(s *session, w, h, y int) string {
	m.hits.hasTable = false
	tableRows := min(max(len(s.view.Links), 1), max(1, h/4))
	table := m.table.cached(s, w, tableRows, y)
	rest := h - len(table)
	if w >= wideLayout {
		return m.besideLadder(s, table, w, rest, func(leftW int) string {
			return block(m.lobbyLines(s, leftW), leftW, rest)
		})
	}
	lobby := m.lobbyLines(s, w)
	msgH := max(minMessages, rest-len(lobby))
	lobbyH := rest - msgH
	return block(table, w, len(table)) + "\n" + block(lobby, w, lobbyH) + "\n" + block(m.msgs.cached(s, w, msgH), w, msgH)
}

// panel collects a panel's lines, w cells wide.
type panel struct {
	w     int
	lines []string
}

// para adds text wrapped between words after indent, in ink.
func (p *panel) para(text string, ink paint, indent string) {
	for _, line := range wrap(text, max(1, p.w-len(indent))) {
		p.lines = append(p.lines, fit(indent+ink.Render(line), p.w))
	}
}

// lobbyLines is the lobby panel, w cells wide, most important first: a
// panel cut short by a low terminal loses its notes, never its numbers.
func (m *tuiModel) lobbyLines(s *session, w int) []string {
	st := &m.st
	l := s.view.Lobby
	p := &panel{w: w, lines: []string{m.rule(st.title.Render("Lobby"), w)}}
	switch {
	case s.done && s.err != nil:
		what := "the session ended: "
		if l.Joining {
			what = "could not join: "
		}
		p.para(what+textOf(s.err.Error()), st.err, "  ")
	case l.Guide != nil || l.CanStart:
		m.hostLobby(s, p)
	case l.Joining:
		p.para(joiningText(l), st.warn, "  ")
		if l.Attempt > 4 {
			p.para("no answer yet: is lagscope host running at that address, with the same --key?", st.muted, "  ")
		}
	case l.Late:
		p.para("waiting for the game's first frame from the host at "+hostOf(l)+"…", st.warn, "  ")
	case l.Watcher:
		p.para("watching "+hostOf(l)+": waiting for the game to start ("+seatsText(l)+")", st.warn, "  ")
	case l.HostAddr.IsValid():
		p.para("in the lobby of "+l.HostAddr.String()+": "+waitingText(l)+"; the host starts the game", st.warn, "  ")
	default:
		p.para("in the lobby: "+waitingText(l), st.warn, "  ")
	}
	return p.lines
}

// hostLobby is the host's panel: the seats and `s`, the join line, the
// addresses and what reaching each takes.
func (m *tuiModel) hostLobby(s *session, p *panel) {
	st := &m.st
	l := s.view.Lobby
	p.para(waitingText(l), st.warn, "  ")
	if l.CanStart && !s.done && m.playback == nil {
		p.para("press s to start now with the "+strconv.Itoa(l.Seated)+" seated", st.accent, "  ")
	}
	g := l.Guide
	if g == nil {
		return
	}
	p.lines = append(p.lines, "")
	if label := "  Others join with: "; width(label+g.Line) <= p.w {
		p.lines = append(p.lines, fit(st.muted.Render(label)+st.text.Render(g.Line), p.w))
	} else {
		p.para(strings.TrimSpace(label), st.muted, "  ")
		p.para(g.Line, st.text, "    ")
	}
	if g.Open {
		p.para("open session (--open): anyone who reaches this address can join or watch, and learns every player's address", st.warn, "  ")
	}
	if len(g.Addrs) == 0 {
		return
	}
	p.para("This machine's addresses:", st.muted, "  ")
	aw := 0
	for _, a := range g.Addrs {
		aw = max(aw, width(a.Addr.String()))
	}
	for _, a := range g.Addrs {
		p.para(fit(a.Addr.String(), aw)+"  "+kindWord(a.Kind), st.text, "    ")
	}
	p.para(reachNote(g), st.muted, "  ")
}

// waitingText is the seats: "waiting for 2 more players (1 of 3 seated)",
// or, once they are all taken, what the start still waits for.
func waitingText(l *feed.LobbyView) string {
	more := l.Need - l.Seated
	if more <= 0 {
		return "all " + strconv.Itoa(l.Need) + " seated: the game starts once every machine is connected"
	}
	noun := "players"
	if more == 1 {
		noun = "player"
	}
	return "waiting for " + strconv.Itoa(more) + " more " + noun + " (" + seatsText(l) + ")"
}

// seatsText is "1 of 3 seated", with the watchers when there are any.
func seatsText(l *feed.LobbyView) string {
	t := strconv.Itoa(l.Seated) + " of " + strconv.Itoa(l.Need) + " seated"
	if l.Observers > 0 {
		t += ", " + strconv.Itoa(l.Observers) + " watching"
	}
	return t
}

// joiningText is the handshake in words: "contacting 203.0.113.5:7373…
// (attempt 3)".
func joiningText(l *feed.LobbyView) string {
	what := "contacting " + hostOf(l) + "…"
	if l.Watcher {
		what = "waiting for the host at " + hostOf(l) + " to let this watcher in…"
	}
	if l.Attempt > 0 {
		what += " (attempt " + strconv.Itoa(l.Attempt) + ")"
	}
	return what
}

// hostOf is the host's address, or "the host" when it is not known.
func hostOf(l *feed.LobbyView) string {
	if !l.HostAddr.IsValid() {
		return "the host"
	}
	return l.HostAddr.String()
}

// kindWord says who reaches an address of that kind.
func kindWord(k feed.AddrKind) string {
	switch k {
	case feed.AddrLoopback:
		return "this machine only"
	case feed.AddrLAN:
		return "LAN"
	case feed.AddrPublic:
		return "internet"
	}
	return unknown
}

// reachNote is what a player on another network needs to reach the host.
// Only the host must be reachable: the players' links to each other punch
// through their routers, or go through the host when they cannot.
func reachNote(g *feed.JoinGuide) string {
	var lan, public, other bool
	for _, a := range g.Addrs {
		switch a.Kind {
		case feed.AddrLAN:
			lan = true
		case feed.AddrPublic:
			public = true
		}
		other = other || a.Kind != feed.AddrLoopback
	}
	port := strconv.Itoa(int(g.Port))
	if !other {
		return "Only this machine can join at a loopback address: to play with others, host on an address they reach (--listen, or leave it out to listen on every address)."
	}
	var b []string
	if lan {
		b = append(b, "LAN addresses work only on the same network.")
	}
	if public {
		b = append(b, "Over the internet, players join at the internet address, if no firewall drops UDP port "+port+".")
	} else {
		b = append(b, "Over the internet, a player needs your router's public address, with UDP port "+port+" forwarded to this machine.")
	}
	b = append(b, "The players' links to each other need nothing forwarded: they punch through their routers or go through this machine.")
	return strings.Join(b, " ")
}
