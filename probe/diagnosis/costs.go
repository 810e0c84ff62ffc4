package diagnosis

import (
	"math"
	"time"

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// The costs and culprit steps of a diagnosis: what the match would run at
// without each player, and who, if anyone, holds it back.

// costs is what the session runs at now: the frame rate the slowest
// machine allows (S15) and the rung the worst counted round trip needs with
// headroom (S9) at that frame rate, so that rungs compare.
type costs struct {
	fpsAll, rungAll int
	// counted is each pair's round trip as the costs see it (countedRTT),
	// ms, 0 when unknown; worstIdx is the pair with the largest, -1 = none.
	counted  []float64
	worstIdx int
}

// sessionCosts works out the costs with everybody in, into the scratch
// counted (one per pair). A slow culprit path's excess is the path's, not
// its players': it counts at its expected value (linkIdx, -1 = none).
func sessionCosts(counted []float64, players []Player, pairs []Pair, links []LinkDiagnosis, linkIdx, speed int) costs {
	var maxProc time.Duration
	for _, p := range players {
		maxProc = max(maxProc, p.Process)
	}
	c := costs{fpsAll: rungs.FrameRate(maxProc, speed), counted: counted, worstIdx: -1}
	for i, p := range pairs {
		counted[i] = countedRTT(p, i == linkIdx, links[i])
		if counted[i] > 0 && (c.worstIdx < 0 || counted[i] > counted[c.worstIdx]) {
			c.worstIdx = i
		}
	}
	if c.worstIdx >= 0 && counted[c.worstIdx] > 0 {
		c.rungAll = rungs.Need(rungs.WithHeadroom(dur(counted[c.worstIdx])), c.fpsAll).Rung()
	}
	return c
}

// worstWithout is the worst counted round trip (ms) among the pairs
// without player who, 0 when none. Everybody but the worst pair's two
// players leaves that pair in place, so only those two need a scan.
func (c *costs) worstWithout(pairs []Pair, who int) float64 {
	if c.worstIdx < 0 {
		return 0
	}
	if w := pairs[c.worstIdx]; w.A != who && w.B != who {
		return c.counted[c.worstIdx]
	}
	v := 0.0
	for k, p := range pairs {
		if p.A != who && p.B != who {
			v = math.Max(v, c.counted[k])
		}
	}
	return v
}

// playerCosts fills in each player's fps_without (the frame rate the
// others' machines allow, S15) and rung_without (the rung the others' worst
// round trip needs with headroom at today's frame rate, S9; only when at
// least two others are left), and returns what each absence would gain.
func playerCosts(out []PlayerDiagnosis, players []Player, pairs []Pair, c *costs, speed int) []candidate {
	n := len(players)
	cands := make([]candidate, 0, n)
	for i, pl := range players {
		pd := &out[i]
		var others time.Duration
		for j, q := range players {
			if j != i {
				others = max(others, q.Process)
			}
		}
		pd.FPSWithout = rungs.FrameRate(others, speed)
		worstLeft := c.worstWithout(pairs, i)
		if n-1 >= 2 && worstLeft > 0 {
			pd.RungWithout = rungs.Need(rungs.WithHeadroom(dur(worstLeft)), c.fpsAll).Rung()
		}
		cand := candidate{idx: i, fpsGain: pd.FPSWithout - c.fpsAll, worstLeft: worstLeft, recent: units.Millis(pl.RecentWait)}
		if c.rungAll > 0 && pd.RungWithout > 0 {
			cand.rungGain = c.rungAll - pd.RungWithout
		}
		cands = append(cands, cand)
	}
	return cands
}

// nameCulprit names the player whose absence gains the most (pickCulprit)
// and what made it the one, or nobody when fewer than MinMeasured players
// are measured: then a slow round trip cannot be pinned on either end.
func nameCulprit(cands []candidate, players []Player, measured int, window time.Duration) (string, string) {
	if measured < MinMeasured {
		return "", ""
	}
	return pickCulprit(cands, players, units.Millis(window))
}

// countedRTT is a pair's round trip as the players' costs see it: the slow
// culprit path at what its players explain, unknown as 0.
func countedRTT(p Pair, culpritLink bool, l LinkDiagnosis) float64 {
	if p.RTT <= 0 {
		return 0
	}
	if culpritLink && !math.IsNaN(l.ExpectedRTTMs) {
		return l.ExpectedRTTMs
	}
	return units.Millis(p.RTT)
}

// pickCulprit ranks by rung gain, then frame-rate gain, then recent waits
// (CONTRACTS). A tie at the deciding level names nobody.
func pickCulprit(cands []candidate, players []Player, windowMs float64) (string, string) {
	// Rung: the largest positive gain; a tie there is broken only by a clear
	// difference in the worst round trip left.
	top := 0
	for _, c := range cands {
		top = max(top, c.rungGain)
	}
	if top > 0 {
		lo, loIdx, next := math.Inf(1), -1, math.Inf(1)
		for _, c := range cands {
			if c.rungGain != top {
				continue
			}
			if c.worstLeft < lo {
				next, lo, loIdx = lo, c.worstLeft, c.idx
			} else {
				next = math.Min(next, c.worstLeft)
			}
		}
		if math.IsInf(next, 1) || next-lo >= math.Max(rttTieMs, rttTieShare*next) {
			return players[loIdx].Name, "rung"
		}
		return "", ""
	}
	if name, ok := uniqueMax(cands, players, func(c candidate) float64 { return float64(c.fpsGain) }, 0); ok {
		return name, "fps"
	}
	if windowMs > 0 {
		if name, ok := uniqueMax(cands, players, func(c candidate) float64 { return c.recent }, waitShare*windowMs); ok {
			return name, "waits"
		}
	}
	return "", ""
}

// uniqueMax names the one candidate whose value is largest and above
// threshold (strictly above 0, at least threshold otherwise).
func uniqueMax(cands []candidate, players []Player, val func(candidate) float64, threshold float64) (string, bool) {
	bestIdx, best, ties := -1, 0.0, 0
	for _, c := range cands {
		v := val(c)
		if v <= 0 || v < threshold {
			continue
		}
		switch {
		case bestIdx < 0 || v > best:
			bestIdx, best, ties = c.idx, v, 0
		case v == best:
			ties++
		}
	}
	if bestIdx < 0 || ties > 0 {
		return "", false
	}
	return players[bestIdx].Name, true
}
