package session

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// costClock is a FrameClock whose every reading is cost later than the
// last: the peer reads it twice per frame, so each frame's work measures
// cost — a machine that is slow on purpose, in virtual time.
func costClock(cost time.Duration) func() time.Duration {
	var t time.Duration
	return func() time.Duration { t += cost; return t }
}

// A live peer measures its own processing time per frame through its
// FrameClock and reports it (S5); the master caps the frame rate by the
// slowest player's (S15): bob at 50 ms a frame brings a 30 fps session to
// 20 fps, and every report of bob's says 50 ms, everyone else's 0.
func TestMeasuredProcessTimeCapsFrameRate_S5_S15(t *testing.T) {
	w := newWorld(t, 51, lan30)
	alice := w.host("alice", Config{Players: 3, FrameClock: costClock(0)})
	bob := w.join("bob", RolePlayer, alice, Config{FrameClock: costClock(50 * time.Millisecond)})
	carol := w.join("carol", RolePlayer, alice, Config{})
	if !w.runUntil(5*time.Second, started(alice, bob, carol)) {
		t.Fatal("no start")
	}
	w.runFor(30 * time.Second)
	reports := 0
	for _, e := range of[*feed.ReportEvent](alice) {
		want := 0.0
		if e.Player == "bob" {
			want = 50
			reports++
		}
		if e.ProcessMs != want {
			t.Fatalf("%s reported process_ms %v, want %v", e.Player, e.ProcessMs, want)
		}
	}
	if reports < 2 {
		t.Fatalf("%d reports from bob", reports)
	}
	timings := of[*feed.TimingEvent](alice)
	if len(timings) == 0 || timings[len(timings)-1].FPS != 20 {
		t.Fatalf("timing events %+v: want the last at 20 fps", timings)
	}
	// The machines pace to it: 30 s at 20 fps, not 30.
	f0 := alice.s.Frame()
	w.runFor(10 * time.Second)
	if n := alice.s.Frame() - f0; n < 190 || n > 210 {
		t.Fatalf("%d frames in 10 s, want about 200", n)
	}
}
