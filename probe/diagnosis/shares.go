package diagnosis

import (
	"math"

	"github.com/lagscope/lagscope/units"
)

// The fit step of a diagnosis: each player's share of the round trips, jitter
// and loss of every measured pair (fit.go solves the least-squares fits).

// shares is what the fit step found, per player in house order, NaN where
// unknown. The slices are the Diagnoser's scratch, valid until its next
// evaluation.
type shares struct {
	measured    int       // players in the fit
	known       bool      // measured ≥ MinMeasured: the shares were fitted
	excessKnown bool      // measured ≥ minForLinks: a path's excess means something
	use         []bool    // the player took part in the fit
	rtt, jit    []float64 // share of the round trip and of its variation, ms
	lossExp     []float64 // share of the round-trip loss exponent
	// lossExpPair is each pair's round-trip loss exponent, NaN when not
	// judged; set only when known.
	lossExpPair    []float64
	medRTT, medJit float64 // medians of rtt and jit, for "stands out"
	// path3 is, with exactly three players, the pair whose round trip
	// exceeds the other two together beyond noise (path3OK): no
	// non-negative shares fit, and only that path being slow explains the
	// three round trips. path3Excess is the least excess that does (ms).
	path3       [2]int
	path3Excess float64
	path3OK     bool
}

// fitShares splits every round trip, its variation and its loss among the
// players in use (see fitter), when there are enough of them for a split;
// otherwise every share is NaN.
func (g *Diagnoser) fitShares(pairs []Pair, use []bool, measured int) shares {
	n := len(use)
	sh := shares{measured: measured, known: measured >= MinMeasured, excessKnown: measured >= minForLinks, use: use}
	g.rtt, g.jit, g.lossExp = nans(grow(g.rtt, n)), nans(grow(g.jit, n)), nans(grow(g.lossExp, n))
	if sh.known {
		fitRTTShares(&g.f, pairs, use, g.rtt)
		if measured == MinMeasured {
			sh.path3, sh.path3Excess, sh.path3OK = triangle(pairs, use, g.rtt)
		}
		fitJitterShares(&g.f, pairs, use, g.jit)
		g.lossUse, g.degree = growBool(g.lossUse, n), growInt(g.degree, n)
		g.lossExpPair = grow(g.lossExpPair, len(pairs))
		fitLossShares(&g.f, pairs, use, g.lossUse, g.degree, g.lossExpPair, g.lossExp)
		sh.lossExpPair = g.lossExpPair
	}
	sh.rtt, sh.jit, sh.lossExp = g.rtt, g.jit, g.lossExp
	sh.medRTT, sh.medJit = g.median(g.rtt), g.median(g.jit)
	return sh
}

// fitRTTShares writes into s each player's share of the round trips (ms)
// between players in use.
func fitRTTShares(f *fitter, pairs []Pair, use []bool, s []float64) {
	f.reset(len(use))
	for _, p := range pairs {
		if p.RTT > 0 && use[p.A] && use[p.B] {
			f.set(p.A, p.B, units.Millis(p.RTT))
		}
	}
	f.fit(use, s, fitFloorMs)
}

