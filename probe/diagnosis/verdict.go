package diagnosis

import (
	"math"
	"strconv"
	"strings"

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// verdict writes one or two plain sentences: who or what holds the match
// back and what it would run at without it, or why nobody can be named. No
// abbreviations besides the units ms, % and fps.
func verdict(d *Diagnosis, in Input, rungAll, fpsAll int, worstAll float64) string {
	if worstAll <= 0 {
		return "Nothing is measured yet: no round trip between two players is known."
	}
	if d.Measured < MinMeasured {
		return "Fewer than three players are measured, so a slow round trip cannot be split between the two players on it."
	}
	now := in.Target
	if !now.Valid() && rungAll > 0 {
		now = rungs.RungTiming(rungAll)
	}
	var b strings.Builder
	if d.Culprit != "" {
		var p PlayerDiagnosis
		for _, q := range d.Players {
			if q.Player == d.Culprit {
				p = q
				break
			}
		}
		switch d.Reason {
		case "rung":
			b.WriteString(p.Player + "'s connection adds " + msText(p.AccessRTTMs) + " to every round trip with " + p.Player)
			if has(p.Causes, CauseLoss) {
				b.WriteString(" and loses " + pctText(p.AccessLoss) + " of its datagrams")
			}
			b.WriteString("; it holds the match at " + now.Label() + " — without it: " + rungs.RungTiming(p.RungWithout).Label() + ".")
			if has(p.Causes, CauseProcessing) && p.FPSWithout > fpsAll {
				// A slow machine answers late too, so its round trips grow
				// with its frame time: say both, the rung and the rate.
				b.WriteString(" Its machine also needs " + msText(p.ProcessMs) + " per frame, which holds the game at " +
					strconv.Itoa(fpsAll) + " fps — without it: " + strconv.Itoa(p.FPSWithout) + " fps.")
			}
		case "fps":
			b.WriteString(p.Player + "'s machine needs " + msText(p.ProcessMs) + " per frame; it holds the match at " +
				strconv.Itoa(fpsAll) + " fps — without it: " + strconv.Itoa(p.FPSWithout) + " fps.")
		default:
			b.WriteString("Others waited for " + p.Player + " " + msText(waitOf(in, p.Player)) + " in the last two evaluations.")
		}
	}
	if d.CulpritLink != nil {
		var l LinkDiagnosis
		for _, x := range d.Links {
			if x.Between == *d.CulpritLink {
				l = x
				break
			}
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("The path between " + l.Between[0] + " and " + l.Between[1] + " is slow (" + msText(l.ExcessRTTMs) +
			" more than their connections explain)")
		if d.Culprit == "" {
			b.WriteString("; neither player's own link is at fault.")
		} else {
			b.WriteString(".")
		}
	}
	if b.Len() > 0 {
		if d.Measured == MinMeasured && d.Reason == "rung" {
			b.WriteString(" With three players a slow path cannot be told from two slow players.")
		}
		return b.String()
	}
	if d.Measured == MinMeasured {
		return "No one stands out, but with three players a slow path cannot be told from two slow players."
	}
	if now.Valid() {
		return "No one's connection or machine holds the match back; it runs at " + now.Label() + "."
	}
	return "No one's connection or machine holds the match back."
}

func waitOf(in Input, name string) float64 {
	for _, p := range in.Players {
		if p.Name == name {
			return units.Millis(p.RecentWait)
		}
	}
	return 0
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// msText writes whole milliseconds, e.g. "150 ms".
func msText(v float64) string {
	if !finite(v) {
		return "an unknown number of ms"
	}
	return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " ms"
}

// pctText writes a chance as a percentage with at most one decimal, e.g. "3 %".
func pctText(v float64) string {
	if !finite(v) {
		return "an unknown share"
	}
	return strconv.FormatFloat(math.Round(v*1000)/10, 'f', -1, 64) + " %"
}
