package ui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/rungs"
)

// column is one link-table column in its wide and narrow forms.
type column struct {
	key         sortKey
	head, short string
	w, nw       int // widths: wide, narrow
	right       bool
}

var tableCols = []column{
	{sortPeer, "PEER", "PEER", 10, 8, false},
	{sortState, "STATE", "STATE", 11, 6, false},
	{sortSRTT, "SRTT ms", "SRTT", 7, 5, true},
	{sortRTTVAR, "VAR ms", "VAR", 6, 5, true},
	{sortRTO, "RTO ms", "RTO", 6, 5, true},
	{sortConn, "CONN", "CONN", 5, 5, true},
	{sortResend, "RESEND", "RSND", 6, 5, true},
	{sortIn, "IN LOSS", "IN", 7, 5, true},
	{sortOut, "OUT LOSS", "OUT", 8, 5, true},
	{sortWait, "WAITED", "WAIT", 7, 6, true},
}

// wideTable is the width from which the table uses its long headings and
// state names.
const wideTable = 100

var shortState = map[probe.LinkState]string{probe.LinkMeasured: "meas", probe.LinkProvisional: "prov", probe.LinkUnmeasured: "unmeas", probe.LinkBad: "BAD"}

// sparkFloor is the least top of the sparklines' scale, in ms: about what
// rung 2 covers at 30 fps, so bars reach the top only for round trips that
// cost the session a rung or more.
const sparkFloor = 250.0

