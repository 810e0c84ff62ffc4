package ui

import (
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// screen is one of the views `tab` cycles through. A new view (such as the
// admin's matrix) is one more entry here and a render function.
type screen struct {
	name string
	// render draws the body: exactly h lines of width w; y is the screen
	// row the body starts on (for the mouse).
	render func(m *tuiModel, s *session, w, h, y int) string
	// scrolls: ↑/↓ scroll the view's list rather than move the link cursor.
	scrolls bool
	// focusFollowsCursor: moving the cursor also focuses the link.
	focusFollowsCursor bool
	// key, when set, sees a key first; it reports whether it used it.
	key func(m *tuiModel, msg tea.KeyMsg) bool
}

var screens = []screen{
	{name: "Session", render: (*tuiModel).overview},
	{name: linkName, render: (*tuiModel).linkScreen, focusFollowsCursor: true},
	{name: "Players", render: (*tuiModel).playersScreen},
	{name: "Messages", render: (*tuiModel).messagesScreen, scrolls: true},
	{name: "Matrix", render: (*tuiModel).matrixScreen, key: func(m *tuiModel, msg tea.KeyMsg) bool { return m.matrix.key(m.display(), msg) }},
	{name: diagnosisName, render: (*tuiModel).diagnosisScreen, key: func(m *tuiModel, msg tea.KeyMsg) bool { return m.diag.key(msg) }},
	// The Path view opens on the link in focus (`p`, or the tab) and
	// follows the cursor; the model tells the engine when it opens and
	// closes (setScreen).
	{name: pathName, render: (*tuiModel).pathScreen, focusFollowsCursor: true},
}

// linkName is the Link view's name in the tab bar.
const linkName = "Link"

// diagnosisName is the Diagnosis view's name in the tab bar.
const diagnosisName = "Diagnosis"

// Layout constants of the overview.
const (
	ladderW     = 32 // the ladder column when the messages go below
	wideLayout  = 120
	veryWide    = 160
	minChartH   = 7
	lanesH      = 5 // title, three lanes, axis or hint
	minMessages = 3
)

// overview is the default view: the link table across the top; the focused
// link's round-trip chart and loss lanes on the left; the ladder on the
// right; messages under the ladder when the terminal is wide, else across
// the bottom.
func (m *tuiModel) overview(s *session, w, h, y int) string {
	if inLobby(s) {
		return m.lobbyOverview(s, w, h, y)
	}
	m.hits.hasTable = false
	n := len(s.view.Links)
	tableRows := min(max(n, 1), max(3, (h-minChartH-lanesH-minMessages-1)))
	table := m.table.cached(s, w, tableRows, y)
	if anyLinkRelayed(s) {
		// A relayed link's round trip is not the player's own
		// line; the table says so under itself.
		table = append(table, m.st.muted.Render(fitWords("  "+markRelayed+" relayed: the round trip is the path through the host", w)))
	}
	// The incident strip: one line under the table, always there once
	// the game runs, so nothing moves when an incident opens.
	table = append(table, m.strip.line(s, w))
	rest := h - len(table)
	focus := m.charts.focused(s)

	if w >= wideLayout {
		return m.besideLadder(s, table, w, rest, func(leftW int) string {
			return m.charts.cached(s, focus, leftW, rest)
		})
	}
	msgH := max(minMessages, rest-minChartH-lanesH-4)
	msgH = min(msgH, 6)
	mid := rest - msgH
	leftW := w - ladderW - 1
	left := m.charts.cached(s, focus, leftW, mid)
	right := block(m.ladder.cached(s, ladderW, mid), ladderW, mid)
	msgs := block(m.msgs.cached(s, w, msgH), w, msgH)
	return block(table, w, len(table)) + "\n" + sideBySide(left, " ", right) + "\n" + msgs
}

// besideLadder is a wide screen's layout under the table: the ladder and
// the message list under it in a column on the right, rest rows high,
// beside what left draws in the width left over.
func (m *tuiModel) besideLadder(s *session, table []string, w, rest int, left func(leftW int) string) string {
	rightW := min(max(w/3, 44), 60)
	if w >= veryWide {
		// A wide terminal gives the ladder and the message list under
		// it the room: messages are the longest lines on screen.
		rightW = w * 2 / 5
	}
	leftW := w - rightW - 1
	ladder := m.ladder.cached(s, rightW, rest)
	msgs := m.msgs.cached(s, rightW, rest-len(ladder))
	right := block(append(ladder, msgs...), rightW, rest)
	return block(table, w, len(table)) + "\n" + sideBySide(left(leftW), " ", right)
}

// linkScreen is the focused link in detail: its numbers, cumulative totals
// and a tall chart; ↑/↓ move the focus from link to link.
func (m *tuiModel) linkScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	st := &m.st
	focus := m.charts.focused(s)
	if focus == nil {
		return block([]string{st.muted.Render("  no links yet")}, w, h)
	}
	lv := &focus.last
	sh := focus.windowShares()
	kv := func(k, v string) string { return st.muted.Render(fit(k, 22)) + st.text.Render(v) }
	links := m.table.sorted(s)
	pos := indexOf(links, focus.peer)
	info := []string{
		m.rule(st.title.Render("Link "+lv.From+" → "+focus.peer)+st.muted.Render("  "+strconv.Itoa(pos+1)+" of "+strconv.Itoa(len(links))+"  ↑/↓ other links"), w),
		kv("state", lv.State.String()),
		kv("round trip ± jitter", fmtMs(lv.SRTT, lv.RTTKnown)+" ± "+fmtMs(lv.RTTVAR, lv.RTTKnown)+" ms"),
		kv("resend after", fmtMs(lv.RTO, true)+" ms"),
		kv("connection timeout", fmtSec(lv.ConnTimeout)),
		kv("sent / resent", fmtCount(lv.Sent, lv.LossKnown)+" / "+fmtCount(lv.Retransmitted, lv.LossKnown)+"   resent "+fmtShare(sh.resend)),
		kv("coming in: due / lost", fmtCount(lv.Expected, lv.LossKnown)+" / "+fmtCount(lv.Missing, lv.LossKnown)+"   lost "+fmtShare(sh.in)),
		kv("going out: due / lost", fmtCount(lv.PeerExpected, lv.PeerKnown)+" / "+fmtCount(lv.PeerMissing, lv.PeerKnown)+"   lost "+fmtShare(sh.out)),
		kv("we waited for it", fmtWait(lv.Caused)+"   its commands complete to frame "+strconv.Itoa(lv.Through)),
	}
	if lv.Relayed {
		// The pair found no direct path; its numbers are the
		// relayed path's, which a player must not read as their own line.
		info = append(info[:3:3], append([]string{
			kv("path", markRelayed+" relayed through the host"),
			kv("", "the round trip is the path through the host"),
		}, info[3:]...)...)
	}
	infoW := min(w, 72)
	var lines, load []string
	if w >= wideLayout {
		// The Load section goes under the numbers, beside the ladder.
		load = m.load.section(s, focus.peer, infoW)
		left := append(info[:len(info):len(info)], load...)
		top := max(len(left), len(info)+3)
		right := block(m.ladder.ladder(s, w-infoW-1, len(info)+3), w-infoW-1, top)
		lines = strings.Split(sideBySide(block(left, infoW, top), " ", right), "\n")
	} else {
		load = m.load.section(s, focus.peer, w)
		lines = append(info, load...)
	}
	rest := h - len(lines)
	if len(load) > 0 && rest < lanesH+1 {
		// A low terminal gives the Load section the chart's room.
		return block(lines, w, h)
	}
	return block(append(lines, strings.Split(m.charts.column(focus, w, rest), "\n")...), w, h)
}

// playersScreen is the Players view.
func (m *tuiModel) playersScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	return m.players.view(s, w, h)
}

// messagesScreen is the Messages view.
func (m *tuiModel) messagesScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	return m.msgs.screen(s, w, h)
}

// diagnosisScreen is the Diagnosis view.
func (m *tuiModel) diagnosisScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	return m.diag.view(s, w, h, m.incs.lines(s, w))
}

// matrixScreen is the Matrix view.
func (m *tuiModel) matrixScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	return m.matrix.view(s, w, h)
}

// pathScreen is the Path view.
func (m *tuiModel) pathScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	return m.path.view(s, m.table.sorted(s), w, h)
}

// anyLinkRelayed reports whether a link of the newest picture goes through
// the host.
func anyLinkRelayed(s *session) bool {
	for i := range s.view.Links {
		if s.view.Links[i].Relayed {
			return true
		}
	}
	return false
}
