package probe

import (
	"testing"
	"time"
)

// The session time of a frame: frames at the rate in force, a rate change
// taking effect from the frame after the one that changed it, and a frame
// before every anchor timed back from the first at its rate.
func TestGameClockFramesAtTheRatesInForce_S15(t *testing.T) {
	var c gameClock
	if _, ok := c.at(10); ok {
		t.Fatal("an empty clock knows a time")
	}
	c.mark(0, 0, 30)
	c.rate(300, 30) // the same rate: nothing new
	if len(c.anchors) != 1 {
		t.Fatalf("a rate that did not change added an anchor: %v", c.anchors)
	}
	c.rate(300, 60) // frame 300 at 10 s; from it on 60 fps
	for _, x := range []struct {
		f    int
		want time.Duration
	}{
		{0, 0}, {30, time.Second}, {300, 10 * time.Second}, {301, 10*time.Second + time.Second/60}, {360, 11 * time.Second},
	} {
		if got, _ := c.at(x.f); got != x.want {
			t.Errorf("frame %d at %v, want %v", x.f, got, x.want)
		}
	}
	// A spectator's clock: anchors handed in any order, the earliest
	// known frame timed back from the first anchor.
	var s gameClock
	s.mark(600, 20*time.Second, 30)
	s.mark(450, 15*time.Second, 30)
	if got, _ := s.at(420); got != 14*time.Second {
		t.Errorf("frame 420 before the anchors at %v, want 14s", got)
	}
	if got, _ := s.at(0); got != 0 {
		t.Errorf("frame 0 at %v, want 0 (never negative)", got)
	}
	if got, _ := s.at(630); got != 21*time.Second {
		t.Errorf("frame 630 at %v, want 21s", got)
	}
	for i := range 2 * maxGameAnchors {
		s.mark(1000+i, time.Duration(i)*time.Second, 30+i%2)
	}
	if len(s.anchors) != maxGameAnchors {
		t.Errorf("%d anchors kept, want %d", len(s.anchors), maxGameAnchors)
	}
}
