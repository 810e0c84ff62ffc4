package ui

import (
	"math"
	"strconv"
	"strings"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/canvas/runes"
	"github.com/NimbleMarkets/ntcharts/linechart"
	"github.com/NimbleMarkets/ntcharts/linechart/streamlinechart"
	"github.com/charmbracelet/lipgloss"
)

// gutter is the width of the charts' and lanes' left labels: the round-trip
// chart's y labels (5 cells) and the lanes' names, so that column k of the
// chart and column k of every lane are the same interval.
const gutter = 5

// Hint thresholds for L8: a resend share this high, and this many times the
// observed loss, reads as a round-trip estimate that has fallen behind.
const (
	hintMinResend = 0.05
	hintFactor    = 3.0
)

// chartPane is the focused link's round-trip chart over its loss lanes.
// It stays on the link the user chose (focus); with none chosen it shows
// the worst link, else the first.
type chartPane struct {
	*ctx
	focus  string
	canvas *rttCanvas // the round-trip chart, kept between pictures
	plot   memo[plotKey, []string]
	drawn  memo[chartKey, string] // the whole column
}

// chartKey is what the chart column is drawn from.
type chartKey struct {
	s     *session
	gen   uint64
	focus string
	w, h  int
	theme string
}

// cached is the focused link's chart column, drawn again only when its
// inputs change.
func (p *chartPane) cached(s *session, focus *linkHist, w, h int) string {
	peer := ""
	if focus != nil {
		peer = focus.peer
	}
	return p.drawn.get(chartKey{s, s.gen, peer, w, h, p.st.theme.Name}, func() string {
		return p.column(focus, w, h)
	})
}

// plotKey is what the round-trip plot is drawn from.
type plotKey struct {
	h      *linkHist
	bucket int64
	n      int
	w, gh  int
	theme  string
}

// column stacks the round-trip chart over the loss lanes, on one time axis.
func (p *chartPane) column(focus *linkHist, w, h int) string {
	lanes := p.lossLanes(focus, w, min(lanesH, h))
	chart := p.rttChart(focus, w, h-len(lanes))
	return block(append(chart, lanes...), w, h)
}

// focused is the link the charts show: the one chosen with enter or a
// click, else the first. It never follows the worst-link mark on its own:
// a chart that changes link whenever the mark moves cannot be read.
func (p *chartPane) focused(s *session) *linkHist {
	if h := s.links[p.focus]; h != nil && h.present {
		return h
	}
	if links := s.current(); len(links) > 0 {
		return links[0]
	}
	return nil
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so axis labels
// stay round.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if f*p >= v {
			return f * p
		}
	}
	return 10 * p
}

// rttChart draws the focused link's SRTT and RTO over time: a title, the
// chart, and a row marking intervals with resends (•) and bad spells (✕).
// The y-range is taken from the intervals on screen only, so after a spike
// has scrolled away the scale comes back down.
func (p *chartPane) rttChart(h *linkHist, w, height int) []string {
	st := &p.st
	if h == nil {
		return []string{p.rule(st.title.Render("Round trip"), w), st.muted.Render("  no link to show")}
	}
	out := []string{p.rule(p.rttTitle(h, w), w)}
	gh := height - 2
	if gh < 2 {
		return out
	}
	cols := w - gutter
	vis := tail(h.samples, cols)
	// The plot is drawn again only when a column is added (a new second)
	// or the size, theme or link changes: its drawing library allocates a
	// whole canvas for every drawing, and within a second only
	// the newest column could move, by what that second has seen so far.
	var bucket int64
	if n := len(h.samples); n > 0 {
		bucket = h.samples[n-1].bucket
	}
	plot := p.plot.get(plotKey{h, bucket, len(h.samples), w, gh, st.theme.Name}, func() []string {
		return p.rttPlot(vis, w, gh)
	})
	out = append(out, plot...)
	return append(out, p.marksRow(h, vis, cols))
}

