// Package diagnosis says who and what causes the lag: from every measured
// pair of players it estimates each player's own share of the round trip,
// of the round-trip variation and of the loss, finds the path that is worse
// than its two players explain, names the causes, and works out what the
// session would run at without each player (S9 rung, S15 frame rate).
//
// It is pure: no I/O, no clock, no goroutines. The caller gathers the
// inputs (from a peer's View and links, or a simulation) and passes them to
// Diagnose, or to a reused Diagnoser to keep the scratch between
// evaluations. docs/diagnosis.md describes the model, its limits and the
// thresholds below.
package diagnosis

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/rungs"
)

// Thresholds. Each says why it has its value; docs/diagnosis.md lists them.
const (
	// MinMeasured is how many measured players the shares need: with two,
	// one round trip cannot be split between its two ends.
	MinMeasured = 3
	// MinForLinks is how many measured players a path's excess needs: with
	// three the shares fit the three pairs exactly, so no pair has any.
	MinForLinks = 4

	// slowPathMs and slowPathShare: a path is slow when its round trip
	// exceeds what its two players' shares explain by at least 30 ms and by
	// at least a quarter of that explanation. 30 ms is one frame each way at
	// 30 fps, below which no rung moves; the quarter keeps ordinary
	// differences between long paths (a few ms of routing) out.
	slowPathMs    = 30.0
	slowPathShare = 0.25
	// linkDominance: when several paths are slow, culprit_link names one
	// only if its excess is at least this many times the next one's.
	linkDominance = 1.5

	// latencyMs, latencyFactor: a player's share stands out when it is at
	// least 25 ms above the median share and at least twice it.
	latencyMs     = 25.0
	latencyFactor = 2.0
	// jitterMs, jitterFactor: the same for the share of the variation; 10 ms
	// of round-trip variation is where the retry timeout starts to grow.
	jitterMs     = 10.0
	jitterFactor = 2.0
	// lossyPath: a path loses on its own when its round-trip loss exponent
	// (both directions) exceeds its players' shares by 0.04, about 2 % each
	// way — the same bar as a player's lossShare.
	lossyPath = 0.04
	// lossShare: a player loses datagrams on its own side when its share is
	// at least 2 %; below that the L2 window's resolution and the usual
	// background loss of the internet blur it.
	lossShare = 0.02
	// minExpected: a direction's loss counts only once the receiver judged
	// this many datagrams (L2), so that one early gap is not 10 %.
	minExpected = 100

	// waitShare: waits alone make a culprit only when others waited for it
	// at least a tenth of the last two evaluation intervals (CONTRACTS).
	waitShare = 0.10
	// rttTieMs, rttTieShare: two players tied on rung gain are told apart by
	// the worst round trip left without them only when those differ by at
	// least 5 ms and 10 %; otherwise it is a tie and nobody is named.
	rttTieMs    = 5.0
	rttTieShare = 0.10

	// StaleResend, StaleFactor: L8's "resend share far above a near-zero
	// loss share": resends are at least 10 % of sent and at least four times
	// the inbound loss share plus 5 points. IsStale applies them.
	StaleResend = 0.10
	StaleFactor = 4.0

	// fitFloorMs: residuals below 1 ms count as noise and are weighted as
	// least squares would (a Huber-like fit), larger ones by absolute
	// deviation. A round trip's smoothed estimate wanders by about that much
	// between evaluations, and the floor lets the fit converge in a few
	// rounds instead of chasing exact zeros.
	fitFloorMs = 1.0
	// fitFloorJitter is the same for the variation's squares (ms²).
	fitFloorJitter = 1.0
	// fitFloorLoss is the same for loss exponents (0.1 points).
	fitFloorLoss = 1e-3
)

// IsStale reports whether a link's resend share (retransmitted/sent) is far
// above its inbound loss share (missing/expected) (L8): a round-trip
// estimate that has fallen behind.
func IsStale(resendShare, lossShare float64) bool {
	if !finite(resendShare) || !finite(lossShare) {
		return false
	}
	return resendShare >= StaleResend && resendShare >= StaleFactor*lossShare+0.05
}