// triangle looks at three players' round trips, r_uv between each two:
// their exact split is s_v = (r_uv + r_vw − r_uw)/2. When one round trip
// exceeds the other two together by slowPathMs and by slowPathShare of
// them, the player between (v) would need a share below zero: no three
// shares fit, and the path u–w is slow. Its least excess is
// r_uw − r_uv − r_vw, with v's share 0 and u's and w's the round trips
// they have with v; triangle writes those shares into s. Otherwise the
// three round trips fit the shares as they are (and one path's excess
// cannot be told from the shares: docs/diagnosis.md, "What it cannot
// tell").
func triangle(pairs []Pair, use []bool, s []float64) (path [2]int, excess float64, ok bool) {
	var who [3]int
	k := 0
	for i, u := range use {
		if u && k < 3 {
			who[k] = i
			k++
		}
	}
	if k != 3 {
		return path, 0, false
	}
	rtt := func(a, b int) float64 {
		for _, p := range pairs {
			if (p.A == a && p.B == b) || (p.A == b && p.B == a) {
				if p.RTT > 0 {
					return units.Millis(p.RTT)
				}
			}
		}
		return math.NaN()
	}
	for v := range 3 {
		u, w := who[(v+1)%3], who[(v+2)%3]
		uw, uv, vw := rtt(u, w), rtt(u, who[v]), rtt(who[v], w)
		e := uw - uv - vw
		if math.IsNaN(e) || !slowPath(e, uv+vw) || (ok && e <= excess) {
			continue
		}
		path, excess, ok = [2]int{min(u, w), max(u, w)}, e, true
		s[who[v]], s[u], s[w] = 0, uv, vw
	}
	return path, excess, ok
}

// fitJitterShares writes into s each player's share of the round-trip
// variation (ms). Independent parts add in variance, so it fits RTTVAR²
// and takes the root.
func fitJitterShares(f *fitter, pairs []Pair, use []bool, s []float64) {
	f.reset(len(use))
	for _, p := range pairs {
		if p.RTT > 0 && use[p.A] && use[p.B] {
			v := units.Millis(max(p.RTTVar, 0))
			f.set(p.A, p.B, v*v)
		}
	}
	f.fit(use, s, fitFloorJitter)
	for i := range s {
		if !math.IsNaN(s[i]) {
			s[i] = math.Sqrt(math.Max(s[i], 0))
		}
	}
}

// fitLossShares writes into s each player's share of the round-trip loss
// exponent, and into pairExp each pair's exponent (NaN when not judged).
// Survival multiplies, so −log(1−loss) adds; out and in of a pair together
// is l(a→b) + l(b→a) = (up_a+down_a) + (up_b+down_b). Only players in use
// with at least two judged pairs take part (lossUse), and only when they
// are at least MinMeasured; otherwise s stays as it is. degree is scratch.
func fitLossShares(f *fitter, pairs []Pair, use, lossUse []bool, degree []int, pairExp, s []float64) {
	f.reset(len(use))
	for i := range degree {
		degree[i] = 0
	}
	for k, p := range pairs {
		lp, ok := roundTripLossExp(p)
		if !ok {
			lp = math.NaN()
		}
		pairExp[k] = lp
		if ok && use[p.A] && use[p.B] {
			f.set(p.A, p.B, lp)
			degree[p.A]++
			degree[p.B]++
		}
	}
	lossPlayers := 0
	for i := range lossUse {
		lossUse[i] = use[i] && degree[i] >= 2
		if lossUse[i] {
			lossPlayers++
		}
	}
	if lossPlayers >= MinMeasured {
		f.fit(lossUse, s, fitFloorLoss)
	}
}

// roundTripLossExp is −log(1−p) summed over both directions of a pair, when
// both were judged often enough to count.
func roundTripLossExp(p Pair) (float64, bool) {
	if p.ExpectedAB < minExpected || p.ExpectedBA < minExpected {
		return 0, false
	}
	return survivalExp(p.MissingAB, p.ExpectedAB) + survivalExp(p.MissingBA, p.ExpectedBA), true
}

func survivalExp(missing, expected uint64) float64 {
	q := float64(min(missing, expected)) / float64(expected)
	// A direction that lost everything would be infinite; hold it at 99.9 %.
	return -math.Log1p(-math.Min(q, 0.999))
}

// pooledLoss is the pair's `loss`: missing over expected, both directions
// together; NaN when neither was judged.
func pooledLoss(p Pair) float64 {
	exp := float64(p.ExpectedAB) + float64(p.ExpectedBA)
	if exp == 0 {
		return math.NaN()
	}
	miss := float64(min(p.MissingAB, p.ExpectedAB)) + float64(min(p.MissingBA, p.ExpectedBA))
	return miss / exp
}
