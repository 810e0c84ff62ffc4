package probe

import (
	"testing"
	"time"
)

// TestNextFrameDue_S15: machines pace frames to the rate. A frame run on
// time or a little late keeps the schedule (the lateness does not add up
// from frame to frame); after a stall, or a whole step behind, the
// schedule restarts from now without racing to make up lost frames.
func TestNextFrameDue_S15(t *testing.T) {
	const ms = time.Millisecond
	step := time.Second / 30
	for _, c := range []struct {
		name           string
		due, now, wait time.Duration
		want           time.Duration
	}{
		{"on time", 100 * ms, 100 * ms, 0, 100*ms + step},
		{"woken 1 ms late keeps the schedule", 100 * ms, 101 * ms, 0, 100*ms + step},
		{"late by just under a step", 100 * ms, 100*ms + step - 1, 0, 100*ms + step},
		{"a whole step behind restarts", 100 * ms, 100*ms + step, 0, 100*ms + 2*step},
		{"after a stall restarts from now", 100 * ms, 110 * ms, 10 * ms, 110*ms + step},
		{"a first frame long after the start restarts", 0, 5 * time.Second, 0, 5*time.Second + step},
	} {
		if got := nextFrameDue(c.due, c.now, step, c.wait); got != c.want {
			t.Errorf("%s: nextFrameDue(%v, %v, %v, %v) = %v, want %v", c.name, c.due, c.now, step, c.wait, got, c.want)
		}
	}
	// Over 300 frames each woken 1 ms late, the frames keep 30 fps: the
	// 300th is due 300 steps after the first, not 300 ms later.
	due := time.Duration(0)
	for range 300 {
		due = nextFrameDue(due, due+ms, step, 0)
	}
	if due != 300*step {
		t.Errorf("after 300 frames woken 1 ms late the next is due at %v, want %v", due, 300*step)
	}
}
