package ui

import (
	"sort"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/units"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/rungs"
)

// tablePane is the link table: one row per private link, its cursor, its
// sort order and how far it is scrolled.
type tablePane struct {
	*ctx
	numBuf   []byte // scratch for a row's numbers
	heading  memo[headingKey, tableHeading]
	selected string // the link under the cursor, by peer
	sortBy   sortKey
	sortDesc bool
	top      int // first row shown
}

// key handles the table's own keys (sorting); it reports whether it used
// the key.
func (p *tablePane) key(msg tea.KeyMsg) bool {
	k := &p.keys
	switch {
	case key.Matches(msg, k.Sort):
		p.sortBy = (p.sortBy + 1) % sortKeys
		p.sortDesc = p.sortBy != sortHouse && p.sortBy != sortPeer
	case key.Matches(msg, k.Reverse):
		p.sortDesc = !p.sortDesc
	default:
		return false
	}
	return true
}

// sortOn sorts by k, or reverses the order when it already is k (a click
// on a heading).
func (p *tablePane) sortOn(k sortKey) {
	if p.sortBy == k {
		p.sortDesc = !p.sortDesc
		return
	}
	p.sortBy = k
	p.sortDesc = k != sortHouse && k != sortPeer
}

// move moves the cursor d rows through s's links.
func (p *tablePane) move(s *session, d int) {
	links := p.sorted(s)
	if len(links) == 0 {
		return
	}
	i := indexOf(links, p.selected)
	if i < 0 {
		i = 0
		if d < 0 {
			d = 0
		}
	}
	i = max(0, min(len(links)-1, i+d))
	p.selected = links[i].peer
}