// rttTitle is the chart's title: the link, its round trip and retry
// timeout in their lines' inks, and the marks' legend where it fits. The
// longest wording that fits whole is used: the values stay, the words go.
func (p *chartPane) rttTitle(h *linkHist, w int) string {
	st := &p.st
	srtt, rto := fmtMs(h.last.SRTT, h.last.RTTKnown), fmtMs(h.last.RTO, true)
	var tb strings.Builder
	tb.Grow(256)
	for _, words := range [][2]string{{"╭now ", "┌retry after "}, {"╭", "┌retry "}, {"╭", "┌"}} {
		tb.Reset()
		tb.Grow(256)
		st.title.put(&tb, "Round trip · "+h.peer)
		tb.WriteByte(' ')
		st.srtt.put(&tb, words[0]+srtt)
		tb.WriteByte(' ')
		st.rto.put(&tb, words[1]+rto)
		st.muted.put(&tb, " ms")
		if width(tb.String())+4 <= w {
			break
		}
	}
	tw := width(tb.String())
	if lw := 1 + width("•resends ✕bad"); tw+lw+4 <= w {
		tb.WriteByte(' ')
		st.warn.put(&tb, "•")
		st.muted.put(&tb, "resends ")
		st.err.put(&tb, "✕")
		st.muted.put(&tb, "bad")
	}
	return tb.String()
}

// rttPlot draws the round trip and the retry timeout of the samples vis
// on gh rows, with labels on the left.
func (p *chartPane) rttPlot(vis []sample, w, gh int) []string {
	// Labels every ystep rows at round values: the top is a whole number
	// of nice label steps. The chart maps values onto rows 0..gh-1 (its
	// origin row is the lowest), so the labels are computed from the row,
	// not from the value ntcharts offers, which assumes gh rows of height.
	ystep := 2
	if gh <= 4 {
		ystep = gh - 1
	}
	rowsUp := float64(gh - 1)
	labels := max(1, (gh-1)/ystep)
	step := niceCeil(plotTop(vis) * 1.05 / float64(labels))
	top := step * rowsUp / float64(ystep)
	chart := p.chartFor(w, gh, ystep, top)
	// Series start at their first known value; a gap later (a link that
	// lost its estimate) repeats the last value so the line stays whole.
	var lastS, lastR float64
	var haveS, haveR bool
	for _, s := range vis {
		if s.hasSRTT {
			lastS, haveS = s.srtt, true
		}
		if s.hasRTO && haveS {
			lastR, haveR = s.rto, true
		}
		if haveR {
			chart.PushDataSet("rto", lastR)
		}
		if haveS {
			chart.PushDataSet("srtt", lastS)
		}
	}
	if haveR || haveS {
		chart.DrawDataSets([]string{"rto", "srtt"})
	} else {
		chart.DrawXYAxisAndLabel()
	}
	return p.canvasLines(&chart.Canvas)
}

// plotTop is the largest value the plot shows. The retry timeout counts
// only from the first measured round trip: before it (the lobby, a link
// still unmeasured) it is the initial one-second guess, which would pin
// the scale at 1200 ms long after a 1.5 ms link has been measured.
func plotTop(vis []sample) float64 {
	top := 0.0
	measured := false
	for _, s := range vis {
		measured = measured || s.hasSRTT
		if s.hasRTO && measured {
			top = max(top, s.rto)
		}
		if s.hasSRTT {
			top = max(top, s.srtt)
		}
	}
	return top
}

// marksRow marks the intervals of vis with a bad link or resends, in the
// same columns as the chart.
func (p *chartPane) marksRow(h *linkHist, vis []sample, cols int) string {
	st := &p.st
	var mb strings.Builder
	mb.Grow(gutter + cols*16)
	st.muted.put(&mb, spaces(gutter))
	off := len(h.samples) - len(vis)
	for i := len(vis); i < cols; i++ {
		mb.WriteByte(' ')
	}
	for i := range vis {
		switch {
		case vis[i].bad:
			st.err.put(&mb, "✕")
		case h.retried(off + i):
			st.warn.put(&mb, "•")
		default:
			mb.WriteByte(' ')
		}
	}
	return mb.String()
}

// laneRunes draw one interval's share in a lane; the scale is a square root
// so that the loss shares that matter (a few percent) are visible.
var laneRunes = []rune("▁▂▃▄▅▆▇█")

// laneFull is the share drawn as a full cell.
const laneFull = 0.25

func laneCell(s share) rune {
	switch {
	case !s.ok:
		return ' ' // nothing to divide: unknown, not zero (L3)
	case s.v <= 0:
		return '·'
	}
	lvl := int(math.Ceil(math.Sqrt(min(s.v, laneFull)/laneFull)*float64(len(laneRunes)))) - 1
	return laneRunes[max(0, min(len(laneRunes)-1, lvl))]
}

