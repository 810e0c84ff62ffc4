package diagnosis

import "math"

// The pair model: a value measured on the pair i–j (a round trip, a
// round-trip variance, a round-trip loss exponent) is close to
// share[i] + share[j], plus whatever is special to that path. fit finds the
// shares by least absolute deviations, so that one or two paths with a large
// excess pull the shares of their players hardly at all (a least-squares fit
// would spread every excess over everybody on the path).
//
// The estimator is iteratively reweighted least squares: each round solves a
// weighted least-squares problem with weights 1/max(|residual|, floor),
// whose fixed point minimises the sum of absolute residuals above the floor
// and of squared ones below it (a Huber-like fit: residuals under the floor
// are noise). Each weighted problem is solved by Gauss–Seidel sweeps
// warm-started from the last round: its matrix is the weighted signless
// Laplacian of the pair graph, positive definite as soon as the graph has an
// odd cycle (three players who all measured each other), so the sweeps
// converge, and a few per round suffice because the shares move little
// between rounds. One sweep touches every measured pair twice: about 8000
// multiply-adds at 64 players. docs/diagnosis.md describes it in words.

const (
	// fitRounds bounds the reweighting rounds; a fit ends earlier once no
	// share moved by more than fitTolerance × floor in a round.
	fitRounds    = 40
	fitSweeps    = 2
	fitTolerance = 0.01
	// pullWeight is a faint pull of every share toward the median share, a
	// fiftieth of one pair's weight (by absolute deviation too). Where the
	// pairs decide the shares it moves them by at most that fraction of the
	// floor: a share sits in at least two pairs, each far heavier. Where they do
	// not — four players with one slow path, whose excess fits a+b as well
	// as c+d along a whole line of equally good solutions — it picks the most
	// ordinary shares, which puts the excess on the one path.
	pullWeight = 0.02
	// initSample bounds the pairs per player the starting guess looks at.
	initSample = 15
)

// fitter holds the scratch of one fit: n×n matrices, row-major. A pair not
// measured (or a player not in use) has weight 0 throughout, so the inner
// loops need no branches. It is reused across the fits of an evaluation.
type fitter struct {
	n    int
	y    []float64 // measured value of pair i–j (symmetric), 0 when not
	have []bool    // pair i–j measured
	w    []float64 // weight of pair i–j in the current round, 0 when not measured

	reg    []float64 // weight of each share's pull toward the median share
	active []bool    // the player has a measured pair in the fit
	tmp    []float64 // scratch for medians
}

func (f *fitter) reset(n int) {
	f.n = n
	f.y = grow(f.y, n*n)
	f.w = grow(f.w, n*n)
	f.reg = grow(f.reg, n)
	if cap(f.have) < n*n {
		f.have = make([]bool, n*n)
	}
	f.have = f.have[:n*n]
	for i := range f.y {
		f.y[i], f.w[i], f.have[i] = 0, 0, false
	}
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// set records pair i–j's value; non-finite values are not measurements.
func (f *fitter) set(i, j int, v float64) {
	if !finite(v) {
		return
	}
	f.y[i*f.n+j], f.y[j*f.n+i] = v, v
	f.have[i*f.n+j], f.have[j*f.n+i] = true, true
}

// medianOf reorders v in place and returns its median, NaN when empty. It
// selects instead of sorting (linear time on average): the fit takes
// medians of every player's pairs each evaluation.
func medianOf(v []float64) float64 {
	k := len(v)
	if k == 0 {
		return math.NaN()
	}
	hi := selectNth(v, k/2)
	if k%2 == 1 {
		return hi
	}
	// The lower middle is the largest of what selectNth left below k/2.
	lo := v[0]
	for _, x := range v[1 : k/2] {
		lo = math.Max(lo, x)
	}
	return (lo + hi) / 2
}

// selectNth reorders v so that v[nth] is the value a sort would put there,
// with nothing larger before it and nothing smaller after it, and returns
// it (Hoare's selection with a median-of-three pivot; bounded by len(v)
// rounds since each one shrinks the range).
func selectNth(v []float64, nth int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case nth <= j:
			hi = j
		case nth >= i:
			lo = i
		default:
			return v[nth]
		}
	}
	return v[nth]
}

