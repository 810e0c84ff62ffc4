package ui

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/units"
)

// pathName is the Path view's name in the tab bar.
const pathName = "Path"

// pathPane is the Path view: one link's hop trace, as this machine traces
// it on the game's own socket (docs/path.md), one row per hop like mtr.
// The engine traces a link only while the view shows it, so the model
// tells it when the view opens, changes link and closes.
type pathPane struct {
	*ctx
	peer  string // the link shown, by peer; "" when there is none
	asked bool   // the engine was asked to trace peer
	back  int    // the view the Path view was opened from, for esc
	top   int    // first line shown
}

// key scrolls a trace longer than the screen; it reports whether it used
// the key. ↑/↓ are the model's: they move to other links.
func (p *pathPane) key(msg tea.KeyMsg) bool {
	k := &p.keys
	switch {
	case key.Matches(msg, k.PageUp):
		p.top = max(0, p.top-10)
	case key.Matches(msg, k.PageDown):
		p.top += 10
	default:
		return false
	}
	return true
}

// Column widths of the hop table; the address column is as wide as the
// longest address, the bar and the marks take the rest.
const (
	pathHopW   = 3
	pathLinkW  = 6
	pathLossW  = 6
	pathMsW    = 8
	pathAddrW  = 15 // an IPv4 address
	pathBarMax = 40
	pathBarMin = 10
)

// pathOf is the trace of peer in the newest picture, nil when there is
// none yet.
func pathOf(s *session, peer string) *feed.PathView {
	for i := range s.view.Paths {
		if s.view.Paths[i].Peer == peer {
			return &s.view.Paths[i]
		}
	}
	return nil
}

// view draws the Path view of p.peer: the title, what the view is, then
// the hops or why there are none, scrolled to top.
func (p *pathPane) view(s *session, links []*linkHist, w, h int) string {
	st := &p.st
	if p.peer == "" {
		out := []string{p.rule(st.title.Render("Path"), w), st.muted.Render("  no links yet")}
		return block(out, w, h)
	}
	pos := indexOf(links, p.peer)
	title := st.title.Render("Path · " + p.peer)
	if pos >= 0 {
		title += st.muted.Render("  " + strconv.Itoa(pos+1) + " of " + strconv.Itoa(len(links)) + "  ↑/↓ other links")
	}
	out := []string{p.rule(title, w)}
	out = p.para(out, "hops on the way to "+p.peer+", traced on the game's own socket", w)
	pv := pathOf(s, p.peer)
	switch {
	case pv == nil:
		out = p.para(append(out, ""), "waiting for the trace to start", w)
	case !pv.Available:
		out = append(out, "")
		out = p.para(out, "this machine cannot trace the hops to "+p.peer+": "+pv.Why, w)
		out = p.para(out, "the rest of lagscope works as usual: only the hop trace is missing", w)
	case len(pv.Hops) == 0:
		out = p.para(append(out, ""), "tracing… the first hops answer within a few seconds", w)
	default:
		out = p.hopLines(append(out, ""), pv, w)
		// The summary says in words what the marks say: on a screen too
		// low for both, the table stays whole and the summary gives way,
		// a whole sentence at a time, the legend first.
		out = append(out, "")
		for _, para := range p.summary(pv) {
			lines := p.para(nil, para, w)
			if len(out)+len(lines) > h {
				break
			}
			out = append(out, lines...)
		}
	}
	p.top = min(p.top, max(0, len(out)-h))
	out = out[p.top:]
	if len(out) > h && h > 0 {
		out = append(out[:h-1:h-1], st.accent.Render("  ↓ more (pgdn scrolls)"))
	}
	return block(out, w, h)
}

// para adds plain text to out, wrapped between words and indented.
func (p *pathPane) para(out []string, text string, w int) []string {
	for _, l := range wrap(text, w-2) {
		out = append(out, "  "+p.st.muted.Render(l))
	}
	return out
}

// pathLayout is where the hop table's columns go at a width.
type pathLayout struct {
	addrW, barW int
	inline      bool // the marks fit after the bar; else under the row
	top         float64
}

