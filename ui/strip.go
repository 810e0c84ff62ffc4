package ui

import (
	"strings"
	"time"
)

// The Session view's incident strip: one line under the link table, the
// last few minutes from left to right with now at the right end. Each
// incident is its cause's letter where it opened and ━ while it lasted, in
// the cause's ink; the one still open is drawn reversed and ends in ▶ at
// now. After the track, the open incident (or the latest) in words. The
// line is always there once the game runs, incidents or not, so nothing
// under it moves when one opens.

// stripWindow is about how much time the track spans: each cell covers a
// whole number of seconds, as many as it takes for the track to span this.
const stripWindow = 5 * time.Minute

// stripLabel starts the line.
const stripLabel = "  incidents "

// stripPane draws the strip and keeps the last one drawn.
type stripPane struct {
	*ctx
	drawn memo[stripKey, string]
}

// stripKey is what a strip is drawn from: the incidents taken, the cell
// now falls in, the width and the theme.
type stripKey struct {
	s     *session
	n     uint64
	now   int64
	w     int
	theme string
}

// stripTrack is the track's width in cells at w columns: what the label
// and the words (a third of the line, 38 to 60 cells) leave.
func stripTrack(w int) int {
	words := min(max(38, w/3), 60)
	return max(10, w-width(stripLabel)-1-words)
}

// stripStep is how long one cell covers with n cells.
func stripStep(n int) time.Duration {
	n = max(n, 1)
	return max(time.Second, ((stripWindow + time.Duration(n)*time.Second - 1) / time.Duration(n)).Truncate(time.Second))
}

// line is the strip, exactly w cells wide.
func (p *stripPane) line(s *session, w int) string {
	n := stripTrack(w)
	step := stripStep(n)
	now := int64(max(s.view.At, 0) / step)
	return p.drawn.get(stripKey{s, s.incidents.n, now, w, p.st.theme.Name}, func() string {
		return p.draw(s, w, n, step, now)
	})
}

// stripCell is one cell of the track: the incident drawn there (-1: none)
// and whether it is where that incident opened.
type stripCell struct {
	inc   int
	start bool
}

func (p *stripPane) draw(s *session, w, n int, step time.Duration, now int64) string {
	st := &p.st
	rows := s.incidents.rows
	cells := make([]stripCell, n)
	for i := range cells {
		cells[i].inc = -1
	}
	first := now - int64(n) + 1
	cellOf := func(d time.Duration) int64 { return min(int64(d/step), now) }
	// Spans first, then the letters over them: every start stays
	// visible. Later incidents are drawn over earlier ones.
	for pass := 0; pass < 2; pass++ {
		for i := range rows {
			r := &rows[i]
			from, to := cellOf(r.opened()), now
			if cl, ok := r.closed(); ok {
				to = max(from, cellOf(cl))
			}
			if to < first {
				continue
			}
			if pass == 1 {
				if from >= first {
					cells[from-first] = stripCell{inc: i, start: true}
				}
				continue
			}
			for c := max(from, first); c <= to; c++ {
				cells[c-first] = stripCell{inc: i}
			}
		}
	}
	var b strings.Builder
	b.WriteString(st.muted.Render(stripLabel))
	for i := 0; i < n; {
		c := cells[i]
		if c.inc < 0 {
			// A run of empty cells in one piece.
			j := i
			for j < n && cells[j].inc < 0 {
				j++
			}
			b.WriteString(st.muted.Render(strings.Repeat("·", j-i)))
			i = j
			continue
		}
		r := &rows[c.inc]
		ink := st.cause[causeIndex(r.Cause)]
		glyph := "━"
		switch {
		case c.start:
			glyph = causeLetter(r.Cause)
		case r.open() && i == n-1:
			glyph = "▶"
		}
		if r.open() {
			ink = st.openCause[causeIndex(r.Cause)]
		}
		ink.put(&b, glyph)
		i++
	}
	b.WriteString(" ")
	used := width(stripLabel) + n + 1
	b.WriteString(p.words(s, w-used))
	return fit(b.String(), w)
}

// words is the open incident in words (the one that opened first, and
// how many more are open), else the latest one, else that there are none;
// w cells at most, whole parts only.
func (p *stripPane) words(s *session, w int) string {
	st := &p.st
	if w <= 0 {
		return ""
	}
	rows := s.incidents.newestFirst()
	var open []*incidentRow
	for _, r := range rows {
		if r.open() {
			open = append(open, r)
		}
	}
	switch {
	case len(open) > 0:
		r := open[len(open)-1]
		parts := []string{r.who() + ": " + string(r.Cause) + " since " + fmtClock(r.openedShown())}
		if len(open) > 1 {
			parts = append(parts, itoa(len(open))+" open")
		}
		parts = append(parts, "cost "+fmtWait(msDur(r.WaitMs)))
		return st.warn.Render(fitParts(parts, w))
	case len(rows) > 0:
		r := rows[0]
		cl, _ := r.closedShown()
		parts := []string{"last: " + r.who() + ", " + string(r.Cause), fmtClock(r.openedShown()) + " to " + fmtClock(cl), "cost " + fmtWait(msDur(r.WaitMs))}
		return st.muted.Render(fitParts(parts, w))
	}
	return st.muted.Render(fitWords("none so far", w))
}

// fitParts joins parts with ", " as far as they fit in w cells, each
// whole; the first is cut between words when even it does not fit.
func fitParts(parts []string, w int) string {
	out := fitWords(parts[0], w)
	for _, p := range parts[1:] {
		if width(out)+2+width(p) > w {
			break
		}
		out += ", " + p
	}
	return out
}