// sparkRunes draw a sparkline, lowest first.
var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// linkTable draws the heading and up to rows links, scrolled so the cursor
// stays visible. y is the screen row of the heading, for the mouse.
func (m *Model) linkTable(s *session, w, rows, y int) []string {
	st := &m.st
	links := m.sorted(s)
	wide := w >= wideTable
	widths := make([]int, len(tableCols))
	fixed := 2
	for i, c := range tableCols {
		widths[i] = c.nw
		if wide {
			widths[i] = c.w
		}
		fixed += widths[i] + 1
	}
	sparkW := max(0, w-fixed)

	// Heading, with the sort column marked.
	m.hits.hasTable, m.hits.tableY = true, y
	m.hits.cols, m.hits.colKeys = m.hits.cols[:0], m.hits.colKeys[:0]
	var hb strings.Builder
	hb.WriteString("  ")
	x := 2
	for i, c := range tableCols {
		h := c.short
		if wide {
			h = c.head
		}
		if m.sortBy == c.key {
			if r := []rune(h); len(r) >= widths[i] {
				h = string(r[:widths[i]-1])
			}
			if m.sortDesc {
				h += "▼"
			} else {
				h += "▲"
			}
		}
		cell := fit(h, widths[i])
		if c.right {
			cell = padLeft(h, widths[i])
		}
		hb.WriteString(cell + " ")
		m.hits.cols = append(m.hits.cols, span{x, x + widths[i]})
		m.hits.colKeys = append(m.hits.colKeys, c.key)
		x += widths[i] + 1
	}
	if sparkW >= 4 {
		hb.WriteString(fit("SRTT history", sparkW))
	}
	out := []string{st.muted.Render(fit(hb.String(), w))}

	if len(links) == 0 {
		out = append(out, st.muted.Render("  no links yet"))
		m.hits.rows = nil
		return out
	}
	// Keep the cursor on screen.
	cur := indexOf(links, m.selected)
	if cur < 0 {
		cur = 0
		m.selected = links[0].peer
	}
	rows = max(rows, 1)
	if cur < m.tableTop {
		m.tableTop = cur
	}
	if cur >= m.tableTop+rows {
		m.tableTop = cur - rows + 1
	}
	m.tableTop = max(0, min(m.tableTop, len(links)-rows))

	// One scale for every sparkline, so the worst link stands out; its
	// floor keeps a steady, short round trip from reading as a full bar.
	top := sparkFloor
	for _, h := range links {
		for _, smp := range tail(h.samples, sparkW) {
			if smp.hasSRTT && smp.srtt > top {
				top = smp.srtt
			}
		}
	}
	worstPeer := worst(links)
	fps := s.view.FPS
	m.hits.rows = m.hits.rows[:0]
	for i := m.tableTop; i < len(links) && i < m.tableTop+rows; i++ {
		h := links[i]
		m.hits.rows = append(m.hits.rows, h.peer)
		out = append(out, m.linkRow(h, widths, sparkW, top, fps, wide, h.peer == m.selected, h.peer == worstPeer, w))
	}
	if n := len(links); n > rows {
		// Say there is more than fits.
		last := out[len(out)-1]
		more := st.muted.Render(" " + itoa(m.tableTop+1) + "–" + itoa(min(n, m.tableTop+rows)) + "/" + itoa(n))
		out[len(out)-1] = fit(last, w-lipgloss.Width(more)) + more
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func tail(s []sample, n int) []sample {
	if n <= 0 {
		return nil
	}
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// linkRow draws one link. The selected row is drawn plain and then reversed
// as a whole, so inner colours cannot break the highlight.
func (m *Model) linkRow(h *linkHist, widths []int, sparkW int, top float64, fps int, wide, selected, isWorst bool, w int) string {
	st := &m.st
	lv := &h.last
	paint := func(s string, style lipgloss.Style) string {
		if selected {
			return s
		}
		return style.Render(s)
	}
	sh := h.windowShares()
	cells := make([]string, len(tableCols))
	peer := h.peer
	if lv.Observer {
		peer += " (obs)"
	}
	cells[0] = paint(fit(peer, widths[0]), st.text)
	if isWorst {
		cells[0] = paint(fit(peer, widths[0]), st.worst)
	}
	state := lv.State.String()
	if !wide {
		if s, ok := shortState[lv.State]; ok {
			state = s
		}
	}
	if state == "" {
		state = unknown
	}
	stStyle := st.muted
	switch lv.State {
	case probe.LinkMeasured:
		stStyle = st.good
	case probe.LinkProvisional:
		stStyle = st.warn
	case probe.LinkBad:
		stStyle = st.err
	}
	cells[1] = paint(fit(state, widths[1]), stStyle)
	srttStyle := st.text
	if lv.RTTKnown && fps > 0 {
		srttStyle = st.tierStyle(rungs.Need(lv.SRTT, fps).Tier())
	}
	num := func(i int, s string, style lipgloss.Style) {
		if s == unknown {
			style = st.muted
		}
		cells[i] = paint(padLeft(s, widths[i]), style)
	}
	num(2, fmtMs(lv.SRTT, lv.RTTKnown), srttStyle)
	num(3, fmtMs(lv.RTTVAR, lv.RTTKnown), st.text)
	num(4, fmtMs(lv.RTO, true), st.text)
	num(5, fmtSec(lv.ConnTimeout), st.text)
	num(6, fmtShare(sh.resend), st.resend)
	num(7, fmtShare(sh.in), st.in)
	num(8, fmtShare(sh.out), st.out)
	num(9, fmtWait(lv.Caused), st.text)

	var b strings.Builder
	// Column 0 is the cursor, column 1 the worst link's mark.
	gutter := []byte("  ")
	if selected {
		gutter[0] = '>'
	}
	if isWorst {
		gutter[1] = '!'
	}
	if isWorst && !selected {
		b.WriteString(st.worst.Render(string(gutter)))
	} else {
		b.Write(gutter)
	}
	for _, c := range cells {
		b.WriteString(c)
		b.WriteByte(' ')
	}
	if sparkW >= 4 {
		b.WriteString(paint(sparkline(tail(h.samples, sparkW), top, sparkW), st.srtt))
	}
	line := fit(b.String(), w)
	if selected {
		return st.selected.Render(line)
	}
	return line
}

// sparkline draws SRTT samples right-aligned in w cells on a scale from 0
// to top; intervals with no round trip yet are blank.
func sparkline(samples []sample, top float64, w int) string {
	var b strings.Builder
	for i := len(samples); i < w; i++ {
		b.WriteByte(' ')
	}
	for _, s := range samples {
		if !s.hasSRTT || top <= 0 {
			b.WriteByte(' ')
			continue
		}
		lvl := int(s.srtt / top * float64(len(sparkRunes)-1))
		lvl = max(0, min(len(sparkRunes)-1, lvl))
		b.WriteRune(sparkRunes[lvl])
	}
	return b.String()
}
