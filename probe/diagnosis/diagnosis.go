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
	"github.com/lagscope/lagscope/vocab"
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
	// minForLinks is how many measured players a path's excess needs: with
	// three the shares fit the three pairs exactly, so no pair has any.
	minForLinks = 4

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

	// staleResend, staleFactor: L8's "resend share far above a near-zero
	// loss share": resends are at least 10 % of sent and at least four times
	// the inbound loss share plus 5 points. IsStale applies them.
	staleResend = 0.10
	staleFactor = 4.0

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
	return resendShare >= staleResend && resendShare >= staleFactor*lossShare+0.05
}

// Player is one player as the diagnosis needs it, in house order.
type Player struct {
	Name string
	// Process is the player's average processing time per frame (S5).
	Process time.Duration
	// CausedWait is the time others waited for this player since the game
	// started, as they recorded it. RecentWait is what the waits rule
	// reads: the waits of the last two evaluation intervals (Input.Window
	// long) that were this player's delay — the caller counts a knock-on's
	// waits to the root of its chain (docs/diagnosis.md).
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
	// Target is the timing the master chose at this evaluation (the one the
	// next timing event carries when the evaluation changed it, otherwise
	// the target it holds); the zero Timing when not known (then the rung
	// the worst round trip needs stands in). InForce is the timing in force.
	Target, InForce rungs.Timing
	// FPS is the frame rate in force and Frame the evaluation's frame: the
	// verdict turns the outlook's frames into seconds with them.
	FPS, Frame int
	// Outlook is where the target goes next if the round trips stay as they
	// are (a descent pending or running, S11c–d).
	Outlook rungs.Outlook
	// Before is the culprit an earlier evaluation named while its descent
	// is still pending, "" when none: the verdict says it is back to normal.
	Before string
	// Elapsed is how long the game has run, for what a player has cost so far.
	Elapsed time.Duration
	// Window is the length of the last two evaluation intervals, for the
	// waits rule; 0 turns waits off as a reason for a culprit.
	Window time.Duration
	// Traces are the hop traces the players ran toward each other, this
	// machine's and those the others shared: where each player's delay
	// starts, and a hop several players' paths share.
	Traces []Trace
	// Loads are the latest load tests of the players' lines, at most one
	// per player (the first counts): each player's bufferbloat_ms and the
	// cause bufferbloat.
	Loads []Load
}

// The causes, as they appear in the NDJSON (CONTRACTS).
const (
	CauseLatency    = vocab.CauseLatency
	CauseJitter     = vocab.CauseJitter
	CauseLoss       = vocab.CauseLoss
	CauseProcessing = vocab.CauseProcessing
	CauseUnmeasured = vocab.CauseUnmeasured
	CauseStale      = vocab.CauseStale
	CauseBad        = vocab.CauseBad
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
	Causes       []vocab.Cause
	// Where is where on the player's own side its delay starts, from its
	// own traces; nil when they show none or there are none.
	Where *Where
	// Bufferbloat is what the player's line adds when busy, from its
	// latest load test; nil until one ran.
	Bufferbloat *Bufferbloat
}

// LinkDiagnosis is one pair's line; Between is in house order.
type LinkDiagnosis struct {
	Between       [2]string
	RTTMs         float64 // measured, NaN when not
	ExpectedRTTMs float64 // share + share, NaN when the shares are not known
	ExcessRTTMs   float64 // RTT − expected, NaN with fewer than four measured
	Loss          float64 // pooled loss of both directions, NaN when not judged
	Causes        []vocab.Cause
}

// Diagnosis is the result of one evaluation (the `diagnosis` event's body).
type Diagnosis struct {
	Verdict     string
	Culprit     string     // "" = none (null)
	CulpritLink *[2]string // nil = none (null)
	Players     []PlayerDiagnosis
	Links       []LinkDiagnosis
	// SharedHop is a hop past the homes where several players' delay
	// starts; nil when the traces show none.
	SharedHop *SharedHop
	// Measured is how many players took part in the fit; Reason says what
	// made the culprit one (rung, fps, waits) — for tests and the report.
	Measured int
	Reason   string
	// Lead is the sentences of the incidents open now (package incident),
	// the one that caused the most waiting first: while it holds any, the
	// verdict leads with them and never says that no one holds the match
	// back (SetLead).
	Lead []string

	facts *verdictFacts // what reword words the verdict from; nil when decoded
}

// SetLead gives the verdict its lead — the incidents open now — and words
// it again.
func (d *Diagnosis) SetLead(lead []string) {
	d.Lead = lead
	if d.facts != nil {
		d.Verdict = d.reword(d.facts.worded)
	}
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
	// outlook is the previous evaluation's: a descent to the same target
	// that now comes later was pushed back, and the verdict says why.
	outlook rungs.Outlook
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
	players := diagnosePlayers(in.Players, &sh, in.Loads, speed)

	g.counted = grow(g.counted, len(pairs))
	c := sessionCosts(g.counted, in.Players, pairs, links, linkIdx, speed)
	cands := playerCosts(players, in.Players, pairs, &c, speed)

	out := Diagnosis{Players: players, Links: links, Measured: measured}
	if linkIdx >= 0 {
		b := links[linkIdx].Between
		out.CulpritLink = &b
	}
	out.Culprit, out.Reason = nameCulprit(cands, in.Players, measured, in.Window)
	locate(&out, in)
	out.facts = newFacts(in, c.rungAll, c.fpsAll, worstAll)
	out.facts.later, out.facts.further = pushedBack(g.outlook, in.Outlook, in.FPS)
	g.outlook = in.Outlook
	out.facts.worded = Timings{Target: in.Target, InForce: in.InForce, Frame: in.Frame, FPS: in.FPS}
	out.Verdict = out.reword(out.facts.worded)
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

// newFacts keeps what the verdict needs from the evaluation's input and costs.
// pushedBack: the descent now settles later than the previous evaluation
// said, by more than laterSlack — the countdown a player reads would rise.
// further says it now goes further down than then.
func pushedBack(before, now rungs.Outlook, fps int) (later, further bool) {
	later = before.Pending() && now.Pending() && now.Active-before.Active > laterSlack*max(fps, 1)
	return later, later && now.To.Rung() < before.To.Rung()
}

// laterSlack is the seconds a descent may move without a word: the verdict
// says its time to the nearest 5 s.
const laterSlack = 2

func newFacts(in Input, rungAll, fpsAll int, worstAll float64) *verdictFacts {
	f := &verdictFacts{rungAll: rungAll, fpsAll: fpsAll, worstAll: worstAll, players: len(in.Players),
		outlook: in.Outlook, before: in.Before, elapsed: in.Elapsed}
	for _, p := range in.Players {
		if p.RecentWait > 0 {
			if f.recent == nil {
				f.recent = make(map[string]float64)
			}
			f.recent[p.Name] = units.Millis(p.RecentWait)
		}
	}
	return f
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
