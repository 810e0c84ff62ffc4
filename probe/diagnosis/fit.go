package diagnosis

import (
	"math"
	"sort"
)

// The pair model: a value measured on the pair i–j (a round trip, a
// round-trip variance, a round-trip loss exponent) is close to
// share[i] + share[j], plus whatever is special to that path. fitShares
// finds the shares by least absolute deviations, so that one or two paths
// with a large excess pull the shares of their players hardly at all (a
// least-squares fit would spread every excess over everybody on the path).
//
// The estimator is iteratively reweighted least squares (asymmetric, see
// belowWeight): each round solves a
// weighted least-squares problem with weights 1/max(|residual|, floor), which
// is the LAD problem's fixed point. Each weighted problem is solved by
// Gauss–Seidel sweeps, warm-started from the last round: its matrix is the
// weighted signless Laplacian of the pair graph, positive definite as soon
// as the graph has an odd cycle (three players who all measured each other),
// so the sweeps converge; a few per round suffice because the shares move
// little between rounds. Cost: one sweep touches every measured pair twice,
// so a round at 64 players is about 8000 multiply-adds.

const (
	// fitRounds bounds the reweighting rounds; fitTolerance ends them
	// earlier once no share moves by more than that fraction of floor.
	fitRounds    = 60
	fitSweeps    = 3
	fitTolerance = 0.01
	// belowWeight makes a pair that measures less than its two shares cost
	// twice as much as one that measures more. A path's excess is ≥ 0 in
	// practice (a path can add delay, not take away the players' own), and
	// without this preference four players are ambiguous: a slow a–b path
	// fits exactly as well as slow a and b with a "fast" c–d path, because
	// only a–b and c–d contain both a+b and c+d. The price is a small upward
	// bias under noise: the fit sits where a third of the pairs measure less.
	belowWeight = 2.0
	// pullWeight is a faint pull of every share toward the median share, a
	// quarter of one pair's weight (least absolute deviations too). Where
	// the pairs decide the shares it moves nothing: a share sits in at
	// least two pairs, and leaving them costs at least twice as much. Where
	// they do not — four players with one slow path, whose excess fits a+b
	// as well as c+d along a whole line of solutions — it picks the most
	// ordinary shares, which puts the excess on the one path.
	pullWeight = 0.25
)

// fitter holds the scratch of one fit: n×n matrices, row-major, NaN where a
// pair is not measured. It is reused across the three fits of an evaluation.
type fitter struct {
	n int
	y []float64 // measured value of pair i–j (symmetric)
	w []float64 // weight of pair i–j in the current round (symmetric)

	reg []float64 // weight of each share's pull toward the median share
	tmp []float64 // scratch for medians
}

// medianOf sorts v in place and returns its median, NaN when empty.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	k := len(v)
	if k%2 == 1 {
		return v[k/2]
	}
	return (v[k/2-1] + v[k/2]) / 2
}

func (f *fitter) reset(n int) {
	f.n = n
	f.y = grow(f.y, n*n)
	f.w = grow(f.w, n*n)
	for i := range f.y {
		f.y[i] = math.NaN()
	}
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func (f *fitter) set(i, j int, v float64) {
	f.y[i*f.n+j] = v
	f.y[j*f.n+i] = v
}

// fit writes the shares of the players marked in use into s (others are
// NaN). floor is the residual below which a pair counts as fitting exactly,
// in the value's unit; it keeps the weights finite and sets the precision.
func (f *fitter) fit(use []bool, s []float64, floor float64) {
	n := f.n
	// Start from a robust guess: a player's median pair value less half the
	// median of all pairs (y_ij = s_i + s_j, so med_j y_ij ≈ s_i + med s).
	f.tmp = f.tmp[:0]
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if v := f.y[i*n+j]; use[i] && use[j] && !math.IsNaN(v) {
				f.tmp = append(f.tmp, v)
			}
		}
	}
	all := medianOf(f.tmp)
	for i := 0; i < n; i++ {
		s[i] = math.NaN()
		if !use[i] {
			continue
		}
		f.tmp = f.tmp[:0]
		for j := 0; j < n; j++ {
			if v := f.y[i*n+j]; j != i && use[j] && !math.IsNaN(v) {
				f.tmp = append(f.tmp, v)
			}
		}
		if len(f.tmp) > 0 {
			s[i] = medianOf(f.tmp) - all/2
		}
	}
	f.reg = grow(f.reg, n)
	for round := 0; round < fitRounds; round++ {
		f.tmp = f.tmp[:0]
		for i := 0; i < n; i++ {
			if use[i] && !math.IsNaN(s[i]) {
				f.tmp = append(f.tmp, s[i])
			}
		}
		center := medianOf(f.tmp)
		for i := 0; i < n; i++ {
			if !use[i] || math.IsNaN(s[i]) {
				continue
			}
			f.reg[i] = pullWeight / math.Max(math.Abs(s[i]-center), floor)
			row := i * n
			for j := i + 1; j < n; j++ {
				v := f.y[row+j]
				if !use[j] || math.IsNaN(v) || math.IsNaN(s[j]) {
					continue
				}
				r := v - s[i] - s[j]
				w := 1 / math.Max(math.Abs(r), floor)
				if r < 0 {
					w *= belowWeight
				}
				f.w[row+j], f.w[j*n+i] = w, w
			}
		}
		moved := 0.0
		for sweep := 0; sweep < fitSweeps; sweep++ {
			moved = 0
			for i := 0; i < n; i++ {
				if !use[i] || math.IsNaN(s[i]) {
					continue
				}
				num, den := 0.0, 0.0
				row := i * n
				for j := 0; j < n; j++ {
					v := f.y[row+j]
					if j == i || !use[j] || math.IsNaN(v) || math.IsNaN(s[j]) {
						continue
					}
					w := f.w[row+j]
					num += w * (v - s[j])
					den += w
				}
				num += f.reg[i] * center
				den += f.reg[i]
				if den > 0 {
					next := num / den
					moved = math.Max(moved, math.Abs(next-s[i]))
					s[i] = next
				}
			}
		}
		if round > 0 && moved < fitTolerance*floor {
			break
		}
	}
}
