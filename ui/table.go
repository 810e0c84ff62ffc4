package ui

import (
	"sort"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/probe/feed"
)

// tablePane is the link table: one row per private link, its cursor, its
// sort order and how far it is scrolled.
type tablePane struct {
	*ctx
	row      rowWriter // builds a row; its scratch is kept between rows
	heading  memo[headingKey, tableHeading]
	drawn    memo[tableKey, tablePart] // the whole table, with its hit map
	selected string                    // the link under the cursor, by peer
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
		p.sortBy = nextSort(p.sortBy)
		p.sortDesc = firstDesc(p.sortBy)
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
	p.sortDesc = firstDesc(k)
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

// sortKey is what the link table is sorted by: the house order, or a
// column (tableCols says which).
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
)

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
	c := columnOf(p.sortBy)
	if c == nil {
		return links
	}
	value := c.value
	sort.SliceStable(links, func(i, j int) bool {
		if value == nil {
			if p.sortDesc {
				return links[i].peer > links[j].peer
			}
			return links[i].peer < links[j].peer
		}
		a, aok := value(links[i])
		b, bok := value(links[j])
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
		return rank{h.last.Bad || h.last.State == feed.LinkBad, rtt}
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

// wideTable is the width from which the table uses its long headings and
// state names.
const wideTable = 100

// sparkFloor is the least top of the sparklines' scale, in ms: about what
// rung 2 covers at 30 fps, so bars reach the top only for round trips that
// cost the session a rung or more.
const sparkFloor = 250.0

// sparkRunes draw a sparkline, lowest first.
var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// tableKey is what the table is drawn from.
type tableKey struct {
	s             *session
	gen           uint64
	w, rows, y    int
	sel           string
	by            sortKey
	desc          bool
	top           int
	theme         string
	hasRowsToDraw bool
}

// tablePart is the drawn table and the table's part of the hit map,
// restored with the lines.
type tablePart struct {
	lines []string
	hits  hitMap
}

// cached is the link table, drawn again only when its inputs change; its
// hit map comes back with it.
func (p *tablePane) cached(s *session, w, rows, y int) []string {
	k := tableKey{s, s.gen, w, rows, y, p.selected, p.sortBy, p.sortDesc, p.top, p.st.theme.Name, len(s.view.Links) > 0}
	part := p.drawn.get(k, func() tablePart {
		lines := p.linkTable(s, w, rows, y)
		h := &p.hits
		return tablePart{lines: lines, hits: hitMap{tableY: h.tableY, hasTable: h.hasTable,
			rows: append([]string(nil), h.rows...), cols: append([]span(nil), h.cols...), colKeys: append([]sortKey(nil), h.colKeys...)}}
	})
	h := &p.hits
	h.tableY, h.hasTable = part.hits.tableY, part.hits.hasTable
	h.rows, h.cols, h.colKeys = part.hits.rows, part.hits.cols, part.hits.colKeys
	return part.lines[:len(part.lines):len(part.lines)]
}

// linkTable draws the heading and up to rows links, scrolled so the cursor
// stays visible. y is the screen row of the heading, for the mouse.
func (p *tablePane) linkTable(s *session, w, rows, y int) []string {
	st := &p.st
	links := p.sorted(s)
	wide := w >= wideTable
	widths, sparkW := tableWidths(w)

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

// tableWidths are the columns' widths in a table w cells wide, and the
// room left for the sparklines after the gutter and the columns.
func tableWidths(w int) (widths []int, sparkW int) {
	widths = make([]int, len(tableCols))
	fixed := 2
	for i, c := range tableCols {
		widths[i] = c.nw
		if w >= wideTable {
			widths[i] = c.w
		}
		fixed += widths[i] + 1
	}
	return widths, max(0, w-fixed)
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

// linkRow draws one link: its gutter, a cell for each column and its
// sparkline. The selected row is drawn plain and then reversed as a whole,
// so inner colours cannot break the highlight.
func (p *tablePane) linkRow(h *linkHist, widths []int, sparkW int, top float64, fps int, wide, selected, isWorst bool, w int) string {
	st := &p.st
	r := &p.row
	r.b = strings.Builder{} // the last row's buffer is that row's line now
	r.b.Grow(w*3 + 256)
	r.st, r.sh, r.fps, r.wide, r.selected, r.worst = st, h.windowShares(), fps, wide, selected, isWorst
	b := &r.b
	writeGutter(b, st, selected, isWorst)
	for i := range tableCols {
		tableCols[i].cell(r, h, widths[i])
	}
	if sparkW >= 4 {
		sp := tail(h.samples, sparkW)
		if selected || st.srtt.plainRun() {
			if !selected {
				b.WriteString(st.srtt.pre)
			}
			writeSparkline(b, sp, top, sparkW)
			if !selected {
				b.WriteString(st.srtt.suf)
			}
		} else {
			st.srtt.put(b, sparkline(sp, top, sparkW))
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

// writeGutter writes the row's first two cells: the cursor and the worst
// link's mark.
func writeGutter(b *strings.Builder, st *styles, selected, isWorst bool) {
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
		st.worst.put(b, gutter)
	} else {
		b.WriteString(gutter)
	}
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
