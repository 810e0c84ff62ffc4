package session

import (
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// The session time of a frame is the same on every machine and on a
// watcher that arrives late: the players time frames at the rates in force
// (the host slows the game to 20 fps after the watcher came), and the
// watcher takes the host's times — for the frames it follows, and for the
// earlier messages its snapshot brings, which keep their own times rather
// than the time they reached it (S15).
func TestSessionTimeIsOneClock_S15(t *testing.T) {
	w := newWorld(t, 5, lan30)
	host := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	players := []*machine{host, bob, carol}
	if !w.runUntil(10*time.Second, started(players...)) {
		t.Fatal("the game did not start")
	}
	w.runFor(12 * time.Second)
	eve := w.join("eve", RoleObserver, host, Config{})
	if !w.runUntil(5*time.Second, func() bool { return eve.s.Peer() != nil && eve.s.Peer().Spectator() }) {
		t.Fatal("eve did not attach")
	}
	attach := eve.s.Peer().Frame()
	host.s.SetSpeed(20)
	w.after(host)
	w.runFor(5 * time.Second)
	// Another watcher: its snapshot brings the host's line about eve.
	zed := w.join("zed", RoleObserver, host, Config{})
	w.runFor(10 * time.Second)
	if zed.s.Peer() == nil {
		t.Fatal("zed did not attach")
	}

	hv := host.s.Peer().View(w.now())
	if hv.FPS != 20 {
		t.Fatalf("the host runs at %d fps, want 20", hv.FPS)
	}
	ev := eve.s.Peer().View(w.now())
	last := ev.Frame
	for _, m := range players {
		last = min(last, m.s.Peer().Frame())
	}
	checked := 0
	for f := attach; f <= last; f++ {
		want, ok := host.s.GameAt(f)
		if !ok {
			t.Fatalf("the host has no session time for frame %d", f)
		}
		for _, m := range append(players[1:], eve, zed) {
			// A watcher times frames from the host's time of a later
			// frame: a nanosecond of rounding apart at most.
			if got, _ := m.s.GameAt(f); (got - want).Abs() > time.Microsecond {
				t.Fatalf("frame %d: %s says %v, the host %v", f, m.name, got, want)
			}
		}
		checked++
	}
	// The rate change is in it: after 20 fps came in, frames are 50 ms apart.
	a, _ := host.s.GameAt(last - 20)
	b, _ := host.s.GameAt(last)
	if b-a != time.Second {
		t.Errorf("20 frames at 20 fps took %v of session time", b-a)
	}
	if g, _ := eve.s.GameAt(ev.Frame); ev.Game != g || ev.Game == 0 {
		t.Errorf("eve's View at frame %d shows %v, its clock says %v (host's View %v)", ev.Frame, ev.Game, g, hv.Game)
	}
	// The snapshot's earlier messages keep their own times: the host's
	// line about eve at the host's time of its frame, the lobby's lines
	// none (they came before the game).
	early, lobby := 0, 0
	for _, e := range of[*feed.MessageEvent](zed) {
		switch {
		case strings.HasPrefix(e.Text, "eve is watching"):
			early++
			want, _ := host.s.GameAt(e.Frame)
			if e.GameMs == nil || (units.FromMillis(*e.GameMs)-want).Abs() > time.Microsecond || e.Frame == 0 {
				t.Errorf("zed's earlier line %q (frame %d) at %v ms, the host's time %v", e.Text, e.Frame, e.GameMs, want)
			}
		case strings.Contains(e.Text, "joined ("):
			lobby++
			if !e.Pregame || e.GameMs != nil {
				t.Errorf("zed's lobby line %q has a session time (%v, pregame %v)", e.Text, e.GameMs, e.Pregame)
			}
		}
	}
	t.Logf("frames %d to %d agree on 5 machines; %d earlier line keeps its time, %d lobby lines have none", attach, last, early, lobby)
	if checked < 250 || early != 1 || lobby == 0 {
		t.Errorf("checked %d frames, %d earlier lines and %d lobby lines", checked, early, lobby)
	}
}
