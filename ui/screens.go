package ui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// screen is one of the views `tab` cycles through. A new view (issue 7's
// admin matrix) is one more entry here and a render function.
type screen struct {
	name string
	// render draws the body: exactly h lines of width w; y is the screen
	// row the body starts on (for the mouse).
	render func(m *Model, s *session, w, h, y int) string
	// scrolls: ↑/↓ scroll the view's list rather than move the link cursor.
	scrolls bool
	// focusFollowsCursor: moving the cursor also focuses the link.
	focusFollowsCursor bool
	// key, when set, sees a key first; it reports whether it used it.
	key func(m *Model, msg tea.KeyMsg) bool
}

var screens = []screen{
	{name: "Session", render: (*Model).overview},
	{name: "Link", render: (*Model).linkScreen, focusFollowsCursor: true},
	{name: "Players", render: (*Model).playersScreen},
	{name: "Messages", render: (*Model).messagesScreen, scrolls: true},
	{name: "Matrix", render: (*Model).matrixScreen, key: (*Model).matrixKey},
}

// Layout constants of the overview.
const (
	ladderW     = 32 // the ladder column when the messages go below
	wideLayout  = 120
	minChartH   = 7
	lanesH      = 5 // title, three lanes, axis or hint
	minMessages = 3
)

// overview is the default view: the link table across the top; the focused
// link's round-trip chart and loss lanes on the left; the ladder on the
// right; messages under the ladder when the terminal is wide, else across
// the bottom.
func (m *Model) overview(s *session, w, h, y int) string {
	m.hits.hasTable = false
	n := len(s.view.Links)
	tableRows := min(max(n, 1), max(3, (h-minChartH-lanesH-minMessages-1)))
	table := m.linkTable(s, w, tableRows, y)
	rest := h - len(table)
	focus := m.focused(s)

	if w >= wideLayout {
		rightW := min(max(w/3, 44), 60)
		leftW := w - rightW - 1
		ladder := m.ladder(s, rightW, rest)
		msgs := m.messagesPane(s, rightW, rest-len(ladder))
		right := block(append(ladder, msgs...), rightW, rest)
		left := m.chartsColumn(focus, leftW, rest)
		return block(table, w, len(table)) + "\n" + sideBySide(left, " ", right)
	}
	msgH := max(minMessages, rest-minChartH-lanesH-4)
	msgH = min(msgH, 6)
	mid := rest - msgH
	leftW := w - ladderW - 1
	left := m.chartsColumn(focus, leftW, mid)
	right := block(m.ladder(s, ladderW, mid), ladderW, mid)
	msgs := block(m.messagesPane(s, w, msgH), w, msgH)
	return block(table, w, len(table)) + "\n" + sideBySide(left, " ", right) + "\n" + msgs
}

// chartsColumn stacks the round-trip chart over the loss lanes, on one
// time axis.
func (m *Model) chartsColumn(focus *linkHist, w, h int) string {
	lanes := m.lossLanes(focus, w, min(lanesH, h))
	chart := m.rttChart(focus, w, h-len(lanes))
	return block(append(chart, lanes...), w, h)
}

// linkScreen is the focused link in detail: its numbers, cumulative totals
// and a tall chart; ↑/↓ move the focus from link to link.
func (m *Model) linkScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	st := &m.st
	focus := m.focused(s)
	if focus == nil {
		return block([]string{st.muted.Render("  no links yet")}, w, h)
	}
	lv := &focus.last
	sh := focus.windowShares()
	kv := func(k, v string) string { return st.muted.Render(fit(k, 22)) + st.text.Render(v) }
	links := m.sorted(s)
	pos := indexOf(links, focus.peer)
	info := []string{
		m.rule(st.title.Render("Link "+lv.From+" → "+focus.peer)+st.muted.Render("  "+strconv.Itoa(pos+1)+" of "+strconv.Itoa(len(links))+"  ↑/↓ other links"), w),
		kv("state", lv.State.String()),
		kv("SRTT / RTTVAR", fmtMs(lv.SRTT, lv.RTTKnown)+" / "+fmtMs(lv.RTTVAR, lv.RTTKnown)+" ms"),
		kv("retry timeout (RTO)", fmtMs(lv.RTO, true)+" ms"),
		kv("connection timeout", fmtSec(lv.ConnTimeout)),
		kv("sent / resent", fmtCount(lv.Sent, lv.LossKnown)+" / "+fmtCount(lv.Retransmitted, lv.LossKnown)+"   resend share "+fmtShare(sh.resend)),
		kv("inbound expected/lost", fmtCount(lv.Expected, lv.LossKnown)+" / "+fmtCount(lv.Missing, lv.LossKnown)+"   loss share "+fmtShare(sh.in)),
		kv("peer reports exp/lost", fmtCount(lv.PeerExpected, lv.PeerKnown)+" / "+fmtCount(lv.PeerMissing, lv.PeerKnown)+"   loss share "+fmtShare(sh.out)),
		kv("we waited for it", fmtWait(lv.Caused)+"   its commands complete to frame "+strconv.Itoa(lv.Through)),
	}
	infoW := min(w, 72)
	var lines []string
	if w >= wideLayout {
		right := block(m.ladder(s, w-infoW-1, len(info)+3), w-infoW-1, len(info)+3)
		lines = strings.Split(sideBySide(block(info, infoW, len(info)+3), " ", right), "\n")
	} else {
		lines = info
	}
	rest := h - len(lines)
	return block(append(lines, strings.Split(m.chartsColumn(focus, w, rest), "\n")...), w, h)
}

