package loadtest

import (
	"github.com/lagscope/lagscope/vocab"
	"slices"
	"time"
)

// IsMessage reports whether b is a load-test message by its kind (0x30 to
// 0x37): what a session hands to its Test rather than to the game. It
// does not decode b; Receive does.
func IsMessage(b []byte) bool { return len(b) > 0 && b[0] >= kindRequest && b[0] <= kindStop }

// IsRequest reports whether b is a load-test request by its kind: the one
// message that starts a peer's end.
func IsRequest(b []byte) bool { return len(b) > 0 && b[0] == kindRequest }

// Check decodes b without acting on it: the id of the test it names, or
// why it is malformed (a load datagram under 1000 bytes among them). It
// allocates nothing.
func Check(b []byte) (uint32, error) {
	m, err := decode(b)
	return m.id, err
}

// phaseNames are the phases' names, as Progress gives them.
var phaseNames = [numPhases]vocab.LoadPhase(vocab.LoadPhases)

// PhaseProgress is one timed phase of a running test: when it began (time
// since the world started), how many probes it has graded and their
// median round trip so far (0 without one).
type PhaseProgress struct {
	Name    vocab.LoadPhase
	Began   time.Duration
	Samples int
	Median  time.Duration
}

// Progress is a running test as the tester sees it: the phase it is in,
// and the idle, upload, download and both phases begun so far with their
// graded probes. A peer's end has no phases of its own (Tester false).
type Progress struct {
	Tester bool
	Phase  vocab.LoadPhase
	Began  time.Duration // when the test began
	Phases []PhaseProgress
}

// Phase is the name of the phase the test is in, as Progress gives it,
// without Progress's copies: a caller may ask on every Tick.
func (x *Test) Phase() vocab.LoadPhase {
	switch {
	case x.t == nil:
		return vocab.LoadAnswering
	case x.t.over && x.t.ph != phaseDone:
		return vocab.LoadStopped
	}
	return phaseNames[x.t.ph]
}

// Progress is the test at this moment. It allocates: a front end calls
// it a few times a second, never per datagram.
func (x *Test) Progress() Progress {
	if x.t == nil {
		return Progress{Phase: x.Phase()}
	}
	t := x.t
	p := Progress{Tester: true, Phase: x.Phase(), Began: t.t0}
	for _, ph := range []phase{phaseIdle, phaseUpHold, phaseDownHold, phaseBoth} {
		if t.ph < ph || (ph != phaseIdle && t.at[ph] == 0) {
			continue
		}
		pp := PhaseProgress{Name: phaseNames[ph], Began: t.at[ph], Samples: len(t.rtts[ph])}
		if n := len(t.rtts[ph]); n > 0 {
			s := slices.Clone(t.rtts[ph])
			slices.Sort(s)
			pp.Median = median(s)
		}
		p.Phases = append(p.Phases, pp)
	}
	return p
}
