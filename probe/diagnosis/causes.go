package diagnosis

import (
	"github.com/lagscope/lagscope/vocab"
	"math"

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// The causes step of a diagnosis: what each link and each player is
// found to suffer from, and the one path that dominates, if any.

// diagnoseLinks writes each pair's line: its round trip, what its two
// players' shares explain, the excess, and the path's own causes (latency
// when it is slow beyond its players, loss when it loses beyond their
// sides). It also returns the worst measured round trip (ms, 0 = none),
// which tells the verdict whether anything is measured at all.
func diagnoseLinks(pairs []Pair, players []Player, sh *shares) ([]LinkDiagnosis, float64) {
	links := make([]LinkDiagnosis, 0, len(pairs))
	worstAll := 0.0
	for k, p := range pairs {
		l := LinkDiagnosis{
			Between:       [2]string{players[p.A].Name, players[p.B].Name},
			RTTMs:         math.NaN(),
			ExpectedRTTMs: math.NaN(),
			ExcessRTTMs:   math.NaN(),
			Loss:          pooledLoss(p),
			Causes:        []vocab.Cause{},
		}
		if p.RTT > 0 {
			l.RTTMs = units.Millis(p.RTT)
			worstAll = math.Max(worstAll, l.RTTMs)
		}
		if sh.known && sh.use[p.A] && sh.use[p.B] {
			l.ExpectedRTTMs = math.Max(sh.rtt[p.A], 0) + math.Max(sh.rtt[p.B], 0)
			if (sh.excessKnown || sh.path3OK) && !math.IsNaN(l.RTTMs) {
				// With three players the excess is known only when the
				// three round trips leave one path no other explanation.
				l.ExcessRTTMs = l.RTTMs - l.ExpectedRTTMs
				if slowPath(l.ExcessRTTMs, l.ExpectedRTTMs) {
					l.Causes = append(l.Causes, CauseLatency)
				}
			}
			if sh.excessKnown && lossyLink(sh.lossExpPair[k], sh.lossExp[p.A], sh.lossExp[p.B]) {
				l.Causes = append(l.Causes, CauseLoss)
			}
		}
		links = append(links, l)
	}
	return links, worstAll
}

// lossyLink reports whether a path's round-trip loss exponent exceeds what
// its two players' sides explain by lossyPath; unknown is not lossy.
func lossyLink(pair, a, b float64) bool {
	if math.IsNaN(pair) || math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	return pair-math.Max(a, 0)-math.Max(b, 0) >= lossyPath
}

// culpritLink returns the index of the one slow path (cause latency) whose
// excess is at least linkDominance times every other slow path's, -1 when
// none is: two comparable slow paths name neither.
func culpritLink(links []LinkDiagnosis) int {
	best, second := -1, math.Inf(-1)
	for i, l := range links {
		if !has(l.Causes, CauseLatency) {
			continue
		}
		if best < 0 || l.ExcessRTTMs > links[best].ExcessRTTMs {
			if best >= 0 {
				second = math.Max(second, links[best].ExcessRTTMs)
			}
			best = i
		} else {
			second = math.Max(second, l.ExcessRTTMs)
		}
	}
	if best >= 0 && (math.IsInf(second, -1) || links[best].ExcessRTTMs >= linkDominance*second) {
		return best
	}
	return -1
}

// diagnosePlayers writes each player's line except what its absence would
// gain (playerCosts fills that in): its shares, processing time, waits
// caused, what its latest load test found and causes.
func diagnosePlayers(players []Player, sh *shares, loads []Load, speed int) []PlayerDiagnosis {
	out := make([]PlayerDiagnosis, len(players))
	for i, pl := range players {
		pd := &out[i]
		pd.Player = pl.Name
		pd.AccessRTTMs, pd.AccessLoss, pd.JitterMs = math.NaN(), math.NaN(), math.NaN()
		inFit := sh.known && sh.use[i]
		if inFit {
			pd.AccessRTTMs = math.Max(sh.rtt[i], 0)
			pd.JitterMs = sh.jit[i]
			if !math.IsNaN(sh.lossExp[i]) {
				pd.AccessLoss = 1 - math.Exp(-math.Max(sh.lossExp[i], 0))
			}
		}
		pd.ProcessMs = units.Millis(max(pl.Process, 0))
		pd.CausedWaitMs = units.Millis(max(pl.CausedWait, 0))
		pd.Bufferbloat = bufferbloatOf(pl.Name, loads)
		pd.Causes = playerCauses(pl, pd, sh.known, inFit, sh.medRTT, sh.medJit, speed)
	}
	return out
}

// playerCauses lists what is wrong with one player, in the order of the
// contract: unmeasured (no report, or left out of a fit that ran), then,
// for a player in the fit, a round-trip or variation share that stands out
// from the median and a loss share of at least lossShare, then a line a
// load test found bloated (measured or not: the test needs no fit), a
// machine too slow for the game speed (S15), a stale link (L8) and a bad
// one.
func playerCauses(pl Player, pd *PlayerDiagnosis, fitted, inFit bool, medRTT, medJit float64, speed int) []vocab.Cause {
	causes := []vocab.Cause{}
	if !pl.Measured || (fitted && !inFit) {
		causes = append(causes, CauseUnmeasured)
	}
	if inFit {
		if standsOut(pd.AccessRTTMs, medRTT, latencyMs, latencyFactor) {
			causes = append(causes, CauseLatency)
		}
		if standsOut(pd.JitterMs, medJit, jitterMs, jitterFactor) {
			causes = append(causes, CauseJitter)
		}
		if pd.AccessLoss >= lossShare {
			causes = append(causes, CauseLoss)
		}
	}
	if bloated(pd.Bufferbloat) {
		causes = append(causes, CauseBufferbloat)
	}
	if pl.Process > 0 && rungs.FrameRate(pl.Process, speed) < speed {
		causes = append(causes, CauseProcessing)
	}
	if pl.Stale {
		causes = append(causes, CauseStale)
	}
	if pl.Bad {
		causes = append(causes, CauseBad)
	}
	return causes
}

func slowPath(excess, expected float64) bool {
	return excess >= slowPathMs && excess >= slowPathShare*expected
}

func standsOut(v, median, abs, factor float64) bool {
	if math.IsNaN(v) || math.IsNaN(median) {
		return false
	}
	return v-median >= abs && v >= factor*median
}
