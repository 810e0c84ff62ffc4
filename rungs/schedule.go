package rungs

// Schedule is the timing in force on one machine (S12–S15): it applies each
// executed timing event at once, or stages a decrease and steps it down.
// Every machine executes the same events on the same frames, so every
// machine's Schedule moves in step.
//
// On each frame, first call Change for every timing event that executes on
// it, then Advance once. Frames must be passed in increasing order.
type Schedule struct {
	inForce Timing
	target  Timing
	fps     int

	phase      phase
	activation int // waiting: the frame the staged decrease activates on
	pendingFPS int // waiting: the rate that applies on activation (S15)
	stepFrom   int // stepping: send frames after this one each remove a period

	reported Timing // in force after the last Advance
}

type phase uint8

const (
	steady   phase = iota // in force == target
	waiting               // a decrease waits for its activation frame
	stepping              // the look-ahead steps down one send period per send frame
)

// NewSchedule starts with timing t in force (StartTiming for a fresh game)
// at frame rate fps.
func NewSchedule(t Timing, fps int) *Schedule {
	t = t.sane()
	return &Schedule{inForce: t, target: t, fps: max(fps, 1), reported: t}
}

// InForce is the timing in force: the send period frames are sent at and the
// look-ahead new commands are scheduled with.
func (s *Schedule) InForce() Timing { return s.inForce }

// Target is the timing the last executed timing event asked for.
func (s *Schedule) Target() Timing { return s.target }

// FPS is the frame rate in force (S15).
func (s *Schedule) FPS() int { return s.fps }

// Staged reports whether a decrease is still on its way to the target:
// waiting to activate or stepping the look-ahead down.
func (s *Schedule) Staged() bool { return s.phase != steady }

// pendingActivation is the frame a waiting decrease activates on; ok is false when
// no decrease is waiting.
func (s *Schedule) pendingActivation() (frame int, ok bool) {
	return s.activation, s.phase == waiting
}

// Change executes a timing event on frame: target timing, frame rate fps
// (S12, S14, S15). The change is judged against the timing in force at this
// moment, so a new target replaces a staged one (S14).
//
//   - Shortening neither setting, it applies at once, rate included.
//   - Lengthening the send period but shortening the look-ahead, the period
//     and rate switch at once; the look-ahead is rounded up to whole new send
//     periods, serves the first send frame under the new period, and then
//     steps down one new send period per send frame.
//   - Any other shortening waits until every command scheduled under the old
//     look-ahead has come due (frame + old look-ahead) and activates on the
//     first frame from then on that is a multiple of both send periods; the
//     new rate applies on activation.
//   - Keeping the target (a `rate` event, Reason Rate) while a decrease is
//     staged, only the rate changes, at once: the staged decrease goes on
//     as scheduled, neither restarted nor deferred, and keeps the new rate
//     when it activates, because that rate is the master's latest choice
//     (S15) and the master sends no second event for it.
func (s *Schedule) Change(frame int, target Timing, fps int) {
	old := s.inForce
	target = target.sane()
	fps = max(fps, 1)
	if target == s.target && s.phase != steady {
		// Judged against the timing in force, the unchanged target would
		// read as a new decrease and restart the wait.
		s.fps, s.pendingFPS = fps, fps
		return
	}
	s.target = target
	switch {
	case target.SendPeriod >= old.SendPeriod && target.LookAhead >= old.LookAhead:
		s.inForce, s.fps, s.phase = target, fps, steady
	case target.SendPeriod > old.SendPeriod:
		s.inForce = Timing{SendPeriod: target.SendPeriod, LookAhead: roundUp(old.LookAhead, target.SendPeriod)}
		s.fps, s.phase = fps, stepping
		s.stepFrom = roundUp(frame, target.SendPeriod)
	default:
		s.phase = waiting
		s.pendingFPS = fps
		s.activation = roundUp(frame+old.LookAhead, lcm(old.SendPeriod, target.SendPeriod))
	}
}

// Advance moves the schedule to frame and reports whether the timing in force
// differs from what it was after the previous Advance: a change applied at
// once by Change on this frame, the activation of a staged decrease, or one
// of its steps. Skipped frames are caught up, each step in its turn.
func (s *Schedule) Advance(frame int) bool {
	if s.phase == waiting && frame >= s.activation {
		// S12: the new send period applies; the look-ahead drops by one old
		// send period, not below the target's, rounded up to new periods.
		la := max(s.target.LookAhead, s.inForce.LookAhead-s.inForce.SendPeriod)
		s.inForce = Timing{SendPeriod: s.target.SendPeriod, LookAhead: roundUp(la, s.target.SendPeriod)}
		s.fps, s.phase, s.stepFrom = s.pendingFPS, stepping, s.activation
	}
	if s.phase == stepping {
		p := s.inForce.SendPeriod
		if n := floorDiv(frame, p) - floorDiv(s.stepFrom, p); n > 0 {
			// One send period per send frame in (stepFrom, frame], never
			// below the target; the loop ends at the target, so a long jump
			// costs no more than the steps that remain.
			la := s.inForce.LookAhead
			for ; n > 0 && la > s.target.LookAhead; n-- {
				la = max(la-p, s.target.LookAhead)
			}
			s.inForce.LookAhead = la
			s.stepFrom = frame
		}
		if s.inForce == s.target {
			s.phase = steady
		}
	}
	changed := s.inForce != s.reported
	s.reported = s.inForce
	return changed
}

// IsSendFrame reports whether frame is a send frame under the timing in
// force: a multiple of its send period.
func (s *Schedule) IsSendFrame(frame int) bool { return frame%s.inForce.SendPeriod == 0 }

// NextSendFrame is the frame a command tagged for frame executes on (S13):
// frame itself if it is a send frame under the timing in force, otherwise the
// next send frame. Every machine computes the same, and a recording keeps the
// command's original tag.
func (s *Schedule) NextSendFrame(frame int) int { return roundUp(frame, s.inForce.SendPeriod) }

// roundUp is the smallest multiple of p (p >= 1) that is at least n.
func roundUp(n, p int) int {
	if p <= 1 {
		return n
	}
	return -floorDiv(-n, p) * p
}

// floorDiv divides rounding toward minus infinity, so frames before zero
// fall into the right send period too.
func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int {
	if a <= 0 || b <= 0 {
		return max(a, b, 1)
	}
	return a / gcd(a, b) * b
}