// Player is one player as the diagnosis needs it, in house order.
type Player struct {
	Name string
	// Process is the player's average processing time per frame (S5).
	Process time.Duration
	// CausedWait is the time others waited for this player since the game
	// started; RecentWait the part of it in the last two evaluation
	// intervals (Input.Window long).
	CausedWait time.Duration
	RecentWait time.Duration
	// Measured: the player has a fresh report with a round trip (S6, S8).
	Measured bool
	// Stale: a link of this player resends far more than it loses (L8;
	// see IsStale). Bad: the caller judged the player's connection bad
	// (e.g. a link without a clean sample for long); passed through as a
	// cause.
	Stale bool
	Bad   bool
}

// Pair is what is known about the path between players A and B (indices
// into Input.Players, A != B).
type Pair struct {
	A, B int
	// RTT is the pair's smoothed round trip (SRTT), 0 when not measured;
	// RTTVar its round-trip variation (RTTVAR).
	RTT, RTTVar time.Duration
	// Observed loss (L2): datagrams A→B that B judged (ExpectedAB) and of
	// those the ones that never arrived (MissingAB); the same for B→A.
	ExpectedAB, MissingAB uint64
	ExpectedBA, MissingBA uint64
}

// Input is one evaluation's worth of evidence.
type Input struct {
	Players []Player
	Pairs   []Pair
	// Speed is the frame rate the game speed allows (S15).
	Speed int
	// Target is the timing the master chose last; the zero Timing when not
	// known (then the rung the worst round trip needs stands in).
	Target rungs.Timing
	// Window is the length of the last two evaluation intervals, for the
	// waits rule; 0 turns waits off as a reason for a culprit.
	Window time.Duration
}

// The causes, as they appear in the NDJSON (CONTRACTS).
const (
	CauseLatency    = "latency"
	CauseJitter     = "jitter"
	CauseLoss       = "loss"
	CauseProcessing = "processing"
	CauseUnmeasured = "unmeasured"
	CauseStale      = "stale"
	CauseBad        = "bad"
)

// PlayerDiagnosis is one player's line. Milliseconds are float64 with NaN
// for unknown (null in JSON); RungWithout is 0 when unknown.
type PlayerDiagnosis struct {
	Player       string
	AccessRTTMs  float64 // share of every round trip this player is on
	AccessLoss   float64 // chance 0–1 a datagram is lost on this player's side, out and in together
	JitterMs     float64 // share of the round-trip variation
	ProcessMs    float64
	CausedWaitMs float64
	RungWithout  int // rung the others' worst round trip needs with headroom; 0 = null
	FPSWithout   int // frame rate without this player's processing time (S15)
	Causes       []string
}

// LinkDiagnosis is one pair's line; Between is in house order.
type LinkDiagnosis struct {
	Between       [2]string
	RTTMs         float64 // measured, NaN when not
	ExpectedRTTMs float64 // share + share, NaN when the shares are not known
	ExcessRTTMs   float64 // RTT − expected, NaN with fewer than four measured
	Loss          float64 // pooled loss of both directions, NaN when not judged
	Causes        []string
}

// Diagnosis is the result of one evaluation (the `diagnosis` event's body).
type Diagnosis struct {
	Verdict     string
	Culprit     string     // "" = none (null)
	CulpritLink *[2]string // nil = none (null)
	Players     []PlayerDiagnosis
	Links       []LinkDiagnosis
	// Measured is how many players took part in the fit; Reason says what
	// made the culprit one (rung, fps, waits) — for tests and the report.
	Measured int
	Reason   string
}

// Diagnoser keeps scratch between evaluations so that repeated calls do
// not reallocate the n×n matrices. Its zero value is ready; it is not safe
// for concurrent use.
type Diagnoser struct {
	f                 fitter
	use, lossUse      []bool
	pairs             []Pair
	degree            []int
	counted           []float64
	rtt, jit, lossExp []float64
	lossExpPair       []float64 // per pair, NaN when not judged
	tmp               []float64
}

// Diagnose runs one evaluation with fresh scratch.
func Diagnose(in Input) Diagnosis {
	var d Diagnoser
	return d.Diagnose(in)
}

