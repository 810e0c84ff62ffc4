package trace

import "math"

// The tests behind the trace's judgements (docs/path.md, "The rules").
// Each is one-sided at the 95 % level: a judgement says something only
// when chance alone would say it at most one time in twenty.

// significance is the largest p-value a judgement accepts.
const significance = 0.05

// limitSignificance is the largest p-value that marks a hop rate-limited.
// That judgement is asked again every second over a window of minutes,
// and it takes the hop out of where loss starts: at 95 %, a router past a
// lossy link that lost a few more than the hops after it by chance is
// marked now and then within a run, and the start moves a hop on. One
// time in a thousand keeps that rare; a router that limits its answers
// loses far more than chance explains, and is marked all the same.
const limitSignificance = 0.001

// limitRatio is how many times the share the hops after it lose, pooled,
// a rate-limited hop loses at least. A router that limits its answers
// loses far more than the path after it does (a third to a half of the
// probes, where a lossy link past it costs them some per cent); a router
// past a lossy link that lost a few more by chance does not come near it,
// however many seconds the judgement is asked.
const limitRatio = 2.5

// prevSignificance is the largest p-value at which the hops from a loss's
// start on lose more than the hop just before it, while the start has
// fewer than prevStrictUntil probes; from then on, significance. It
// guards against a start a hop late — the hop before it losing as much,
// by chance a little less so far — and the trace asks it every second,
// most riskily on its first few dozen probes: at 95 % throughout, a start
// a hop late came up in 10 of 150 simulated traces of a 10 % lossy path,
// with 99 % below a hundred probes in 3 (TestLossStartOverRepeatedLooks).
// A weak loss past a clean hop is placed at a hundred probes at the
// latest, as it is at 95 % throughout.
const prevSignificance = 0.01

// lchoose is log C(n, k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// binomTail is P(X ≥ k) for X ~ Binomial(n, p): the chance of k or more
// successes in n tries of chance p each.
func binomTail(k, n int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n || p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	s := 0.0
	for i := k; i <= n; i++ {
		s += math.Exp(lchoose(n, i) + float64(i)*lp + float64(n-i)*lq)
	}
	return min(s, 1)
}

// moreLoss is the one-sided p-value of Fisher's exact test that the loss
// share k1/n1 is above k2/n2: the chance, were both the same, that of the
// k1+k2 losses k1 or more fall among the first n1 outcomes.
func moreLoss(k1, n1, k2, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 || k1 <= 0 {
		return 1
	}
	n, k := n1+n2, k1+k2
	base := lchoose(n, n1)
	s := 0.0
	for x := k1; x <= min(k, n1); x++ {
		if n1-x > n-k {
			continue
		}
		s += math.Exp(lchoose(k, x) + lchoose(n-k, n1-x) - base)
	}
	return min(s, 1)
}

// wilson is the 95 % Wilson score interval of a share of k in n.
func wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return max(0, c-h), min(1, c+h)
}

// prevStrictUntil is the probes at the start from which the test against
// the hop before it is at significance.
const prevStrictUntil = 100

// prevLevel is the level of the test against the hop before a start that
// has n probes.
func prevLevel(n int) float64 {
	if n < prevStrictUntil {
		return prevSignificance
	}
	return significance
}