// playersScreen lists every machine of the session with its latest report
// (S5–S8), and ranks whom this machine has waited for.
func (m *Model) playersScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	st := &m.st
	out := []string{m.rule(st.title.Render("Players")+st.muted.Render("  latest reports (S5): round trip, longest wait, processing time"), w)}
	head := fit("  "+fit("PLAYER", 14)+fit("ROLE", 18)+padLeft("REPORT", 8)+padLeft("RTT ms", 9)+padLeft("WAIT", 9)+padLeft("PROCESS", 9)+"  FRESH", w)
	out = append(out, st.muted.Render(head))
	for _, p := range s.view.Players {
		var role []string
		if p.Self {
			role = append(role, "you")
		}
		if p.Master {
			role = append(role, "master")
		}
		if p.Observer {
			role = append(role, "observer")
		}
		if p.Removed {
			role = append(role, "left")
		}
		if len(role) == 0 {
			role = append(role, "player")
		}
		rep, rtt, wait, proc, fresh := unknown, unknown, unknown, unknown, unknown
		if r := p.Report; r != nil {
			rep = "f" + strconv.Itoa(r.Frame)
			if r.RTT != nil {
				rtt = fmtMs(*r.RTT, true)
			} else {
				rtt = unknown + " (S6)"
			}
			wait, proc = fmtWait(r.Wait), fmtWait(r.Process)
			fresh = "expired"
			if r.Fresh {
				fresh = "fresh"
			}
		}
		line := "  " + st.text.Render(fit(p.Name, 14)) + st.muted.Render(fit(strings.Join(role, ", "), 18)) +
			st.text.Render(padLeft(rep, 8)+padLeft(rtt, 9)+padLeft(wait, 9)+padLeft(proc, 9)) + "  " + st.text.Render(fresh)
		out = append(out, fit(line, w))
	}
	if len(s.view.Players) == 0 {
		out = append(out, st.muted.Render("  no players yet"))
	}
	out = append(out, "", m.rule(st.title.Render("Who made us wait")+st.muted.Render("  time this machine spent waiting for each peer's commands"), w))
	links := s.current()
	sort.SliceStable(links, func(i, j int) bool { return links[i].last.Caused > links[j].last.Caused })
	var top time.Duration
	for _, l := range links {
		top = max(top, l.last.Caused)
	}
	barW := max(10, w-40)
	for _, l := range links {
		n := 0
		if top > 0 {
			n = int(float64(barW) * float64(l.last.Caused) / float64(top))
		}
		bar := st.worst.Render(strings.Repeat("█", n)) + st.border.Render(strings.Repeat("·", barW-n))
		out = append(out, fit("  "+st.text.Render(fit(l.peer, 14))+padLeft(fmtWait(l.last.Caused), 8)+"  "+bar, w))
	}
	return block(out, w, h)
}

// messagesScreen is the whole message list, newest first; ↑/↓ scroll.
func (m *Model) messagesScreen(s *session, w, h, y int) string {
	m.hits.hasTable = false
	st := &m.st
	m.msgTop = max(0, min(m.msgTop, len(s.msgs)-1))
	title := st.title.Render("Messages") + st.muted.Render("  newest first · "+strconv.Itoa(len(s.msgs))+" in all · ↑/↓ scroll")
	out := []string{m.rule(title, w)}
	out = append(out, m.messageLines(s, w, h-1, m.msgTop)...)
	return block(out, w, h)
}
