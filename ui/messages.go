package ui

import (
	"strconv"
)

// messageLines draws messages newest first, skipping the newest `from`,
// each with the session time and frame it happened on.
func (m *Model) messageLines(s *session, w, n, from int) []string {
	st := &m.st
	var out []string
	for i := len(s.msgs) - 1 - from; i >= 0 && len(out) < n; i-- {
		msg := &s.msgs[i]
		frame := "f" + strconv.Itoa(msg.frame)
		if w >= 60 {
			frame = padLeft(frame, 7)
		}
		stamp := st.muted.Render(fmtClock(msg.at) + " " + frame + " ")
		text := st.text.Render(msg.text)
		switch msg.kind {
		case msgTier:
			t := tierByName(msg.tier)
			text = st.text.Render(tierPrefix) + st.tierStyle(t).Render(msg.tier)
		case msgAlarm:
			text = st.err.Render(msg.text)
		case msgMember:
			text = st.accent.Render(msg.text)
		}
		out = append(out, fit(stamp+text, w))
	}
	if len(s.msgs) == 0 {
		out = append(out, st.muted.Render("  no messages yet"))
	}
	return out
}

// messagesPane is a titled message list.
func (m *Model) messagesPane(s *session, w, h int) []string {
	title := m.st.title.Render("Messages") + m.st.muted.Render(" newest first")
	return append([]string{m.rule(title, w)}, m.messageLines(s, w, h-1, 0)...)
}
