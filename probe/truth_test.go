package probe

import (
	"fmt"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/rungs"
)

// runUntilFrame steps the world until every machine has executed frame
// last, failing after a bounded number of steps.
func (w *tmWorld) runUntilFrame(tb testing.TB, last int) {
	tb.Helper()
	for range 50_000_000 {
		done := true
		for _, m := range w.ms {
			if !m.gone && m.peer.Frame() <= last {
				done = false
			}
		}
		if done {
			return
		}
		if !w.sched.Step() {
			tb.Fatalf("the session stopped at %v", w.sched.Now())
		}
	}
	tb.Fatalf("frame %d not reached by %v", last, w.sched.Now())
}

// ackRequests records, for machine m, the frames of every frame packet it
// sent asking for an ack: the reliable count every frame packet carries
// (RelCount) moves when one goes out. OnFrame runs before the frame's own
// packet leaves, so a count that moved at frame f moved on frame f-1. With
// unmeasured set, the links are made to lack a clean sample again before
// every frame, so T6's rule is in force all game long.
func ackRequests(m *tmMachine, unmeasured bool) *[]int {
	frames := []int{0} // the first frame packet of the game (T6), sent at Start
	last := m.peer.relSent
	m.peer.cfg.OnFrame = func(f int, _ uint32) {
		if m.peer.relSent != last {
			if m.peer.relSent != last+1 {
				panic("two ack requests between two frames")
			}
			frames = append(frames, f-1)
			last = m.peer.relSent
		}
		if unmeasured {
			m.peer.ep.ResetMeasurement()
		}
	}
	return &frames
}

// T6: while a link lacks a clean sample, a frame packet asks for an ack at
// least every 32 frames, whatever the send period. Frame packets leave only
// on send frames, so the request goes on the last send frame that keeps the
// gap within 32 (at period 3: 30; at period 10, the forced 10/250 case: 30).
// Nobody issues game commands, so beyond the reports (frames 32, 64, 128,
// 256, …) and the master's timing events only T6 asks for acks: the gaps of
// 128 frames between reports are T6's alone.
func TestAckRequestEvery32Frames_T6(t *testing.T) {
	for _, start := range []rungs.Timing{{SendPeriod: 2, LookAhead: 6}, {SendPeriod: 3, LookAhead: 9}, {SendPeriod: 10, LookAhead: 250}} {
		t.Run(fmt.Sprintf("%d-%d", start.SendPeriod, start.LookAhead), func(t *testing.T) {
			w := newTMWorldWith(t, 2, 0, impair.Profile{Delay: 20 * time.Millisecond}, 5, func(_ int, c *Config) {
				c.Timing, c.CommandsPerMinute = start, 0
			})
			reqs := ackRequests(w.ms[1], true)
			const last = 1100
			w.runUntilFrame(t, last)
			prev := 0
			for _, f := range *reqs {
				if f-prev > 32 {
					t.Fatalf("ack requests at frames %d and %d: a gap of %d frames, more than 32 (all: %v)",
						prev, f, f-prev, *reqs)
				}
				prev = f
			}
			if last-prev > 32 {
				t.Fatalf("no ack request after frame %d (ran to %d): %v", prev, last, *reqs)
			}
		})
	}
}