// layoutOf lays the hop table of pv out in w cells: the address column
// fits the longest address, the bar takes what is left up to
// pathBarMax, and the marks go after it when there is room for the
// longest.
func layoutOf(pv *feed.PathView, marks [][]string, w int) pathLayout {
	l := pathLayout{addrW: pathAddrW}
	for i := range pv.Hops {
		hp := &pv.Hops[i]
		l.addrW = max(l.addrW, width(addrText(hp)))
		if hp.Answered {
			l.top = max(l.top, units.Millis(hp.Median))
		}
	}
	markW := 0
	for _, ms := range marks {
		markW = max(markW, width(strings.Join(ms, "; ")))
	}
	rest := w - (2 + pathHopW + 2 + l.addrW + 2 + pathLinkW + pathLossW + 3*pathMsW + 2)
	if markW > 0 && rest-markW-2 >= pathBarMin {
		l.barW, l.inline = min(pathBarMax, rest-markW-2), true
		return l
	}
	l.barW, l.inline = max(0, min(pathBarMax, rest)), markW == 0
	return l
}

// hopLines adds the hop table to out: a heading, a row per hop and each
// hop's marks, after its bar or on the line under it.
func (p *pathPane) hopLines(out []string, pv *feed.PathView, w int) []string {
	st := &p.st
	marks := make([][]string, len(pv.Hops))
	for i := range pv.Hops {
		marks[i] = hopMarks(pv, i)
	}
	l := layoutOf(pv, marks, w)
	head := "  " + padLeft("HOP", pathHopW) + "  " + fit("ADDRESS", l.addrW) + "  " + fit("LINK", pathLinkW) +
		padLeft("LOSS", pathLossW) + padLeft("BEST", pathMsW) + padLeft("MEDIAN", pathMsW) + padLeft("WORST", pathMsW)
	if l.barW >= len("median ms") {
		head += "  median ms"
	}
	out = append(out, st.muted.Render(fit(head, w)))
	indent := spaces(2 + pathHopW + 2)
	for i := range pv.Hops {
		hp := &pv.Hops[i]
		row := "  " + st.text.Render(padLeft(strconv.Itoa(hp.TTL), pathHopW)) + "  " + st.text.Render(fit(addrText(hp), l.addrW)) +
			"  " + st.muted.Render(fit(linkText(hp.Link), pathLinkW)) + st.text.Render(padLeft(lossText(hp), pathLossW)+
			padLeft(msText(hp, hp.Best), pathMsW)+padLeft(msText(hp, hp.Median), pathMsW)+padLeft(msText(hp, hp.Worst), pathMsW))
		if l.barW > 0 {
			row += "  " + p.bar(pv, hp, l)
		}
		switch {
		case len(marks[i]) == 0:
		case l.inline:
			row += "  " + p.markText(marks[i])
		default:
			out = append(out, fit(row, w))
			row = indent + p.markText(marks[i])
		}
		out = append(out, fit(row, w))
	}
	return out
}

// bar is a hop's median as a bar on the scale of the largest median, in
// the warning ink from the hop where delay starts on.
func (p *pathPane) bar(pv *feed.PathView, hp *feed.PathHop, l pathLayout) string {
	if !hp.Answered || l.top <= 0 {
		return spaces(l.barW)
	}
	n := int(math.Round(float64(l.barW) * units.Millis(hp.Median) / l.top))
	n = max(1, min(l.barW, n))
	ink := p.st.srtt
	if d := pv.DelayStarts; d != nil && hp.TTL >= d.TTL {
		ink = p.st.warn
	}
	return ink.Render(strings.Repeat("█", n)) + spaces(l.barW-n)
}

// markText draws a hop's marks: where delay or loss starts in the warning
// ink, the reassuring ones muted.
func (p *pathPane) markText(ms []string) string {
	ink := p.st.muted
	if strings.HasPrefix(ms[0], "delay") || strings.HasPrefix(ms[0], "loss") {
		ink = p.st.warn
	}
	return ink.Render(strings.Join(ms, "; "))
}

