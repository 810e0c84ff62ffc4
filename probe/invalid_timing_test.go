package probe

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// invalidTimingRun is a session of three players in which the master
// issues one timing event of its own for target sp/la on frame 200, beside
// the events its evaluations send, and the session runs to frame 600.
type invalidTimingRun struct {
	w         *truthWorld
	cks       []map[int]uint32 // per machine: frame → checksum
	refusedAt [][]int          // per machine: the frames its implausible count grew on
}

// marker is the issued event's decided frame, which no evaluation sends.
const marker = 1 << 20

func runMasterTiming(t *testing.T, sp, la uint16) *invalidTimingRun {
	t.Helper()
	const players = 3
	r := &invalidTimingRun{cks: make([]map[int]uint32, players), refusedAt: make([][]int, players)}
	issued := false
	r.w = newTruthWorld(t, players, impair.Profile{Delay: 20 * time.Millisecond}, func(i int, c *Config) {
		c.CommandsPerMinute = 600
		r.cks[i] = map[int]uint32{}
		var counted uint64
		c.OnFrame = func(f int, ck uint32) {
			r.cks[i][f] = ck
			p := r.w.ms[i].peer
			if n := p.Implausible(); n != counted {
				r.refusedAt[i] = append(r.refusedAt[i], f)
				counted = n
			}
			if i == 0 && f == 200 && !issued {
				if p.masterP != p.self {
					t.Fatalf("p1 is not the master on frame %d", f)
				}
				issued = true
				p.issue(cmdTiming, timingPayload{Decided: marker, SendPeriod: sp, LookAhead: la, FPS: 30, Reason: uint8(rungs.Worse)}.bytes())
			}
		}
	})
	r.w.start()
	r.w.runUntilFrame(t, 600)
	if !issued {
		t.Fatal("the master never issued the event")
	}
	return r
}

// inStep fails unless every machine executed frames 0…600 with the same
// checksums and none published a desync.
func (r *invalidTimingRun) inStep(t *testing.T) {
	t.Helper()
	for f := 0; f <= 600; f++ {
		want, ok := r.cks[0][f]
		if !ok {
			t.Fatalf("p1 never executed frame %d", f)
		}
		for i := range r.cks {
			if got, ok := r.cks[i][f]; !ok || got != want {
				t.Fatalf("frame %d: p%d's checksum %08x (executed %v), p1's %08x", f, i+1, got, ok, want)
			}
		}
	}
	for i, evs := range r.w.events {
		for _, e := range evs {
			if m, ok := e.(*feed.MessageEvent); ok && m.Kind == feed.MessageDesync {
				t.Fatalf("p%d published %q", i+1, m.Text)
			}
		}
	}
}

// executedAt is the frame machine i executed the issued event on, or -1.
func (r *invalidTimingRun) executedAt(i int) int {
	at := -1
	for _, e := range r.w.events[i] {
		if te, ok := e.(*feed.TimingEvent); ok && te.Decided == marker {
			at = te.Frame
		}
	}
	return at
}

// A timing event from the master whose target is not a valid timing — a
// look-ahead that is not whole send periods, below its rung's, past 250, a
// send period outside 1..10 — is refused on every machine, the master's
// own included, on the same frame: counted once on each, never executed
// (no timing event, the timing unchanged), left out of every checksum, so
// the machines stay in step.
func TestMasterInvalidTimingRefused_S12(t *testing.T) {
	for _, tc := range []struct{ sp, la uint16 }{
		{0, 0}, {3, 7}, {3, 10}, {3, 3}, {1, 1}, {1, 3}, {5, 10}, {10, 35}, {10, 260}, {11, 33}, {0xffff, 4},
	} {
		name := fmt.Sprintf("%d/%d", int16(tc.sp), tc.la)
		t.Run(name, func(t *testing.T) {
			r := runMasterTiming(t, tc.sp, tc.la)
			r.inStep(t)
			t.Logf("refused on frames %v", r.refusedAt)
			for i, m := range r.w.ms {
				if n := m.peer.Implausible(); n != 1 {
					t.Errorf("p%d counted %d implausible, want 1", i+1, n)
				}
				if len(r.refusedAt[i]) != 1 || r.refusedAt[i][0] <= 200 {
					t.Errorf("p%d refused on frames %v, want one frame after 200", i+1, r.refusedAt[i])
				} else if !slices.Equal(r.refusedAt[i], r.refusedAt[0]) {
					t.Errorf("p%d refused on frame %v, p1 on %v", i+1, r.refusedAt[i], r.refusedAt[0])
				}
				if at := r.executedAt(i); at >= 0 {
					t.Errorf("p%d executed %s on frame %d", i+1, name, at)
				}
				if in := m.peer.sched.Target(); !in.Valid() {
					t.Errorf("p%d's target is %v", i+1, in)
				}
			}
		})
	}
}

// The same event with a valid target executes on every machine on the
// same frame, and nothing is refused: the run above refuses for the
// target's sake alone.
func TestMasterValidTimingExecutes_S12(t *testing.T) {
	r := runMasterTiming(t, 10, 250)
	r.inStep(t)
	at := r.executedAt(0)
	t.Logf("executed on frame %d", at)
	for i, m := range r.w.ms {
		if n := m.peer.Implausible(); n != 0 {
			t.Errorf("p%d counted %d implausible, want 0", i+1, n)
		}
		if got := r.executedAt(i); got <= 200 || got != at {
			t.Errorf("p%d executed 10/250 on frame %d, p1 on %d", i+1, got, at)
		}
	}
}
