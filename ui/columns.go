package ui

import (
	"strings"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// column is one link-table column: its heading in the wide and narrow
// forms, its widths, how it sorts and how it draws a link's cell. The
// heading, the rows, the sort keys and the mouse's heading spans all come
// from tableCols, so a new column is one entry there (and a name for its
// sort key).
type column struct {
	key         sortKey
	head, short string
	w, nw       int  // widths: wide, narrow
	right       bool // a number, aligned on the right
	// ascending: the first sort on the column goes up (names read A to
	// Z); a number sorts the largest first.
	ascending bool
	// value is a row's sort value, ok false for unknown (which always
	// sorts last); nil sorts by the peer's name.
	value func(h *linkHist) (v float64, ok bool)
	// cell writes the link's cell, w cells wide and the space after it.
	cell func(r *rowWriter, h *linkHist, w int)
}

// Headings are words a player reads; the short forms (each in the `?`
// glossary) are used only where the width forces them. Every width leaves
// room for the sort arrow after the heading, so the arrow never hides a
// unit.
var tableCols = []column{
	{sortPeer, "PLAYER", "PLAYER", 10, 8, false, true, nil, peerCell},
	{sortState, "STATE", "STATE", 11, 6, false, false, stateValue, stateCell},
	{sortSRTT, "RTT ms", "RTT", 7, 5, true, false, srttValue, srttCell},
	{sortRTTVAR, "JITTER", "JIT", 7, 5, true, false, rttvarValue, rttvarCell},
	{sortRTO, "RETRY ms", "RETRY", 9, 6, true, false, rtoValue, rtoCell},
	{sortConn, "TIMEOUT", "T/O", 8, 5, true, false, connValue, connCell},
	{sortResend, "RESENT", "RSND", 7, 5, true, false, resendValue, resendCell},
	{sortIn, "LOST IN", "IN", 8, 5, true, false, inValue, inCell},
	{sortOut, "LOST OUT", "OUT", 9, 5, true, false, outValue, outCell},
	{sortWait, "WAITED", "WAIT", 7, 6, true, false, waitValue, waitCell},
}

// needs is the timing a round trip alone needs by the master's rule: the
// round trip with its headroom (S9), at the frame rate (S3) — what
// `lagscope rung --rtt` prints as "with headroom". Every tier and rung the
// views give a round trip is this one, so a link's tier agrees with the
// rung the header shows once that link is the worst.
func needs(rtt time.Duration, fps int) rungs.Timing { return rungs.Need(rungs.WithHeadroom(rtt), fps) }

// columnOf is the column sorted by k; nil for the house order.
func columnOf(k sortKey) *column {
	for i := range tableCols {
		if tableCols[i].key == k {
			return &tableCols[i]
		}
	}
	return nil
}

// nextSort is the order after k when `s` cycles: the house order, then
// each column from left to right.
func nextSort(k sortKey) sortKey {
	for i := range tableCols {
		if tableCols[i].key == k {
			if i+1 < len(tableCols) {
				return tableCols[i+1].key
			}
			return sortHouse
		}
	}
	return tableCols[0].key
}

// firstDesc reports whether a new sort on k starts in descending order.
func firstDesc(k sortKey) bool {
	c := columnOf(k)
	return c != nil && !c.ascending
}

// rowWriter builds one link row in one buffer, its numbers formatted into
// a scratch buffer, so that a new picture costs a few allocations per row
// rather than dozens. The table keeps one between rows.
type rowWriter struct {
	b        strings.Builder
	st       *styles
	nb       []byte // scratch for a row's numbers
	sh       shares // the row's resend and loss shares
	fps      int
	wide     bool
	selected bool // drawn plain: the whole row is reversed afterwards
	worst    bool
}

// cell writes text fitted to w cells in style (plain when the row is
// selected), padded on the left for a number, and the space after it.
func (r *rowWriter) cell(w int, text string, style paint, right bool) {
	b := &r.b
	if right && text == unknown {
		style = r.st.muted
	}
	n := width(text)
	switch {
	case r.selected && (!right || n >= w):
		writeFit(b, text, w)
	case r.selected:
		writeSpaces(b, w-n)
		b.WriteString(text)
	case !right && n < w && style.plainRun() && style.ok(text):
		b.WriteString(style.pre)
		b.WriteString(text)
		writeSpaces(b, w-n)
		b.WriteString(style.suf)
	case !right || n >= w:
		style.put(b, fit(text, w))
	case style.plainRun():
		b.WriteString(style.pre)
		writeSpaces(b, w-n)
		b.WriteString(text)
		b.WriteString(style.suf)
	default:
		style.put(b, padLeft(text, w))
	}
	b.WriteByte(' ')
}

// num writes r.nb, a formatted number (ASCII), as a cell of w.
func (r *rowWriter) num(w int, style paint) {
	b, txt := &r.b, r.nb
	if len(txt) < w && style.plainRun() {
		if !r.selected {
			b.WriteString(style.pre)
		}
		writeSpaces(b, w-len(txt))
		b.Write(txt)
		if !r.selected {
			b.WriteString(style.suf)
		}
		b.WriteByte(' ')
		return
	}
	r.cell(w, string(txt), style, true)
}

// share writes a resend or loss share, or unknown.
func (r *rowWriter) share(w int, s share, style paint) {
	if !s.ok {
		r.cell(w, unknown, style, true)
		return
	}
	r.nb = appendShare(r.nb[:0], s)
	r.num(w, style)
}

var stateRank = [...]int{feed.LinkMeasured: 0, feed.LinkProvisional: 1, feed.LinkUnmeasured: 2, feed.LinkBad: 3}

var shortState = map[feed.LinkState]string{feed.LinkMeasured: "meas", feed.LinkProvisional: "prov", feed.LinkUnmeasured: "unmeas", feed.LinkBad: "BAD"}

func peerCell(r *rowWriter, h *linkHist, w int) {
	peer := h.peer
	if h.last.Observer || h.last.Relayed {
		peer = peerLabel(h, w)
	}
	style := r.st.text
	if r.worst {
		style = r.st.worst
	}
	r.cell(w, fitName(peer, w), style, false)
}

func stateValue(h *linkHist) (float64, bool) {
	if int(h.last.State) >= len(stateRank) {
		return 0, false
	}
	return float64(stateRank[h.last.State]), true
}

func stateCell(r *rowWriter, h *linkHist, w int) {
	st, lv := r.st, &h.last
	state := lv.State.String()
	if !r.wide {
		if s, ok := shortState[lv.State]; ok {
			state = s
		}
	}
	if state == "" {
		state = unknown
	}
	style := st.muted
	switch lv.State {
	case feed.LinkMeasured:
		style = st.good
	case feed.LinkProvisional:
		style = st.warn
	case feed.LinkBad:
		style = st.err
	}
	r.cell(w, state, style, false)
}

func srttValue(h *linkHist) (float64, bool) { return msOf(h.last.SRTT, h.last.RTTKnown) }

// srttCell is the round trip in the ink of the tier it needs by the
// master's rule (needs).
func srttCell(r *rowWriter, h *linkHist, w int) {
	lv := &h.last
	style := r.st.text
	if lv.RTTKnown && r.fps > 0 {
		style = r.st.tierStyle(needs(lv.SRTT, r.fps).Tier())
	}
	if !lv.RTTKnown {
		r.cell(w, unknown, style, true)
		return
	}
	r.nb = appendMs(r.nb[:0], lv.SRTT)
	r.num(w, style)
}

func rttvarValue(h *linkHist) (float64, bool) { return msOf(h.last.RTTVAR, h.last.RTTKnown) }

func rttvarCell(r *rowWriter, h *linkHist, w int) {
	if !h.last.RTTKnown {
		r.cell(w, unknown, r.st.text, true)
		return
	}
	r.nb = appendMs(r.nb[:0], h.last.RTTVAR)
	r.num(w, r.st.text)
}

func rtoValue(h *linkHist) (float64, bool) { return units.Millis(h.last.RTO), true }

func rtoCell(r *rowWriter, h *linkHist, w int) {
	r.nb = appendMs(r.nb[:0], h.last.RTO)
	r.num(w, r.st.text)
}

func connValue(h *linkHist) (float64, bool) { return units.Millis(h.last.ConnTimeout), true }

func connCell(r *rowWriter, h *linkHist, w int) {
	r.nb = appendSec(r.nb[:0], h.last.ConnTimeout)
	r.num(w, r.st.text)
}

func resendValue(h *linkHist) (float64, bool) {
	s := h.windowShares().resend
	return s.v, s.ok
}

func resendCell(r *rowWriter, h *linkHist, w int) { r.share(w, r.sh.resend, r.st.resend) }

func inValue(h *linkHist) (float64, bool) {
	s := h.windowShares().in
	return s.v, s.ok
}

func inCell(r *rowWriter, h *linkHist, w int) { r.share(w, r.sh.in, r.st.in) }

func outValue(h *linkHist) (float64, bool) {
	s := h.windowShares().out
	return s.v, s.ok
}

func outCell(r *rowWriter, h *linkHist, w int) { r.share(w, r.sh.out, r.st.out) }

func waitValue(h *linkHist) (float64, bool) { return float64(h.last.Caused), true }

func waitCell(r *rowWriter, h *linkHist, w int) {
	r.nb = appendWait(r.nb[:0], h.last.Caused)
	r.num(w, r.st.text)
}