// fit writes the shares of the players marked in use into s (others, and
// players with no measured pair among those in use, are NaN). floor is the
// residual below which a pair counts as fitting exactly, in the value's
// unit; it keeps the weights finite and sets the precision.
func (f *fitter) fit(use []bool, s []float64, floor float64) {
	n := f.n
	f.restrict(use)
	if f.start(s) == 0 {
		for i := range s[:n] {
			s[i] = math.NaN()
		}
		return
	}
	for round := 0; round < fitRounds; round++ {
		center := f.reweight(s, floor)
		if f.solve(s, center) < fitTolerance*floor {
			break
		}
	}
	for i := 0; i < n; i++ {
		if !f.active[i] {
			s[i] = math.NaN()
		}
	}
}

// restrict drops the pairs of players not in use: only pairs between
// players in use count.
func (f *fitter) restrict(use []bool) {
	n := f.n
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if !use[i] || !use[j] {
				f.have[i*n+j] = false
			}
		}
	}
}

// start writes a robust first guess into s, marks active the players with
// a measured pair, and returns how many they are. The guess is a player's
// median pair value less half the median of those medians (y_ij = s_i +
// s_j, so med_j y_ij ≈ s_i + med s, and the median of med_i is ≈ 2 med s).
// Up to initSample pairs per player, evenly spaced, are enough for a start
// and keep it cheap. It also clears the pulls toward the median.
func (f *fitter) start(s []float64) int {
	n := f.n
	if cap(f.active) < n {
		f.active = make([]bool, n)
	}
	f.active = f.active[:n]
	stride := max(1, (n-1)/initSample)
	active := 0
	for i := 0; i < n; i++ {
		f.tmp = f.tmp[:0]
		for j := 0; j < n; j++ {
			if f.have[i*n+j] {
				f.tmp = append(f.tmp, f.y[i*n+j])
			}
		}
		s[i], f.reg[i] = 0, 0
		f.active[i] = len(f.tmp) > 0
		if f.active[i] {
			k := 0
			for j := 0; j < len(f.tmp); j += stride {
				f.tmp[k] = f.tmp[j]
				k++
			}
			s[i] = medianOf(f.tmp[:k])
			active++
		}
	}
	all := f.activeMedian(s)
	for i := 0; i < n; i++ {
		if f.active[i] {
			s[i] -= all / 2
		}
	}
	return active
}

// activeMedian is the median of the active players' shares, NaN when none.
func (f *fitter) activeMedian(s []float64) float64 {
	f.tmp = f.tmp[:0]
	for i := 0; i < f.n; i++ {
		if f.active[i] {
			f.tmp = append(f.tmp, s[i])
		}
	}
	return medianOf(f.tmp)
}

// reweight sets the round's weights from the current residuals: each
// measured pair's 1/max(|residual|, floor), and each share's pull toward
// the median share (pullWeight by absolute deviation too). It returns that
// median, the centre the pulls aim at.
func (f *fitter) reweight(s []float64, floor float64) float64 {
	n := f.n
	center := f.activeMedian(s)
	for i := 0; i < n; i++ {
		if !f.active[i] {
			continue
		}
		f.reg[i] = pullWeight / atLeast(math.Abs(s[i]-center), floor)
		row := i * n
		for j := i + 1; j < n; j++ {
			if !f.have[row+j] {
				continue
			}
			w := 1 / atLeast(math.Abs(f.y[row+j]-s[i]-s[j]), floor)
			f.w[row+j], f.w[j*n+i] = w, w
		}
	}
	return center
}

// solve runs fitSweeps Gauss–Seidel sweeps of the round's weighted
// least-squares problem, warm-started from s, and returns the largest
// step any share took: the fit ends once that is below its tolerance.
func (f *fitter) solve(s []float64, center float64) float64 {
	n := f.n
	moved := 0.0
	for sweep := 0; sweep < fitSweeps; sweep++ {
		for i := 0; i < n; i++ {
			row := i * n
			num, den := f.reg[i]*center, f.reg[i]
			wr, yr := f.w[row:row+n], f.y[row:row+n]
			for j, w := range wr {
				num += w * (yr[j] - s[j])
				den += w
			}
			if den > 0 {
				next := num / den
				if d := math.Abs(next - s[i]); d > moved {
					moved = d
				}
				s[i] = next
			}
		}
	}
	return moved
}

// atLeast is max(v, floor) for the hot loops, without math.Max's care for
// NaN and signed zeros (neither occurs here).
func atLeast(v, floor float64) float64 {
	if v < floor {
		return floor
	}
	return v
}
