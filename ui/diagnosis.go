package ui

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lagscope/lagscope/vocab"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/units"
)

// diagnosisPane is the Diagnosis view: the verdict, each
// player's share of the trouble with the evidence behind every cause
// named, and the links whose round trip exceeds what their two players
// explain. NaN in the diagnosis is unknown and shows as "—" (L3). ↑/↓
// scroll it when it is longer than the screen.
type diagnosisPane struct {
	*ctx
	top int
}

// key scrolls the view; it reports whether it used the key.
func (p *diagnosisPane) key(msg tea.KeyMsg) bool {
	k := &p.keys
	switch {
	case key.Matches(msg, k.Up):
		p.top = max(0, p.top-1)
	case key.Matches(msg, k.Down):
		p.top++
	default:
		return false
	}
	return true
}

// Column widths of the players' table; the causes take the rest.
const (
	dgNameW = 10
	dgNumW  = 9
)

// view draws the Diagnosis view: the verdict, the incidents (drawn by
// the Incidents list), the players' table and the links' table, scrolled
// to top.
func (p *diagnosisPane) view(s *session, w, h int, incidents []string) string {
	st := &p.st
	d := s.view.Diagnosis
	out := []string{p.rule(st.title.Render("Diagnosis")+st.muted.Render("  who and what holds the match back"), w)}
	if d == nil {
		out = append(out, st.muted.Render("  no diagnosis yet: it comes with the match's first timing check after the game starts"))
		if len(s.incidents.rows) > 0 {
			out = append(append(out, ""), incidents...)
		}
		return p.scrolled(out, w, h)
	}
	for _, l := range wrap(textOf(strings.Join(s.verdict(), " ")), w-2) {
		out = append(out, "  "+st.text.Render(l))
	}
	out = append(append(append(out, ""), incidents...), "")
	nw := dgNumW
	if w >= wideLayout {
		nw = 11
	}
	out = p.playerLines(out, d, w, nw)
	out = p.whereLines(out, d, w)
	out = p.linkLines(out, d, w, nw)
	return p.scrolled(out, w, h)
}

// scrolled is the view's lines from top, h of them: scrolled when it is
// longer than the screen.
func (p *diagnosisPane) scrolled(out []string, w, h int) string {
	p.top = min(p.top, max(0, len(out)-h))
	out = out[p.top:]
	if len(out) > h && h > 0 {
		out = append(out[:h-1:h-1], p.st.accent.Render("  ↓ more (↑/↓ scroll)"))
	}
	return block(out, w, h)
}

// playerLines adds the players' table to out, numbers nw cells wide, and
// the evidence behind every cause it names.
func (p *diagnosisPane) playerLines(out []string, d *diagnosis.Diagnosis, w, nw int) []string {
	st := &p.st
	// A player's own part of the round trips, of the loss and of the
	// variation: OWN, apart from a link's RTT, loss and JITTER.
	heads := []string{"OWN RTT", "OWN LOSS", "OWN JIT", "PROCESS", "CAUSED", "WITHOUT"}
	if w >= wideLayout {
		heads = []string{"OWN RTT ms", "OWN LOSS", "OWN JIT ms", "PROCESS ms", "CAUSED", "WITHOUT"}
	}
	// Each heading keeps a space before it: the longest a cell or two
	// wider, the rung and the wait (at most "rung 10", "9.9s") a cell
	// narrower.
	cw := []int{nw, nw + 1, nw, nw, nw - 1, nw - 1}
	if w >= wideLayout {
		cw = []int{nw, nw, nw + 2, nw + 2, nw - 1, nw - 1}
	}
	var hb strings.Builder
	hb.WriteString("  " + fit("PLAYER", dgNameW))
	all := 0
	for i, x := range heads {
		hb.WriteString(padLeft(x, cw[i]))
		all += cw[i]
	}
	hb.WriteString("  CAUSES")
	out = append(out, st.muted.Render(fit(hb.String(), w)))
	restW := w - 2 - dgNameW - all - 2
	for i := range d.Players {
		pd := &d.Players[i]
		mark := "  "
		name := st.text
		if pd.Player == d.Culprit {
			mark, name = "! ", st.worst
		}
		rung := unknown
		if pd.RungWithout > 0 {
			rung = "rung " + strconv.Itoa(pd.RungWithout)
		}
		causes := vocab.Join(pd.Causes, ", ")
		if causes == "" {
			causes = "none"
		}
		line := name.Render(mark+fitName(textOf(pd.Player), dgNameW)) + st.text.Render(
			padLeft(fmtMsNaN(pd.AccessRTTMs), cw[0])+padLeft(fmtPctNaN(pd.AccessLoss), cw[1])+padLeft(fmtMsNaN(pd.JitterMs), cw[2])+
				padLeft(fmtMsNaN(pd.ProcessMs), cw[3])+padLeft(fmtWaitNaN(pd.CausedWaitMs), cw[4])+padLeft(rung, cw[5])) +
			"  " + st.warn.Render(fitWords(causes, restW))
		out = append(out, fit(line, w))
	}
	// The evidence behind every cause named.
	var ev []string
	for i := range d.Players {
		pd := &d.Players[i]
		for _, c := range pd.Causes {
			ev = append(ev, textOf(pd.Player)+": "+playerEvidence(d, pd, c))
		}
	}
	if len(ev) > 0 {
		out = append(out, "", st.muted.Render("  Why:"))
		out = p.bullets(out, ev, w)
	}
	return out
}