type candidate struct {
	idx       int
	rungGain  int
	fpsGain   int
	worstLeft float64 // ms, worst round trip without the player
	recent    float64
}

// Diagnose runs one evaluation. The result owns its slices.
func (g *Diagnoser) Diagnose(in Input) Diagnosis {
	n := len(in.Players)
	out := Diagnosis{Players: make([]PlayerDiagnosis, n)}
	speed := max(in.Speed, 1)

	// The measured pairs, sanitised: indices in range, A before B (house
	// order), non-negative values.
	pairs := g.pairs[:0]
	defer func() { g.pairs = pairs[:0] }() // keep the grown scratch
	for _, p := range in.Pairs {
		if p.A < 0 || p.B < 0 || p.A >= n || p.B >= n || p.A == p.B {
			continue
		}
		if p.A > p.B {
			p.A, p.B = p.B, p.A
			p.ExpectedAB, p.ExpectedBA = p.ExpectedBA, p.ExpectedAB
			p.MissingAB, p.MissingBA = p.MissingBA, p.MissingAB
		}
		pairs = append(pairs, p)
	}
	byHouse := func(p, q Pair) int { return cmp.Or(cmp.Compare(p.A, q.A), cmp.Compare(p.B, q.B)) }
	if !slices.IsSortedFunc(pairs, byHouse) {
		slices.SortStableFunc(pairs, byHouse)
	}

	// Who takes part in the fit: a measured player with round trips to at
	// least two other measured players (one pair alone cannot be split).
	g.use = growBool(g.use, n)
	g.degree = growInt(g.degree, n)
	degree := g.degree
	for i := range degree {
		degree[i] = 0
	}
	for _, p := range pairs {
		if p.RTT > 0 && in.Players[p.A].Measured && in.Players[p.B].Measured {
			degree[p.A]++
			degree[p.B]++
		}
	}
	measured := 0
	for i := range g.use {
		g.use[i] = degree[i] >= 2
		if g.use[i] {
			measured++
		}
	}
	// Removing players can drop others below two pairs; a few passes settle it.
	for pass := 0; pass < n && measured > 0; pass++ {
		changed := false
		for i := range degree {
			degree[i] = 0
		}
		for _, p := range pairs {
			if p.RTT > 0 && g.use[p.A] && g.use[p.B] {
				degree[p.A]++
				degree[p.B]++
			}
		}
		for i := range g.use {
			if g.use[i] && degree[i] < 2 {
				g.use[i] = false
				measured--
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	out.Measured = measured
	shares := measured >= MinMeasured
	excessKnown := measured >= MinForLinks

	g.rtt = grow(g.rtt, n)
	g.jit = grow(g.jit, n)
	g.lossExp = grow(g.lossExp, n)
	for i := 0; i < n; i++ {
		g.rtt[i], g.jit[i], g.lossExp[i] = math.NaN(), math.NaN(), math.NaN()
	}
	if shares {
		g.f.reset(n)
		for _, p := range pairs {
			if p.RTT > 0 && g.use[p.A] && g.use[p.B] {
				g.f.set(p.A, p.B, netcore.Millis(p.RTT))
			}
		}
		g.f.fit(g.use, g.rtt, fitFloorMs)

		// Variation: independent parts add in variance, so fit RTTVAR².
		g.f.reset(n)
		for _, p := range pairs {
			if p.RTT > 0 && g.use[p.A] && g.use[p.B] {
				v := netcore.Millis(max(p.RTTVar, 0))
				g.f.set(p.A, p.B, v*v)
			}
		}
		g.f.fit(g.use, g.jit, fitFloorJitter)
		for i := range g.jit {
			if !math.IsNaN(g.jit[i]) {
				g.jit[i] = math.Sqrt(math.Max(g.jit[i], 0))
			}
		}

		// Loss: survival multiplies, so −log(1−loss) adds. Out and in of a
		// pair together: l(a→b) + l(b→a) = (up_a+down_a) + (up_b+down_b).
		g.f.reset(n)
		g.lossUse = growBool(g.lossUse, n)
		lossUse := g.lossUse
		for i := range degree {
			degree[i] = 0
		}
		g.lossExpPair = grow(g.lossExpPair, len(pairs))
		for k, p := range pairs {
			lp, ok := roundTripLossExp(p)
			if !ok {
				lp = math.NaN()
			}
			g.lossExpPair[k] = lp
			if ok && g.use[p.A] && g.use[p.B] {
				g.f.set(p.A, p.B, lp)
				degree[p.A]++
				degree[p.B]++
			}
		}
		lossPlayers := 0
		for i := range lossUse {
			lossUse[i] = g.use[i] && degree[i] >= 2
			if lossUse[i] {
				lossPlayers++
			}
		}
		if lossPlayers >= MinMeasured {
			g.f.fit(lossUse, g.lossExp, fitFloorLoss)
		}
	}

	// Medians of the shares, for "stands out".
	medRTT := g.median(g.rtt)
	medJit := g.median(g.jit)

	// Links.
	out.Links = make([]LinkDiagnosis, 0, len(pairs))
	worstAll := 0.0
	for k, p := range pairs {
		l := LinkDiagnosis{
			Between:       [2]string{in.Players[p.A].Name, in.Players[p.B].Name},
			RTTMs:         math.NaN(),
			ExpectedRTTMs: math.NaN(),
			ExcessRTTMs:   math.NaN(),
			Loss:          pooledLoss(p),
			Causes:        []string{},
		}
		if p.RTT > 0 {
			l.RTTMs = netcore.Millis(p.RTT)
			worstAll = math.Max(worstAll, l.RTTMs)
		}
		if shares && g.use[p.A] && g.use[p.B] {
			l.ExpectedRTTMs = math.Max(g.rtt[p.A], 0) + math.Max(g.rtt[p.B], 0)
			if excessKnown && !math.IsNaN(l.RTTMs) {
				l.ExcessRTTMs = l.RTTMs - l.ExpectedRTTMs
				if slowPath(l.ExcessRTTMs, l.ExpectedRTTMs) {
					l.Causes = append(l.Causes, CauseLatency)
				}
			}
			// A path that loses more than its two players' sides explain.
			if lp := g.lossExpPair[k]; excessKnown && !math.IsNaN(lp) && !math.IsNaN(g.lossExp[p.A]) && !math.IsNaN(g.lossExp[p.B]) &&
				lp-math.Max(g.lossExp[p.A], 0)-math.Max(g.lossExp[p.B], 0) >= lossyPath {
				l.Causes = append(l.Causes, CauseLoss)
			}
		}
		out.Links = append(out.Links, l)
	}

	// culprit_link: the one slow path, clearly the worst of the slow ones.
	best, second := -1, math.Inf(-1)
	for i, l := range out.Links {
		if !has(l.Causes, CauseLatency) {
			continue
		}
		if best < 0 || l.ExcessRTTMs > out.Links[best].ExcessRTTMs {
			if best >= 0 {
				second = math.Max(second, out.Links[best].ExcessRTTMs)
			}
			best = i
		} else {
			second = math.Max(second, l.ExcessRTTMs)
		}
	}
	linkIdx := -1
	if best >= 0 && (math.IsInf(second, -1) || out.Links[best].ExcessRTTMs >= linkDominance*second) {
		linkIdx = best
		b := out.Links[best].Between
		out.CulpritLink = &b
	}

	// Costs: the frame rate now and without each player (S15), the rung the
	// others' worst round trip needs with headroom (S9) at today's frame
	// rate, so that rungs compare. A slow path's excess is the path's, not
	// its players': it counts at its expected value when judging players.
	var maxProc time.Duration
	for _, p := range in.Players {
		maxProc = max(maxProc, p.Process)
	}
	fpsAll := rungs.FrameRate(maxProc, speed)
	// The worst counted round trip, and for each of its two players the
	// worst without them: everybody else leaves the worst pair in place.
	g.counted = grow(g.counted, len(pairs))
	counted := g.counted
	worstIdx := -1
	for i, p := range pairs {
		counted[i] = countedRTT(p, i == linkIdx, out.Links[i])
		if counted[i] > 0 && (worstIdx < 0 || counted[i] > counted[worstIdx]) {
			worstIdx = i
		}
	}
	worstCounted := 0.0
	worstWithout := func(who int) float64 {
		if worstIdx < 0 {
			return 0
		}
		if w := pairs[worstIdx]; w.A != who && w.B != who {
			return counted[worstIdx]
		}
		v := 0.0
		for k, p := range pairs {
			if p.A != who && p.B != who {
				v = math.Max(v, counted[k])
			}
		}
		return v
	}
	if worstIdx >= 0 {
		worstCounted = counted[worstIdx]
	}
	rungAll := 0
	if worstCounted > 0 {
		rungAll = rungs.Need(rungs.WithHeadroom(dur(worstCounted)), fpsAll).Rung()
	}

	cands := make([]candidate, 0, n)
	for i, pl := range in.Players {
		pd := &out.Players[i]
		pd.Player = pl.Name
		pd.AccessRTTMs, pd.AccessLoss, pd.JitterMs = math.NaN(), math.NaN(), math.NaN()
		if shares && g.use[i] {
			pd.AccessRTTMs = math.Max(g.rtt[i], 0)
			pd.JitterMs = g.jit[i]
			if !math.IsNaN(g.lossExp[i]) {
				pd.AccessLoss = 1 - math.Exp(-math.Max(g.lossExp[i], 0))
			}
		}
		pd.ProcessMs = netcore.Millis(max(pl.Process, 0))
		pd.CausedWaitMs = netcore.Millis(max(pl.CausedWait, 0))

		var others time.Duration
		for j, q := range in.Players {
			if j != i {
				others = max(others, q.Process)
			}
		}
		pd.FPSWithout = rungs.FrameRate(others, speed)
		worstLeft := worstWithout(i)
		if n-1 >= 2 && worstLeft > 0 {
			pd.RungWithout = rungs.Need(rungs.WithHeadroom(dur(worstLeft)), fpsAll).Rung()
		}

		pd.Causes = []string{}
		if !pl.Measured || (!g.use[i] && shares) {
			pd.Causes = append(pd.Causes, CauseUnmeasured)
		}
		if shares && g.use[i] {
			if standsOut(pd.AccessRTTMs, medRTT, latencyMs, latencyFactor) {
				pd.Causes = append(pd.Causes, CauseLatency)
			}
			if standsOut(pd.JitterMs, medJit, jitterMs, jitterFactor) {
				pd.Causes = append(pd.Causes, CauseJitter)
			}
			if pd.AccessLoss >= lossShare {
				pd.Causes = append(pd.Causes, CauseLoss)
			}
		}
		if pl.Process > 0 && rungs.FrameRate(pl.Process, speed) < speed {
			pd.Causes = append(pd.Causes, CauseProcessing)
		}
		if pl.Stale {
			pd.Causes = append(pd.Causes, CauseStale)
		}
		if pl.Bad {
			pd.Causes = append(pd.Causes, CauseBad)
		}

		c := candidate{idx: i, fpsGain: pd.FPSWithout - fpsAll, worstLeft: worstLeft, recent: netcore.Millis(pl.RecentWait)}
		if rungAll > 0 && pd.RungWithout > 0 {
			c.rungGain = rungAll - pd.RungWithout
		}
		cands = append(cands, c)
	}

	if measured >= MinMeasured {
		out.Culprit, out.Reason = pickCulprit(cands, in.Players, netcore.Millis(in.Window))
	}
	out.Verdict = verdict(&out, in, rungAll, fpsAll, worstAll)
	return out
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
	return netcore.Millis(p.RTT)
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

func slowPath(excess, expected float64) bool {
	return excess >= slowPathMs && excess >= slowPathShare*expected
}

func standsOut(v, median, abs, factor float64) bool {
	if math.IsNaN(v) || math.IsNaN(median) {
		return false
	}
	return v-median >= abs && v >= factor*median
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

func (g *Diagnoser) median(v []float64) float64 {
	g.tmp = g.tmp[:0]
	for _, x := range v {
		if !math.IsNaN(x) {
			g.tmp = append(g.tmp, x)
		}
	}
	return medianOf(g.tmp)
}

func growInt(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

func growBool(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}

// dur converts back, held below 100 days so the conversion cannot overflow.
func dur(ms float64) time.Duration {
	return netcore.FromMillis(math.Min(ms, 8.64e9))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