// lossLanes draws the focused link's three loss lanes on the charts' time
// axis: resend share, observed inbound loss, peer-reported outbound loss,
// one interval per column, each differenced from the cumulative totals (L5).
// The last line is the L8 hint when resends run far above the loss actually
// observed, else the time axis.
func (p *chartPane) lossLanes(h *linkHist, w, height int) []string {
	st := &p.st
	if h == nil {
		return []string{p.rule(st.title.Render("Loss"), w)}
	}
	sh := h.windowShares()
	var tb strings.Builder
	tb.Grow(256)
	st.title.put(&tb, "Loss · "+h.peer)
	tb.WriteString("  ")
	st.resend.put(&tb, "resend "+fmtShare(sh.resend))
	tb.WriteString("  ")
	st.in.put(&tb, "in "+fmtShare(sh.in))
	tb.WriteString("  ")
	st.out.put(&tb, "out "+fmtShare(sh.out))
	st.muted.put(&tb, "  last "+strconv.Itoa(tableWindow)+"s")
	out := []string{p.rule(tb.String(), w)}
	cols := w - gutter
	vis := tail(h.samples, cols)
	off := len(h.samples) - len(vis)
	lanes := [...]struct {
		name  string
		style paint
		pick  func(shares) share
	}{
		{"rsnd", st.resend, func(s shares) share { return s.resend }},
		{"in", st.in, func(s shares) share { return s.in }},
		{"out", st.out, func(s shares) share { return s.out }},
	}
	for _, l := range lanes {
		if len(out) >= height {
			break
		}
		var b strings.Builder
		b.Grow(cols*3 + 64)
		writeFit(&b, l.name, gutter-1)
		st.border.put(&b, "│")
		for i := len(vis); i < cols; i++ {
			b.WriteByte(' ')
		}
		if l.style.plainRun() {
			b.WriteString(l.style.pre)
			for i := range vis {
				b.WriteRune(laneCell(l.pick(h.intervalShares(off + i))))
			}
			b.WriteString(l.style.suf)
		} else {
			var cells strings.Builder
			for i := range vis {
				cells.WriteRune(laneCell(l.pick(h.intervalShares(off + i))))
			}
			l.style.put(&b, cells.String())
		}
		out = append(out, b.String())
	}
	if len(out) < height {
		if long, short, ok := l8Hint(sh); ok {
			hint := "⚠ " + long
			if lipgloss.Width(hint) > w {
				hint = "⚠ " + short
			}
			out = append(out, st.warn.Render(fit(hint, w)))
		} else {
			out = append(out, p.timeAxis(w))
		}
	}
	return out
}

// timeAxis labels the charts' columns: seconds before now.
func (p *chartPane) timeAxis(w int) string {
	cols := w - gutter
	left := "-" + strconv.Itoa(cols) + "s"
	mid := "1 column = " + strconv.Itoa(int(interval.Seconds())) + " s"
	right := "now"
	line := strings.Repeat(" ", gutter) + left
	pad := cols - len(left) - len(right)
	if pad > len(mid)+2 {
		l := (pad - len(mid)) / 2
		line += strings.Repeat(" ", l) + mid + strings.Repeat(" ", pad-l-len(mid))
	} else {
		line += strings.Repeat(" ", max(pad, 1))
	}
	return p.st.muted.Render(line + right)
}

// l8Hint says when resends run far above observed loss (L8): some resending
// is normal (one loss retried three times counts three; a lost or late ack
// resends a datagram that arrived), but a resend share far above a near-zero
// loss share points at a round-trip estimate that has fallen behind.
func l8Hint(sh shares) (long, short string, ok bool) {
	if !sh.resend.ok || sh.resend.v < hintMinResend {
		return "", "", false
	}
	observed, known := 0.0, false
	for _, s := range []share{sh.in, sh.out} {
		if s.ok {
			observed, known = max(observed, s.v), true
		}
	}
	if !known || sh.resend.v < hintFactor*observed {
		return "", "", false
	}
	r, o := fmtShare(sh.resend), fmtShare(share{observed, true})
	return "resends " + r + " far above observed loss " + o + ": the round-trip estimate may have fallen behind",
		"resends " + r + " ≫ loss " + o + ": estimate behind?", true
}

// styleKey is what tells our chart styles apart; lipgloss styles are not
// comparable, and the few the charts use differ in these.
type styleKey struct {
	fg                            lipgloss.TerminalColor
	bold, under, rev, faint, ital bool
}

func keyOf(s lipgloss.Style) styleKey {
	return styleKey{s.GetForeground(), s.GetBold(), s.GetUnderline(), s.GetReverse(), s.GetFaint(), s.GetItalic()}
}