// whereLines adds where the hop traces say each player's delay starts, and
// the hop several players' paths share, when the traces say anything.
func (p *diagnosisPane) whereLines(out []string, d *diagnosis.Diagnosis, w int) []string {
	var items []string
	for i := range d.Players {
		pd := &d.Players[i]
		if pd.Where == nil {
			continue
		}
		words := pd.Where.Link.Words()
		item := textOf(pd.Player) + ": " + words + " (hop " + strconv.Itoa(pd.Where.TTL) + ", adds " + fmtMsNaN(pd.Where.AddedMs) + " ms)"
		switch n := pd.Where.Confirmed; {
		case n == 1:
			item += "; 1 other player's trace toward it agrees"
		case n > 1:
			item += "; " + strconv.Itoa(n) + " other players' traces toward it agree"
		}
		items = append(items, item)
	}
	if h := d.SharedHop; h != nil {
		names := make([]string, len(h.Players))
		for i, n := range h.Players {
			names[i] = textOf(n)
		}
		items = append(items, "shared hop "+h.Addr.String()+", past the homes: on the paths of "+strings.Join(names, ", ")+
			" (adds "+fmtMsNaN(h.AddedMs)+" ms) — nothing any player can change at home")
	}
	if len(items) == 0 {
		return out
	}
	out = append(out, "", p.st.muted.Render("  Where the delay starts (hop traces):"))
	return p.bullets(out, items, w)
}

// linkLines adds the links with excess to out: a round trip longer than
// its players' shares, numbers nw cells wide, and the evidence behind
// every cause named.
func (p *diagnosisPane) linkLines(out []string, d *diagnosis.Diagnosis, w, nw int) []string {
	st := &p.st
	out = append(out, "", p.rule(st.title.Render("Links")+st.muted.Render("  round trip against what its two players explain"), w))
	out = append(out, st.muted.Render(fit("  "+fit("BETWEEN", 2*dgNameW+3)+padLeft("MEAN RTT", nw)+padLeft("EXPECTED", nw)+padLeft("EXCESS", nw)+padLeft("LOSS", nw)+"  CAUSES", w)))
	shown := 0
	var lev []string
	for i := range d.Links {
		l := &d.Links[i]
		if len(l.Causes) == 0 && !(l.ExcessRTTMs >= excessShown) {
			continue // nothing to say about a link that behaves
		}
		shown++
		between := textOf(l.Between[0]) + " – " + textOf(l.Between[1])
		mark, style := "  ", st.text
		if d.CulpritLink != nil && *d.CulpritLink == l.Between {
			mark, style = "! ", st.worst
		}
		causes := vocab.Join(l.Causes, ", ")
		line := style.Render(mark+fit(between, 2*dgNameW+3)) + st.text.Render(padLeft(fmtMsNaN(l.RTTMs), nw)+padLeft(fmtMsNaN(l.ExpectedRTTMs), nw)+
			padLeft(fmtMsNaN(l.ExcessRTTMs), nw)+padLeft(fmtPctNaN(l.Loss), nw)) + "  " + st.warn.Render(fitWords(causes, max(0, w-2-2*dgNameW-3-4*nw-2)))
		out = append(out, fit(line, w))
		for _, c := range l.Causes {
			lev = append(lev, between+": "+linkEvidence(l, c))
		}
	}
	if shown == 0 {
		out = append(out, st.muted.Render("  no link is slower than its two players explain"))
	}
	return p.bullets(out, lev, w)
}

