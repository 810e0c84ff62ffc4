package session

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// The feed survives the host (S16): a late watcher attaches, the host
// leaves cleanly 10 s later, the new master feeds the watcher in its
// place, and the watcher's frame, timing and master keep following the
// players'; its timing events are the players' own.
func TestLateWatcherFeedSurvivesTheHost_S16(t *testing.T) {
	w := newWorld(t, 21, lan30)
	host := w.host("alice", Config{Players: 3, DropTimeout: 5 * time.Second})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	if !w.runUntil(10*time.Second, started(host, bob, carol)) {
		t.Fatal("the game did not start")
	}
	w.runFor(10 * time.Second)
	eve := w.join("eve", RoleObserver, host, Config{})
	if !w.runUntil(5*time.Second, func() bool { p := eve.s.Peer(); return p != nil && p.Spectator() }) {
		t.Fatal("eve does not follow the game")
	}
	w.runFor(10 * time.Second)
	host.s.Quit(w.now())
	w.after(host)
	if !w.runUntil(10*time.Second, func() bool { return host.s.Done() }) {
		t.Fatal("the host did not leave")
	}
	leftAt := bob.s.Peer().View(w.now()).Frame
	w.runFor(20 * time.Second)

	if eve.s.Done() {
		t.Fatalf("eve stopped: %v", eve.s.Err())
	}
	ev, bv := eve.s.Peer().View(w.now()), bob.s.Peer().View(w.now())
	if ev.Master != "bob" || bv.Master != "bob" {
		t.Errorf("master: eve shows %q, bob %q; want bob, the first seated after alice", ev.Master, bv.Master)
	}
	if ev.Frame <= leftAt+300 || bv.Frame-ev.Frame > 2*bv.FPS || bv.Frame < ev.Frame {
		t.Errorf("eve at frame %d, bob at %d, the host left at %d: eve does not keep up", ev.Frame, bv.Frame, leftAt)
	}
	if ev.InForce != bv.InForce || ev.Target != bv.Target {
		t.Errorf("eve shows %v → %v, bob %v → %v", ev.InForce, ev.Target, bv.InForce, bv.Target)
	}
	// Every timing event bob executed after eve attached, eve printed the
	// same (decided frame, timing), and nothing twice.
	type key struct{ decided, sp, la int }
	timings := func(m *machine) map[key]int {
		out := map[key]int{}
		for _, e := range m.events {
			if te, ok := e.(*feed.TimingEvent); ok {
				out[key{te.Decided, te.SendPeriod, te.LookAhead}]++
			}
		}
		return out
	}
	eveT, bobT := timings(eve), timings(bob)
	for k, n := range eveT {
		if n != 1 {
			t.Errorf("eve printed timing %+v %d times", k, n)
		}
		if bobT[k] == 0 {
			t.Errorf("eve printed timing %+v that bob never executed", k)
		}
	}
	feeding := false
	for _, e := range bob.events {
		if m, ok := e.(*feed.MasterEvent); ok && m.Player == "bob" {
			feeding = true
		}
	}
	if !feeding || !bob.s.watch.feeding {
		t.Errorf("bob became master %v, feeds the watchers %v", feeding, bob.s.watch.feeding)
	}
}

// onlyTo is a transport that sends only to one address: a machine whose
// datagrams reach the host and nobody else, so its pairs go through the
// host's relay.
type onlyTo struct {
	netcore.Transport
	to netip.AddrPort
}

func (o onlyTo) Send(to netip.AddrPort, p []byte) error {
	if to != o.to {
		return nil
	}
	return o.Transport.Send(to, p)
}

// A late watcher that reaches the players only through the host's relay
// cannot be fed once the host is gone: it says so and stops, after the
// drop timeout and feedGrace without an update.
func TestRelayedLateWatcherSaysTheFeedIsLost_S16(t *testing.T) {
	w := newWorld(t, 22, lan30)
	host := w.host("alice", Config{Players: 3, DropTimeout: 5 * time.Second})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	if !w.runUntil(10*time.Second, started(host, bob, carol)) {
		t.Fatal("the game did not start")
	}
	w.runFor(5 * time.Second)
	eve := w.attach("eve")
	eve.tr = &simworld.Recorder{Inner: onlyTo{Transport: eve.h.Node(), to: host.addr}}
	s, err := NewJoiner(w.config(eve, Config{}), RoleObserver, eve.tr, host.addr)
	if err != nil {
		t.Fatal(err)
	}
	w.start(eve, s)
	if !w.runUntil(10*time.Second, func() bool { p := eve.s.Peer(); return p != nil && p.Spectator() }) {
		t.Fatal("eve does not follow the game")
	}
	w.runFor(10 * time.Second)
	host.s.Quit(w.now())
	w.after(host)
	if !w.runUntil(40*time.Second, func() bool { return eve.s.Done() }) {
		t.Fatal("eve goes on without a feed")
	}
	if !errors.Is(eve.s.Err(), errFeedLost) {
		t.Fatalf("eve stopped with %v, want the feed lost", eve.s.Err())
	}
	if bob.s.Done() || carol.s.Done() {
		t.Fatal("the players stopped")
	}
}
