package rungs

import (
	"fmt"
	"time"
)

// Constants of the evaluator (S9–S11, S16).
const (
	// evaluateEvery is the evaluation interval after the 64- and 128-frame
	// evaluations (S9).
	evaluateEvery = 256
	// initialUntil is the last frame (since start) of the initial evaluations;
	// incomplete reports then fall back to 3/9 (S10).
	initialUntil = 128
	// changeSpacing is how many frames must pass since the master last changed
	// the timing before an evaluation counts toward an improvement (S11b.3).
	changeSpacing = 256
	// handoffWait is how long a new master waits before an improvement (S16).
	handoffWait = 256
	// inARowNeeded is how many passing evaluations in a row the first
	// improvement needs (S11c).
	inARowNeeded = 3
	// maxWait is the wait that blocks an improvement when any player reports
	// one at least this long (S11b.2).
	maxWait = 100 * time.Millisecond
)

// IsEvaluationFrame reports whether the master evaluates on the frame that is
// sinceStart frames after the game started (S9): 64, 128, then every multiple
// of 256 (256, 512, …).
func IsEvaluationFrame(sinceStart int) bool {
	return sinceStart == 64 || sinceStart == 128 || (sinceStart > 0 && sinceStart%evaluateEvery == 0)
}

// Reason says why the master sent a timing event.
type Reason int

// The reasons, as the `timing` event names them.
const (
	Initial  Reason = iota + 1 // the 64- or 128-frame evaluation had every report (S10)
	Fallback                   // reports still incomplete at 128 frames: 3/9 (S10)
	Worse                      // the worst round trip needs more (S11a)
	Better                     // an improvement step (S11b–d)
	Forced                     // a player never reported a round trip: 10/250 (S8)
	// Rate keeps the target and changes only the frame rate (S15): the game
	// speed or the slowest player's processing time moved while the target
	// had no reason to. It extends the list of reasons the other timing
	// events share (docs/timing.md): without it a Speed slider change
	// would wait for the next change of rung.
	Rate
)