// canvasLines draws an ntcharts canvas one run of like-styled cells at a
// time. The canvas's own View renders every cell on its own, which is most
// of the cost of a frame; runs make it a handful of renders per line, and a
// run in one of the theme's inks is painted from its sequences.
func (p *chartPane) canvasLines(c *canvas.Model) []string {
	st := &p.st
	inks := []paint{st.border, st.muted, st.text, st.rto, st.srtt}
	// known are the run styles met so far, with the ink that paints them
	// the same (checked once per style, not assumed from the key).
	type found struct {
		k  styleKey
		p  *paint
		ok bool
	}
	var known []found
	inkOf := func(k styleKey, s lipgloss.Style) *paint {
		for _, f := range known {
			if f.k == k {
				return f.p
			}
		}
		f := found{k: k}
		for i := range inks {
			if keyOf(inks[i].Style()) == k && inks[i].plainRun() && inks[i].Render(probeText) == s.Render(probeText) {
				f.p = &inks[i]
				break
			}
		}
		known = append(known, f)
		return f.p
	}
	w, h := c.Width(), c.Height()
	out := make([]string, 0, h)
	var line, run strings.Builder
	for y := 0; y < h; y++ {
		line.Reset()
		line.Grow(w * 8)
		run.Reset()
		writeCanvasRow(&line, &run, c, y, w, inkOf)
		out = append(out, line.String())
	}
	return out
}

// writeCanvasRow writes row y of the canvas to line, one escape sequence
// per run of cells of one style: a run an ink paints the same is painted
// with its sequences (inkOf finds it), any other through lipgloss, built
// up in run.
func writeCanvasRow(line, run *strings.Builder, c *canvas.Model, y, w int, inkOf func(styleKey, lipgloss.Style) *paint) {
	var cur lipgloss.Style
	var curKey styleKey
	var curInk *paint
	plain, open := true, false
	flush := func() {
		switch {
		case curInk != nil:
			if open {
				line.WriteString(curInk.suf)
			}
		case run.Len() == 0:
		case plain:
			line.WriteString(run.String())
		default:
			line.WriteString(cur.Render(run.String()))
		}
		run.Reset()
		open = false
	}
	for x := 0; x < w; x++ {
		cell := c.Cell(canvas.Point{X: x, Y: y})
		r := cell.Rune
		if r == 0 {
			r = ' '
		}
		k := keyOf(cell.Style)
		isPlain := k == (styleKey{fg: lipgloss.NoColor{}}) || r == ' '
		if x == 0 || isPlain != plain || (!isPlain && k != curKey) {
			flush()
			plain, cur, curKey, curInk = isPlain, cell.Style, k, nil
			if !plain {
				curInk = inkOf(k, cur)
			}
		}
		switch {
		case curInk != nil:
			if !open {
				line.WriteString(curInk.pre)
				open = true
			}
			line.WriteRune(r)
		case plain:
			line.WriteRune(r)
		default:
			run.WriteRune(r)
		}
	}
	flush()
}

// rttCanvas keeps the round-trip chart between pictures: building an
// ntcharts canvas allocates a styled cell per character, so the chart is
// rebuilt only when its size or theme changes, and otherwise cleared and
// redrawn with a new y-range.
type rttCanvas struct {
	w, h, ystep int
	theme       string
	top         float64
	chart       streamlinechart.Model
}

func (p *chartPane) chartFor(w, gh, ystep int, top float64) *streamlinechart.Model {
	st := &p.st
	c := p.canvas
	if c == nil || c.w != w || c.h != gh || c.ystep != ystep || c.theme != st.theme.Name {
		c = &rttCanvas{w: w, h: gh, ystep: ystep, theme: st.theme.Name, top: top}
		rowsUp := float64(gh - 1)
		lc := linechart.New(w, gh, 0, 1, 0, top,
			linechart.WithXYSteps(0, ystep),
			linechart.WithStyles(st.border.Style(), st.muted.Style(), st.text.Style()),
			linechart.WithYLabelFormatter(func(i int, _ float64) string {
				return padLeft(strconv.FormatFloat(float64(i)*c.top/rowsUp, 'f', 0, 64), gutter)
			}))
		c.chart = streamlinechart.New(w, gh, streamlinechart.WithLineChart(&lc))
		c.chart.SetDataSetStyles("rto", runes.ThinLineStyle, st.rto.Style())
		c.chart.SetDataSetStyles("srtt", runes.ArcLineStyle, st.srtt.Style())
		p.canvas = c
	}
	c.top = top
	c.chart.ClearAllData()
	c.chart.SetYRange(0, top)
	c.chart.SetViewYRange(0, top)
	return &c.chart
}