// hopMarks are what a hop's row says besides its numbers: where delay and
// loss start, a rate-limited router, a silent one that later hops show
// is no loss.
func hopMarks(pv *feed.PathView, i int) []string {
	hp := &pv.Hops[i]
	var ms []string
	if d := pv.DelayStarts; d != nil && d.TTL == hp.TTL {
		ms = append(ms, "delay starts here +"+fmtMs(d.Added, true)+" ms")
	}
	if ls := pv.LossStarts; ls != nil && ls.TTL == hp.TTL {
		ms = append(ms, "loss starts here "+fmtShare(share{v: ls.Loss, ok: true}))
	}
	switch {
	case hp.RateLimited:
		ms = append(ms, "answers slowly: rate-limited, not loss")
	case !hp.Answered && laterAnswered(pv, i):
		ms = append(ms, "silent: it does not answer, not loss")
	}
	return ms
}

// laterAnswered reports whether a hop after the i-th answered.
func laterAnswered(pv *feed.PathView, i int) bool {
	for j := i + 1; j < len(pv.Hops); j++ {
		if pv.Hops[j].Answered {
			return true
		}
	}
	return false
}

// summary is what the trace shows in words, a sentence each: where delay
// and loss start, or that nothing starts, or that the peer has not
// answered yet; then what the marks mean.
func (p *pathPane) summary(pv *feed.PathView) []string {
	where := func(ttl int, link vocab.HopLink) string {
		s := "at hop " + strconv.Itoa(ttl) + " (" + linkText(link)
		if link.Valid() {
			s += ": " + link.Words()
		}
		return s + ")"
	}
	var out []string
	if d := pv.DelayStarts; d != nil {
		out = append(out, "delay starts "+where(d.TTL, d.Link)+" and lasts to "+p.peer+": +"+fmtMs(d.Added, true)+" ms")
	}
	if ls := pv.LossStarts; ls != nil {
		s := "loss starts " + where(ls.TTL, ls.Link) + " and lasts to " + p.peer + ": " + fmtShare(share{v: ls.Loss, ok: true}) + " lost"
		for i := range pv.Hops {
			if h := &pv.Hops[i]; h.TTL == ls.TTL && h.LossHi > 0 {
				s += " (95 %: " + fmtShare(share{v: h.LossLo, ok: true}) + " to " + fmtShare(share{v: h.LossHi, ok: true}) + ")"
			}
		}
		out = append(out, s)
	}
	if lp := pv.LossPending; lp != nil {
		s := p.peer + " loses " + fmtShare(share{v: lp.Loss, ok: true}) + "; not enough probes yet to say where it starts"
		if lp.More > 0 {
			s += " — about " + strconv.Itoa(lp.More) + " more"
		}
		out = append(out, s)
	}
	switch {
	case pv.OneHop:
		out = append(out, "one hop: "+p.peer+" is on this machine's network, or is this machine; a trace places nothing beyond this machine's side, its LAN or "+p.peer+"'s machine")
	case !pv.Complete:
		out = append(out, "still tracing: "+p.peer+" has not answered yet, more hops may follow")
	case pv.DelayStarts == nil && pv.LossStarts == nil && allJudged(pv):
		out = append(out, "no hop adds delay or loss that lasts to "+p.peer)
	}
	return append(out, unknown+" never answered or not known; the bar is the median, on the scale of the slowest hop; ? explains the links")
}

// allJudged reports whether every hop that answered has enough outcomes
// for the tracer's rules to judge it.
func allJudged(pv *feed.PathView) bool {
	for i := range pv.Hops {
		if pv.Hops[i].Answered && !pv.Hops[i].Judged {
			return false
		}
	}
	return true
}

// addrText is a hop's address, made safe (an IPv6 zone is text), or
// unknown for a hop that never answered.
func addrText(hp *feed.PathHop) string {
	if !hp.Addr.IsValid() {
		return unknown
	}
	return textOf(hp.Addr.String())
}

// linkText is the name of the link into a hop, unknown when the tracer
// gave none.
func linkText(link vocab.HopLink) string {
	if link == "" {
		return unknown
	}
	return textOf(string(link))
}

// lossText is a hop's loss share, unknown before any outcome.
func lossText(hp *feed.PathHop) string {
	if hp.Sent == 0 {
		return unknown
	}
	return fmtShare(share{v: hp.Loss, ok: true})
}

// msText is one of a hop's round trips, unknown (never 0) for a hop that
// has not answered.
func msText(hp *feed.PathHop, d time.Duration) string {
	return fmtMs(d, hp.Answered)
}
