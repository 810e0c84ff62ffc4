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

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
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

// candidate is what one player's absence would gain the session, for the
// culprit step.
type candidate struct {
	idx       int
	rungGain  int
	fpsGain   int
	worstLeft float64 // ms, worst round trip without the player
	recent    float64
}

// Diagnose runs one evaluation, step by step: the inputs (the usable pairs
// and the players the fit can split), the fit of the shares, the causes of
// each path and player, the costs (what the session runs at, with and
// without each player), the culprit and the verdict. The result owns its
// slices.
func (g *Diagnoser) Diagnose(in Input) Diagnosis {
	n := len(in.Players)
	speed := max(in.Speed, 1)

	g.pairs = sanitisePairs(g.pairs[:0], in.Pairs, n)
	pairs := g.pairs
	g.use, g.degree = growBool(g.use, n), growInt(g.degree, n)
	measured := participants(g.use, g.degree, pairs, in.Players)

	sh := g.fitShares(pairs, g.use, measured)

	links, worstAll := diagnoseLinks(pairs, in.Players, &sh)
	linkIdx := culpritLink(links)
	players := diagnosePlayers(in.Players, &sh, speed)

	g.counted = grow(g.counted, len(pairs))
	c := sessionCosts(g.counted, in.Players, pairs, links, linkIdx, speed)
	cands := playerCosts(players, in.Players, pairs, &c, speed)

	out := Diagnosis{Players: players, Links: links, Measured: measured}
	if linkIdx >= 0 {
		b := links[linkIdx].Between
		out.CulpritLink = &b
	}
	out.Culprit, out.Reason = nameCulprit(cands, in.Players, measured, in.Window)
	out.Verdict = verdict(&out, in, c.rungAll, c.fpsAll, worstAll)
	return out
}

// sanitisePairs appends to dst the pairs the diagnosis can use: indices in
// range and distinct, A before B (the directions swapped with them), sorted
// into house order (stable, so duplicates keep their order). The reports
// come from other machines, so nothing in them is trusted.
func sanitisePairs(dst, pairs []Pair, n int) []Pair {
	for _, p := range pairs {
		if p.A < 0 || p.B < 0 || p.A >= n || p.B >= n || p.A == p.B {
			continue
		}
		if p.A > p.B {
			p.A, p.B = p.B, p.A
			p.ExpectedAB, p.ExpectedBA = p.ExpectedBA, p.ExpectedAB
			p.MissingAB, p.MissingBA = p.MissingBA, p.MissingAB
		}
		dst = append(dst, p)
	}
	byHouse := func(p, q Pair) int { return cmp.Or(cmp.Compare(p.A, q.A), cmp.Compare(p.B, q.B)) }
	if !slices.IsSortedFunc(dst, byHouse) {
		slices.SortStableFunc(dst, byHouse)
	}
	return dst
}

// participants marks in use the players that take part in the fit and
// returns how many they are: measured players with round trips to at least
// two others in use, since one pair alone cannot be split. Dropping a
// player can leave others with one pair, so it drops until nobody changes.
// degree is scratch of the same length as use.
func participants(use []bool, degree []int, pairs []Pair, players []Player) int {
	measured := 0
	for i := range use {
		use[i] = players[i].Measured
		if use[i] {
			measured++
		}
	}
	for pass := 0; pass <= len(use) && measured > 0; pass++ {
		for i := range degree {
			degree[i] = 0
		}
		for _, p := range pairs {
			if p.RTT > 0 && use[p.A] && use[p.B] {
				degree[p.A]++
				degree[p.B]++
			}
		}
		changed := false
		for i := range use {
			if use[i] && degree[i] < 2 {
				use[i] = false
				measured--
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	return measured
}

// shares is what the fit step found, per player in house order, NaN where
// unknown. The slices are the Diagnoser's scratch, valid until its next
// evaluation.
type shares struct {
	measured    int       // players in the fit
	known       bool      // measured ≥ MinMeasured: the shares were fitted
	excessKnown bool      // measured ≥ MinForLinks: a path's excess means something
	use         []bool    // the player took part in the fit
	rtt, jit    []float64 // share of the round trip and of its variation, ms
	lossExp     []float64 // share of the round-trip loss exponent
	// lossExpPair is each pair's round-trip loss exponent, NaN when not
	// judged; set only when known.
	lossExpPair    []float64
	medRTT, medJit float64 // medians of rtt and jit, for "stands out"
}

// fitShares splits every round trip, its variation and its loss among the
// players in use (see fitter), when there are enough of them for a split;
// otherwise every share is NaN.
func (g *Diagnoser) fitShares(pairs []Pair, use []bool, measured int) shares {
	n := len(use)
	sh := shares{measured: measured, known: measured >= MinMeasured, excessKnown: measured >= MinForLinks, use: use}
	g.rtt, g.jit, g.lossExp = nans(grow(g.rtt, n)), nans(grow(g.jit, n)), nans(grow(g.lossExp, n))
	if sh.known {
		fitRTTShares(&g.f, pairs, use, g.rtt)
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
			Causes:        []string{},
		}
		if p.RTT > 0 {
			l.RTTMs = units.Millis(p.RTT)
			worstAll = math.Max(worstAll, l.RTTMs)
		}
		if sh.known && sh.use[p.A] && sh.use[p.B] {
			l.ExpectedRTTMs = math.Max(sh.rtt[p.A], 0) + math.Max(sh.rtt[p.B], 0)
			if sh.excessKnown && !math.IsNaN(l.RTTMs) {
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
// caused and causes.
func diagnosePlayers(players []Player, sh *shares, speed int) []PlayerDiagnosis {
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
		pd.Causes = playerCauses(pl, pd, sh.known, inFit, sh.medRTT, sh.medJit, speed)
	}
	return out
}

// playerCauses lists what is wrong with one player, in the order of the
// contract: unmeasured (no report, or left out of a fit that ran), then,
// for a player in the fit, a round-trip or variation share that stands out
// from the median and a loss share of at least lossShare, then a machine
// too slow for the game speed (S15), a stale link (L8) and a bad one.
func playerCauses(pl Player, pd *PlayerDiagnosis, fitted, inFit bool, medRTT, medJit float64, speed int) []string {
	causes := []string{}
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

// nans sets every element of s to NaN (unknown) and returns it.
func nans(s []float64) []float64 {
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

func growBool(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}

// dur converts back, held below 100 days so the conversion cannot overflow.
func dur(ms float64) time.Duration {
	return units.FromMillis(math.Min(ms, 8.64e9))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
