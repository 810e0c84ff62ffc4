package ui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// messagesPane is the message list: a few lines on the overview, the whole
// list on the Messages view, where ↑/↓ scroll it (top).
type messagesPane struct {
	*ctx
	top   int // newest messages skipped on the Messages view
	drawn memo[msgsKey, []string]
}

// msgsKey is what the overview's message list is drawn from.
type msgsKey struct {
	s     *session
	msgN  uint64
	w, h  int
	theme string
}

// cached is the overview's message list: it changes only with a new
// message.
func (p *messagesPane) cached(s *session, w, h int) []string {
	out := p.drawn.get(msgsKey{s, s.msgN, w, h, p.st.theme.Name}, func() []string {
		return p.pane(s, w, h)
	})
	return out[:len(out):len(out)]
}

// scroll moves the Messages view's list by d.
func (p *messagesPane) scroll(s *session, d int) {
	p.top = max(0, min(p.top+d, len(s.msgs)-1))
}

// lines draws messages newest first, skipping the newest `from`, each with
// the session time it happened at (a time reads better than a frame
// number; the header shows the frame), `lobby` for a line from before the
// game started; a message longer than the width wraps between words under
// its own text.
func (p *messagesPane) lines(s *session, w, n, from int) []string {
	st := &p.st
	var out []string
	for i := len(s.msgs) - 1 - from; i >= 0 && len(out) < n; i-- {
		msg := &s.msgs[i]
		plainStamp := fmtClock(msg.at) + "  "
		if msg.pregame {
			plainStamp = "lobby  "
		}
		stamp := st.muted.Render(plainStamp)
		sw := lipgloss.Width(plainStamp)
		style := st.text
		switch msg.kind {
		case msgAlarm:
			style = st.err
		case msgMember:
			style = st.accent
		case msgAlert:
			style = st.err
		case msgIncident:
			style = st.warn
		}
		text := msg.text
		if msg.alert {
			text = alertMark + text
			if msg.kind != msgTier {
				style = st.err
			}
		}
		for j, line := range wrap(text, w-sw) {
			if len(out) >= n {
				break
			}
			drawn := style.Render(line)
			if msg.kind == msgTier && strings.HasSuffix(line, msg.tier) {
				// The tier word in its ink; the rest plain.
				t := tierByName(msg.tier)
				drawn = st.text.Render(strings.TrimSuffix(line, msg.tier)) + st.tierStyle(t).Render(msg.tier)
			}
			lead := stamp
			if j > 0 {
				lead = strings.Repeat(" ", sw)
			}
			out = append(out, fit(lead+drawn, w))
		}
	}
	if len(s.msgs) == 0 {
		out = append(out, st.muted.Render("  no messages yet"))
	}
	return out
}

// pane is a titled message list, for the overview.
func (p *messagesPane) pane(s *session, w, h int) []string {
	title := p.st.title.Render("Messages") + p.st.muted.Render(" newest first")
	return append([]string{p.rule(title, w)}, p.lines(s, w, h-1, 0)...)
}

// screen is the whole message list, newest first; ↑/↓ scroll.
func (p *messagesPane) screen(s *session, w, h int) string {
	st := &p.st
	p.top = max(0, min(p.top, len(s.msgs)-1))
	title := st.title.Render("Messages") + st.muted.Render("  newest first · "+strconv.Itoa(len(s.msgs))+" in all · ↑/↓ scroll")
	out := []string{p.rule(title, w)}
	out = append(out, p.lines(s, w, h-1, p.top)...)
	return block(out, w, h)
}