func (r Reason) String() string {
	switch r {
	case Initial:
		return "initial"
	case Fallback:
		return "fallback"
	case Worse:
		return "worse"
	case Better:
		return "better"
	case Rate:
		return "rate"
	case Forced:
		return "forced"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Decision is a timing event the master sends: the target timing and the
// frame rate every machine runs at (S15), decided on Frame.
type Decision struct {
	Frame  int
	Target Timing
	FPS    int
	Reason Reason
}

// Master is the master's evaluator state (S9–S11, S15, S16). Every machine
// may keep one and feed it executed timing events (Observe); only the master
// calls Evaluate.
type Master struct {
	start  int    // frame the game started on
	target Timing // the current target: the last timing chosen
	fps    int    // the current frame rate

	initialDone bool // the initial target or the fallback has been set
	everChanged bool // some decision changed the target
	lastChange  int  // frame of the last decision that changed the target
	holdUntil   int  // no improvement counts before this frame (S16)
	inARow      int  // passing evaluations in a row, before a descent
	descending  bool // a descent is running (S11d)
}

// NewMaster starts an evaluator for a game that started on startFrame at
// timing initial (StartTiming for a fresh game) and frame rate fps.
func NewMaster(startFrame int, initial Timing, fps int) *Master {
	return &Master{start: startFrame, target: initial, fps: max(fps, 1), holdUntil: startFrame}
}

// Target is the current target: the last timing chosen or observed.
func (m *Master) Target() Timing { return m.target }

// FPS is the frame rate the last decision carried.
func (m *Master) FPS() int { return m.fps }

// isEvaluationFrame reports whether frame is one the master evaluates on.
func (m *Master) isEvaluationFrame(frame int) bool { return IsEvaluationFrame(frame - m.start) }

// Observe takes in a timing event that executed, so that the target and frame
// rate follow the master's decisions on every machine and a new master knows
// them (S16). On the master itself it repeats what Evaluate already did.
func (m *Master) Observe(d Decision) {
	if d.Target != m.target {
		m.everChanged, m.lastChange = true, d.Frame
	}
	m.target, m.fps, m.initialDone = d.Target, max(d.FPS, 1), true
}

// TakeOver makes this evaluator the master on frame, after an executed
// removal handed the master on (S16): it keeps the current target, restarts
// any descent and count of three, and lets no evaluation count toward an
// improvement for the next 256 frames.
func (m *Master) TakeOver(frame int) {
	m.restart()
	m.holdUntil = frame + handoffWait
}

func (m *Master) restart() { m.inARow, m.descending = 0, false }

// Evaluate runs one evaluation on frame over rec (S9–S11, S15); speedFPS is
// the frame rate the game speed allows. Call it on evaluation frames
// (IsEvaluationFrame), in order. ok is false when the evaluation sends no
// timing event. It does not allocate.
func (m *Master) Evaluate(frame int, rec *Record, speedFPS int) (d Decision, ok bool) {
	sum := rec.Summary(frame)
	fps := m.fps
	if sum.allFresh() {
		fps = FrameRate(sum.MaxProcess, speedFPS)
	}
	d, ok = m.evaluate(frame, sum, fps)
	if !ok && m.initialDone && fps != m.fps {
		// Nothing moves the target, but the rate every machine runs at
		// must follow the game speed and processing times (S15).
		return m.decide(frame, m.target, fps, Rate, true)
	}
	return d, ok
}

func (m *Master) evaluate(frame int, sum Summary, fps int) (d Decision, ok bool) {
	if sum.Forced { // S8: a player never reported a round trip
		m.restart()
		return m.decide(frame, WidestTiming(), fps, Forced, false)
	}

	if !m.initialDone && frame-m.start <= initialUntil { // S10
		switch {
		case sum.Complete():
			return m.decide(frame, Need(WithHeadroom(sum.Worst), fps), fps, Initial, true)
		case frame-m.start >= initialUntil:
			return m.decide(frame, fallbackTiming(), fps, Fallback, true)
		}
		return Decision{}, false
	}

	if sum.WithRTT == 0 { // nothing to judge by: hold, and a report is missing
		m.restart()
		return Decision{}, false
	}
	need := Need(sum.Worst, fps)
	if need.compare(m.target) > 0 { // S11a, and S8: fresh round trips may still worsen
		m.restart()
		return m.decide(frame, need, fps, Worse, false)
	}
	if !sum.Complete() { // S8, S11d: a missing report holds the timing
		m.restart()
		return Decision{}, false
	}
	if !m.improves(frame, sum, need, fps) {
		m.restart()
		return Decision{}, false
	}
	if !m.descending {
		m.inARow++
		if m.inARow < inARowNeeded {
			return Decision{}, false
		}
		m.descending = true // S11c: the first improvement starts a descent
	}
	return m.decide(frame, m.stepDown(need), fps, Better, false)
}

// improves checks the four conditions of S11b.
func (m *Master) improves(frame int, sum Summary, need Timing, fps int) bool {
	if need.compare(m.target) >= 0 { // (1) the round trip needs less
		return false
	}
	if sum.MaxWait >= maxWait { // (2) nobody waited 0.1 s or more
		return false
	}
	if frame < m.holdUntil { // S16: a new master waits 256 frames
		return false
	}
	if m.everChanged && !m.descending && frame-m.lastChange < changeSpacing { // (3)
		return false
	}
	return Need(WithHeadroom(sum.Worst), fps).compare(m.target) < 0 // (4) headroom too
}

// stepDown is one improvement from the current target (S11c, S11d): one rung
// down, except that an extended rung 10 whose need is still rung 10 cuts the
// look-ahead straight to the need. Condition (1) has already made need lower
// than the target, so a need on the target's own rung means the target is
// extended; cutting to the need never skips a rung and never undershoots it.
func (m *Master) stepDown(need Timing) Timing {
	if need.Rung() == m.target.Rung() {
		return need
	}
	return RungTiming(m.target.Rung() - 1)
}

// decide records a decision and says whether it is an event: always when
// always is set, otherwise only when the target changes.
func (m *Master) decide(frame int, t Timing, fps int, why Reason, always bool) (Decision, bool) {
	changed := t != m.target
	if !changed && !always {
		return Decision{}, false
	}
	if changed {
		m.everChanged, m.lastChange = true, frame
	}
	m.target, m.fps, m.initialDone = t, fps, true
	return Decision{Frame: frame, Target: t, FPS: fps, Reason: why}, true
}

// FrameRate is the rate the master sets (S15): the largest whole rate whose
// frame time is at least the slowest player's average processing time,
// floor(1 s / process), capped by the rate the game speed allows, and never
// below 1. A processing time of zero does not cap the rate.
func FrameRate(process time.Duration, speedFPS int) int {
	fps := max(speedFPS, 1)
	if process > 0 {
		fps = min(fps, int(time.Second/process))
	}
	return max(fps, 1)
}