// bullets adds items to out as a bulleted list, each wrapped under its
// own text.
func (p *diagnosisPane) bullets(out, items []string, w int) []string {
	st := &p.st
	for _, e := range items {
		for j, l := range wrap(e, w-6) {
			lead := "  • "
			if j > 0 {
				lead = "    "
			}
			out = append(out, st.muted.Render(lead)+st.text.Render(l))
		}
	}
	return out
}

// playerEvidence says in words what in the numbers made the diagnosis
// name cause c for pd.
func playerEvidence(d *diagnosis.Diagnosis, pd *diagnosis.PlayerDiagnosis, c vocab.Cause) string {
	switch c {
	case diagnosis.CauseLatency:
		return "adds " + fmtMsNaN(pd.AccessRTTMs) + " ms to every round trip it is on; the others' median share is " +
			fmtMsNaN(othersMedian(d, pd.Player, func(q *diagnosis.PlayerDiagnosis) float64 { return q.AccessRTTMs })) + " ms"
	case diagnosis.CauseJitter:
		return "its round trips vary by " + fmtMsNaN(pd.JitterMs) + " ms; the others' median is " +
			fmtMsNaN(othersMedian(d, pd.Player, func(q *diagnosis.PlayerDiagnosis) float64 { return q.JitterMs })) + " ms"
	case diagnosis.CauseLoss:
		return "loses " + fmtPctNaN(pd.AccessLoss) + " of the packets on its side, out and in together"
	case diagnosis.CauseProcessing:
		s := "its machine needs " + fmtMsNaN(pd.ProcessMs) + " ms per frame"
		if pd.FPSWithout > 0 {
			s += "; without it the game could run at " + strconv.Itoa(pd.FPSWithout) + " fps"
		}
		return s
	case diagnosis.CauseUnmeasured:
		return "not measured with enough players to split its round trips"
	case diagnosis.CauseStale:
		return "it resends far more than it loses: its round-trip estimate has fallen behind"
	case diagnosis.CauseBad:
		return "a connection of it has gone bad (nothing heard for too long)"
	case diagnosis.CauseBufferbloat:
		return bufferbloatEvidence(pd)
	}
	return string(c)
}

// bufferbloatEvidence says what the player's latest load test found: how
// much a busy line adds, each way that was measured.
func bufferbloatEvidence(pd *diagnosis.PlayerDiagnosis) string {
	b := pd.Bufferbloat
	if b == nil {
		return "a load test found its line's router queue fills under load"
	}
	var ways []string
	if !math.IsNaN(b.UploadMs) {
		ways = append(ways, "its upload adds "+fmtMsNaN(b.UploadMs)+" ms")
	}
	if !math.IsNaN(b.DownloadMs) {
		ways = append(ways, "its download adds "+fmtMsNaN(b.DownloadMs)+" ms")
	}
	if len(ways) == 0 {
		return "a load test found its line's router queue fills under load"
	}
	return "when its line is busy, " + strings.Join(ways, " and ") + " to the round trip (its latest load test)"
}

// linkEvidence says what made the diagnosis name cause c for link l.
func linkEvidence(l *diagnosis.LinkDiagnosis, c vocab.Cause) string {
	switch c {
	case diagnosis.CauseLatency:
		return "measured " + fmtMsNaN(l.RTTMs) + " ms where its two players' shares add up to " + fmtMsNaN(l.ExpectedRTTMs) +
			" ms: the path between them adds " + fmtMsNaN(l.ExcessRTTMs) + " ms"
	case diagnosis.CauseLoss:
		return "loses " + fmtPctNaN(l.Loss) + " of its packets, both ways together, more than its players' sides explain"
	}
	return string(c)
}

// othersMedian is the median of f over the players other than name,
// leaving unknowns out; NaN when none is known.
func othersMedian(d *diagnosis.Diagnosis, name string, f func(*diagnosis.PlayerDiagnosis) float64) float64 {
	var vs []float64
	for i := range d.Players {
		if d.Players[i].Player != name {
			if v := f(&d.Players[i]); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// excessShown is the least excess that lists a link the diagnosis named
// no cause for: a few milliseconds are measurement noise.
const excessShown = 10.0

// fmtWaitNaN writes a wait given in milliseconds, NaN as unknown.
func fmtWaitNaN(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return unknown
	}
	return fmtWait(units.FromMillis(v))
}

// fmtMsNaN writes milliseconds, NaN as unknown.
func fmtMsNaN(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return unknown
	}
	return fmtMsVal(v)
}

// fmtPctNaN writes a 0–1 share as a percentage, NaN as unknown.
func fmtPctNaN(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return unknown
	}
	return fmtShare(share{v: v, ok: true})
}