func indexOf(links []*linkHist, peer string) int {
	for i, h := range links {
		if h.peer == peer {
			return i
		}
	}
	return -1
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
		return units.Millis(h.last.RTO), true
	case sortConn:
		return units.Millis(h.last.ConnTimeout), true
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
func (p *tablePane) sorted(s *session) []*linkHist {
	links := s.current()
	if p.sortBy == sortHouse {
		if p.sortDesc {
			for i, j := 0, len(links)-1; i < j; i, j = i+1, j-1 {
				links[i], links[j] = links[j], links[i]
			}
		}
		return links
	}
	sort.SliceStable(links, func(i, j int) bool {
		if p.sortBy == sortPeer {
			if p.sortDesc {
				return links[i].peer > links[j].peer
			}
			return links[i].peer < links[j].peer
		}
		a, aok := sortValue(links[i], p.sortBy)
		b, bok := sortValue(links[j], p.sortBy)
		if aok != bok {
			return aok
		}
		if p.sortDesc {
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

// column is one link-table column in its wide and narrow forms.
type column struct {
	key         sortKey
	head, short string
	w, nw       int // widths: wide, narrow
	right       bool
}

// Headings are words a player reads; the short forms (each in the `?`
// glossary) are used only where the width forces them. Every width leaves
// room for the sort arrow after the heading, so the arrow never hides a
// unit.
var tableCols = []column{
	{sortPeer, "PLAYER", "PLAYER", 10, 8, false},
	{sortState, "STATE", "STATE", 11, 6, false},
	{sortSRTT, "RTT ms", "RTT", 7, 5, true},
	{sortRTTVAR, "JITTER", "JIT", 7, 5, true},
	{sortRTO, "RETRY ms", "RETRY", 9, 6, true},
	{sortConn, "TIMEOUT", "T/O", 8, 5, true},
	{sortResend, "RESENT", "RSND", 7, 5, true},
	{sortIn, "LOST IN", "IN", 8, 5, true},
	{sortOut, "LOST OUT", "OUT", 9, 5, true},
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
func (p *tablePane) linkTable(s *session, w, rows, y int) []string {
	st := &p.st
	links := p.sorted(s)
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

	// Heading, with the sort column marked: the same until the width,
	// the order or the theme change.
	p.hits.hasTable, p.hits.tableY = true, y
	head := p.heading.get(headingKey{w, p.sortBy, p.sortDesc, st.theme.Name}, func() tableHeading {
		return p.drawHeading(widths, sparkW, wide, w)
	})
	p.hits.cols = append(p.hits.cols[:0], head.cols...)
	p.hits.colKeys = append(p.hits.colKeys[:0], head.keys...)
	out := []string{head.line}

	if len(links) == 0 {
		out = append(out, st.muted.Render("  no links yet"))
		p.hits.rows = nil
		return out
	}
	// Keep the cursor on screen.
	cur := indexOf(links, p.selected)
	if cur < 0 {
		cur = 0
		p.selected = links[0].peer
	}
	rows = max(rows, 1)
	if cur < p.top {
		p.top = cur
	}
	if cur >= p.top+rows {
		p.top = cur - rows + 1
	}
	p.top = max(0, min(p.top, len(links)-rows))

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
	p.hits.rows = p.hits.rows[:0]
	for i := p.top; i < len(links) && i < p.top+rows; i++ {
		h := links[i]
		p.hits.rows = append(p.hits.rows, h.peer)
		out = append(out, p.linkRow(h, widths, sparkW, top, fps, wide, h.peer == p.selected, h.peer == worstPeer, w))
	}
	if n := len(links); n > rows {
		// Say there is more than fits.
		last := out[len(out)-1]
		more := st.muted.Render(" " + itoa(p.top+1) + "–" + itoa(min(n, p.top+rows)) + "/" + itoa(n))
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

type headingKey struct {
	w     int
	by    sortKey
	desc  bool
	theme string
}

// tableHeading is the table's heading line and where its columns are.
type tableHeading struct {
	line string
	cols []span
	keys []sortKey
}

func (p *tablePane) drawHeading(widths []int, sparkW int, wide bool, w int) tableHeading {
	var th tableHeading
	var hb strings.Builder
	hb.WriteString("  ")
	x := 2
	for i, c := range tableCols {
		h := c.short
		if wide {
			h = c.head
		}
		if p.sortBy == c.key {
			if width(h)+1 > widths[i] {
				h = c.short // the arrow goes after a whole heading
			}
			if p.sortDesc {
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
		th.cols = append(th.cols, span{x, x + widths[i]})
		th.keys = append(th.keys, c.key)
		x += widths[i] + 1
	}
	if sparkW >= 4 {
		// The longest heading that fits whole.
		for _, h := range []string{"round trip history", "history", ""} {
			if len(h) <= sparkW {
				hb.WriteString(fit(h, sparkW))
				break
			}
		}
	}
	th.line = p.st.muted.Render(fit(hb.String(), w))
	return th
}

// linkRow draws one link. The selected row is drawn plain and then reversed
// as a whole, so inner colours cannot break the highlight. The row is built
// in one buffer, its numbers formatted into a scratch buffer, so that a new
// picture costs a few allocations per row rather than dozens.
func (p *tablePane) linkRow(h *linkHist, widths []int, sparkW int, top float64, fps int, wide, selected, isWorst bool, w int) string {
	st := &p.st
	lv := &h.last
	var b strings.Builder
	b.Grow(w*3 + 256)
	// Column 0 is the cursor, column 1 the worst link's mark.
	gutter := "  "
	switch {
	case selected && isWorst:
		gutter = ">!"
	case selected:
		gutter = "> "
	case isWorst:
		gutter = " !"
	}
	if isWorst && !selected {
		st.worst.put(&b, gutter)
	} else {
		b.WriteString(gutter)
	}
	// cell writes text fitted to its column in style (plain when the row
	// is selected), padded on the left for a number.
	cell := func(i int, text string, style paint, right bool) {
		if right && text == unknown {
			style = st.muted
		}
		cw := widths[i]
		n := width(text)
		switch {
		case selected && (!right || n >= cw):
			writeFit(&b, text, cw)
		case selected:
			writeSpaces(&b, cw-n)
			b.WriteString(text)
		case !right && n < cw && style.plainRun() && style.ok(text):
			b.WriteString(style.pre)
			b.WriteString(text)
			writeSpaces(&b, cw-n)
			b.WriteString(style.suf)
		case !right || n >= cw:
			style.put(&b, fit(text, cw))
		case style.plainRun():
			b.WriteString(style.pre)
			writeSpaces(&b, cw-n)
			b.WriteString(text)
			b.WriteString(style.suf)
		default:
			style.put(&b, padLeft(text, cw))
		}
		b.WriteByte(' ')
	}
	// num is a formatted number (ASCII) from the scratch buffer.
	num := func(i int, txt []byte, style paint) {
		cw := widths[i]
		if len(txt) < cw && style.plainRun() {
			if !selected {
				b.WriteString(style.pre)
			}
			writeSpaces(&b, cw-len(txt))
			b.Write(txt)
			if !selected {
				b.WriteString(style.suf)
			}
			b.WriteByte(' ')
			return
		}
		cell(i, string(txt), style, true)
	}
	peer := h.peer
	if lv.Observer || lv.Relayed {
		peer = peerLabel(h, widths[0])
	}
	if isWorst {
		cell(0, peer, st.worst, false)
	} else {
		cell(0, peer, st.text, false)
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
	cell(1, state, stStyle, false)
	srttStyle := st.text
	if lv.RTTKnown && fps > 0 {
		srttStyle = st.tierStyle(rungs.Need(lv.SRTT, fps).Tier())
	}
	sh := h.windowShares()
	nb := p.numBuf[:0]
	if lv.RTTKnown {
		nb = appendMs(nb[:0], lv.SRTT)
		num(2, nb, srttStyle)
		nb = appendMs(nb[:0], lv.RTTVAR)
		num(3, nb, st.text)
	} else {
		cell(2, unknown, srttStyle, true)
		cell(3, unknown, st.text, true)
	}
	nb = appendMs(nb[:0], lv.RTO)
	num(4, nb, st.text)
	nb = appendSec(nb[:0], lv.ConnTimeout)
	num(5, nb, st.text)
	for i, c := range []struct {
		s     share
		style paint
	}{{sh.resend, st.resend}, {sh.in, st.in}, {sh.out, st.out}} {
		if !c.s.ok {
			cell(6+i, unknown, c.style, true)
			continue
		}
		nb = appendShare(nb[:0], c.s)
		num(6+i, nb, c.style)
	}
	nb = appendWait(nb[:0], lv.Caused)
	num(9, nb, st.text)
	p.numBuf = nb[:0]

	if sparkW >= 4 {
		sp := tail(h.samples, sparkW)
		if selected || st.srtt.plainRun() {
			if !selected {
				b.WriteString(st.srtt.pre)
			}
			writeSparkline(&b, sp, top, sparkW)
			if !selected {
				b.WriteString(st.srtt.suf)
			}
		} else {
			st.srtt.put(&b, sparkline(sp, top, sparkW))
		}
	}
	line := b.String()
	if width(line) != w {
		line = fit(line, w)
	}
	if selected {
		return st.selected.Render(line)
	}
	return line
}

// peerLabel is a peer's name with its observer's and relay's marks, in
// words where they fit (glossary in ?).
func peerLabel(h *linkHist, w int) string {
	lv := &h.last
	peer := h.peer
	if lv.Observer {
		peer += " (obs)"
		if width(peer) > w {
			peer = h.peer + "°"
		}
	}
	if lv.Relayed {
		// Relayed through the host: the mark, spaced where it
		// fits (the word is in the Link view).
		if width(peer+" "+markRelayed) <= w {
			peer += " " + markRelayed
		} else {
			peer += markRelayed
		}
	}
	return peer
}

// sparkline draws SRTT samples right-aligned in w cells on a scale from 0
// to top; intervals with no round trip yet are blank.
func sparkline(samples []sample, top float64, w int) string {
	var b strings.Builder
	writeSparkline(&b, samples, top, w)
	return b.String()
}

func writeSparkline(b *strings.Builder, samples []sample, top float64, w int) {
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
}
