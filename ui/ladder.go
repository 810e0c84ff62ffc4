package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/rungs"
)

// stagedSteps lists the timings a decrease from inForce to target passes
// through, ending at target (S12). It runs rungs.Schedule itself, so the
// ladder shows the steps the engine takes rather than a second model of
// them. It is empty when nothing is staged.
func stagedSteps(inForce, target rungs.Timing, fps int) []rungs.Timing {
	if inForce == target || !inForce.Valid() || !target.Valid() {
		return nil
	}
	s := rungs.NewSchedule(inForce, fps)
	s.Change(0, target, fps)
	steps := []rungs.Timing{inForce}
	if s.InForce() != inForce {
		steps = append(steps, s.InForce())
	}
	// A decrease takes at most the old look-ahead to activate and one send
	// frame per step after that; the bound only guards against a loop.
	for f := 1; f <= 4*rungs.MaxLookAhead && s.InForce() != target; f++ {
		if s.Advance(f) {
			steps = append(steps, s.InForce())
		}
	}
	return steps
}

// ladderPane is the rung ladder; it keeps only its last drawing.
type ladderPane struct {
	*ctx
	drawn memo[ladderKey, []string]
}

// ladderKey is what the ladder is drawn from: the timings, not the rest
// of the session.
type ladderKey struct {
	inForce, target, need rungs.Timing
	staged                bool
	fps, w, h             int
	theme                 string
}

// cached is the rung ladder: it changes only with the timings.
func (p *ladderPane) cached(s *session, w, h int) []string {
	v := &s.view
	out := p.drawn.get(ladderKey{v.InForce, v.Target, v.Needed, v.Staged, v.FPS, w, h, p.st.theme.Name}, func() []string {
		return p.ladder(s, w, h)
	})
	return out[:len(out):len(out)]
}

// ladder draws rungs 10 down to 1 with their timing, tier and the round
// trip each covers at the frame rate in force (S2, S3, S17); an extended
// look-ahead past rung 10 (S4) gets rows of its own above. ▶ marks the
// timing in force, ◆ the target, ○ the timing needed now as the master
// computes a target: every player's latest report, the worst round trip,
// headroom (S9) — where a descent settles; a staged decrease is listed
// step by step (S12).
func (p *ladderPane) ladder(s *session, w, height int) []string {
	st := &p.st
	v := &s.view
	fps := v.FPS
	title := st.title.Render("Rungs")
	if fps > 0 {
		title += st.muted.Render(" at " + strconv.Itoa(fps) + " fps")
	}
	out := []string{p.rule(title, w)}
	marks := ladderMarks{inForce: v.InForce, target: v.Target, need: v.Needed}
	for _, t := range ladderRows(marks) {
		out = append(out, p.rungLine(t, marks, fps, w))
	}
	if v.Staged {
		steps := stagedSteps(v.InForce, v.Target, max(fps, 1))
		parts := make([]string, len(steps))
		for i, t := range steps {
			parts[i] = st.tierStyle(t.Tier()).Render(t.String())
		}
		out = append(out, fit(st.warn.Render("staged ")+strings.Join(parts, st.muted.Render(" › ")), w))
	}
	legend := st.accent.Render("▶") + st.muted.Render(" in force ") + st.accent.Render("◆") + st.muted.Render(" target ") + st.muted.Render("○ needed now")
	out = append(out, fit(legend, w))
	if len(out) > height {
		// Keep the title, the rows around the marks, the staged line and
		// the legend: drop rows far from in force and target first.
		out = trimLadder(out, height)
	}
	return out
}

// ladderMarks are the timings the ladder marks: in force, the target and
// what the worst link's round trip needs now.
type ladderMarks struct{ inForce, target, need rungs.Timing }

// ladderRows are the ladder's rows, top first: the extended look-aheads
// past rung 10 that a mark is on, widest first, then rungs 10 to 1.
func ladderRows(m ladderMarks) []rungs.Timing {
	rows := []rungs.Timing{}
	var ext []rungs.Timing
	for _, t := range []rungs.Timing{m.inForce, m.target, m.need} {
		if t.Valid() && t.SendPeriod == rungs.Rungs && t.Extended() && !containsTiming(ext, t) {
			ext = append(ext, t)
		}
	}
	for i := range ext {
		for j := i + 1; j < len(ext); j++ {
			if ext[j].LookAhead > ext[i].LookAhead {
				ext[i], ext[j] = ext[j], ext[i]
			}
		}
	}
	rows = append(rows, ext...)
	for n := rungs.Rungs; n >= 1; n-- {
		rows = append(rows, rungs.RungTiming(n))
	}
	return rows
}

// rungLine is the row of timing t: its marks, rung, timing and tier, the
// round trip it covers when the width allows, and notes on in force and
// target.
func (p *ladderPane) rungLine(t rungs.Timing, m ladderMarks, fps, w int) string {
	st := &p.st
	mark := func(c string, on bool) string {
		if on {
			return c
		}
		return " "
	}
	// A staged step between rungs (2/8 on its way to 2/6) sits on its
	// rung's row.
	onRow := func(x rungs.Timing) bool {
		return x.Valid() && (x == t || (!t.Extended() && x.Extended() && x.SendPeriod != rungs.Rungs && x.Rung() == t.Rung()))
	}
	isIn, isTarget, isNeed := onRow(m.inForce), onRow(m.target), onRow(m.need)
	marks := st.accent.Render(mark("▶", isIn)) + st.accent.Render(mark("◆", isTarget)) + st.muted.Render(mark("○", isNeed))
	rung := "   "
	if !t.Extended() {
		rung = fmt.Sprintf("%2d ", t.Rung())
	}
	ts := st.tierStyle(t.Tier())
	line := marks + " " + st.muted.Render(rung) + ts.Render(fit(t.String(), 6)) + " " + ts.Render(fit(t.Tier().String(), 6))
	if showCovers := w >= 34; showCovers && fps > 0 {
		line += st.muted.Render(padLeft("≤"+fmtWait(t.MaxRTT(fps)), 7))
	}
	var notes []string
	if isIn {
		if m.inForce != t {
			notes = append(notes, "in force "+m.inForce.String())
		} else {
			notes = append(notes, "in force")
		}
	}
	if isTarget {
		notes = append(notes, "target")
	}
	if len(notes) > 0 {
		note := strings.Join(notes, ", ")
		if len(notes) > 1 && lipgloss.Width(line)+1+lipgloss.Width(note) > w {
			note = "both" // the ▶◆ marks say which
		}
		line += " " + st.text.Render(note)
	}
	return fit(line, w)
}

func containsTiming(ts []rungs.Timing, t rungs.Timing) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// trimLadder drops unmarked rows (those starting with three spaces of
// marks) from the top until out fits in height lines.
func trimLadder(out []string, height int) []string {
	for len(out) > height {
		dropped := false
		for i := 1; i < len(out)-1; i++ {
			if strings.HasPrefix(stripANSI(out[i]), "   ") {
				out = append(out[:i], out[i+1:]...)
				dropped = true
				break
			}
		}
		if !dropped {
			return out[:height]
		}
	}
	return out
}

// stripANSI removes escape sequences, for tests on drawn text.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i++; i < len(s) && !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')); i++ {
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
