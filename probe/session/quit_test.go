package session

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// A quit ends as soon as the removal is through and acked, never on a fixed
// multi-second linger: on a LAN well under 500 ms, on a 200 ms
// round trip within about three round trips after the removal executed —
// the master's last quit too, whose final frame packet the remaining player
// never acks (it drops the link as it executes the removal).
func TestQuitEndsWithinRoundTrips_S7(t *testing.T) {
	for _, c := range []struct {
		oneWay time.Duration
		limit  time.Duration
	}{
		{250 * time.Microsecond, 500 * time.Millisecond},
		{15 * time.Millisecond, 500 * time.Millisecond},
		{100 * time.Millisecond, 300*time.Millisecond + 3*200*time.Millisecond},
	} {
		w, alice, bob, carol := threePlaying(t, 61, c.oneWay)
		for _, m := range []*machine{bob, alice} {
			t0 := w.now()
			m.quit()
			if !w.runUntil(quitLimit, func() bool { return m.s.Done() }) {
				t.Fatalf("%v: %s still quitting", c.oneWay, m.name)
			}
			took := w.now() - t0
			if took > c.limit || m.s.Err() != nil {
				t.Errorf("%v one way: %s's quit took %v (limit %v), err %v", c.oneWay, m.name, took, c.limit, m.s.Err())
			}
		}
		w.runFor(time.Second)
		// The removals went through: carol plays on alone, the others gone.
		if _, ok := removedAt(carol, "alice"); !ok || carol.s.Done() {
			t.Fatalf("%v: carol did not see alice's removal", c.oneWay)
		}
	}
}

// A quitter's removal that one peer misses, its first send and first
// retransmission lost on the way there, still reaches it: the quitter
// keeps its link running (acks in, retransmissions out) after the removal
// executed on its own frames, until every peer has acked the removal or
// quitLinger passes. Otherwise that peer waits for the quitter's commands
// of the removal's frame for ever, and the others, having executed the
// removal, wait for it (S7).
func TestQuitWaitsForEveryPeerToHaveTheRemoval_S7(t *testing.T) {
	for _, block := range []time.Duration{250 * time.Millisecond, 600 * time.Millisecond} {
		w, alice, bob, carol := threePlaying(t, 62, 15*time.Millisecond)
		// Everything bob sends carol is lost for block from the quit on.
		w.net.SetPath(bob.addr, carol.addr, impair.Profile{Delay: 15 * time.Millisecond, Loss: 1})
		t0 := w.now()
		w.at(t0+block, func() { w.net.SetPath(bob.addr, carol.addr, impair.Profile{Delay: 15 * time.Millisecond}) })
		bob.quit()
		if !w.runUntil(quitLimit, func() bool { return bob.s.Done() }) {
			t.Fatalf("block %v: bob still quitting", block)
		}
		took := w.now() - t0
		w.runFor(2 * time.Second)
		fa, okA := removedAt(alice, "bob")
		fc, okC := removedAt(carol, "bob")
		if !okA || !okC || fa != fc {
			t.Fatalf("block %v: bob's quit took %v; alice executed his removal %v at frame %d, carol %v at %d: want both, on one frame", block, took, okA, fa, okC, fc)
		}
		t.Logf("block %v: bob's quit took %v; his removal executed at frame %d", block, took, fa)
		if took > quitLinger+block {
			t.Errorf("block %v: bob's quit took %v, want within quitLinger", block, took)
		}
		// The game goes on without him on both.
		a0, c0 := alice.s.Frame(), carol.s.Frame()
		w.runFor(3 * time.Second)
		if alice.s.Frame()-a0 < 80 || carol.s.Frame()-c0 < 80 {
			t.Errorf("block %v: in 3 s after bob left alice ran %d frames, carol %d: want the game going on", block, alice.s.Frame()-a0, carol.s.Frame()-c0)
		}
	}
}

// threePlaying starts alice's game of three with bob and carol, every
// path oneWay long, and plays it for 10 s.
func threePlaying(t *testing.T, seed uint64, oneWay time.Duration) (w *world, alice, bob, carol *machine) {
	t.Helper()
	w = newWorld(t, seed, impair.Profile{Delay: oneWay})
	alice = w.host("alice", Config{Players: 3})
	bob = w.join("bob", RolePlayer, alice, Config{})
	carol = w.join("carol", RolePlayer, alice, Config{})
	if !w.runUntil(5*time.Second, started(alice, bob, carol)) {
		t.Fatal("no start")
	}
	w.runFor(10 * time.Second)
	return w, alice, bob, carol
}
