package session

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
)

// threeAndWatcher starts a running session: alice hosts, bob and carol play,
// eve watches.
func threeAndWatcher(t *testing.T, seed uint64, drop time.Duration) (w *world, alice, bob, carol, eve *machine) {
	t.Helper()
	w = newWorld(t, seed, lan30)
	alice = w.host("alice", Config{Players: 3, DropTimeout: drop})
	eve = w.join("eve", RoleObserver, alice, Config{})
	bob = w.join("bob", RolePlayer, alice, Config{})
	carol = w.join("carol", RolePlayer, alice, Config{})
	if !w.runUntil(10*time.Second, started(alice, bob, carol, eve)) {
		t.Fatal("session did not start")
	}
	w.runFor(10 * time.Second)
	return
}

func removedAt(m *machine, player string) (int, bool) {
	for _, e := range of[*feed.RemovedEvent](m) {
		if e.Player == player {
			return e.Frame, true
		}
	}
	return 0, false
}

func mastersOf(m *machine) []string {
	var out []string
	for _, e := range of[*feed.MasterEvent](m) {
		out = append(out, e.Player)
	}
	return out
}

func hasMessage(m *machine, text string) bool {
	return slices.ContainsFunc(m.messages(), func(s string) bool { return strings.Contains(s, text) })
}

// A player that vanishes (SIGKILL: no removal, no goodbye): the others see
// the connection go bad (T11), the master removes it after the drop timeout,
// everyone executes the removal on the same frame, and the game goes on.
// Then the host (the master) vanishes: the next player in house order takes
// over (S16) and keeps playing.
func TestVanishedPlayersRemovedAndMasterHandedOn_T11_S16(t *testing.T) {
	const drop = 6 * time.Second
	w, alice, bob, carol, eve := threeAndWatcher(t, 11, drop)

	carol.vanish()
	gone := w.now()
	if !w.runUntil(drop+5*time.Second, func() bool {
		_, a := removedAt(alice, "carol")
		_, b := removedAt(bob, "carol")
		_, e := removedAt(eve, "carol")
		return a && b && e
	}) {
		t.Fatalf("carol not removed everywhere %v after she vanished", w.now()-gone)
	}
	if took := w.now() - gone; took < drop {
		t.Fatalf("removed after %v, before the drop timeout %v", took, drop)
	}
	fa, _ := removedAt(alice, "carol")
	fb, _ := removedAt(bob, "carol")
	fe, _ := removedAt(eve, "carol")
	if fa != fb || fa != fe {
		t.Fatalf("removal on frames %d, %d, %d", fa, fb, fe)
	}
	for _, m := range []*machine{alice, bob} {
		if !hasMessage(m, "Connection to carol has gone bad") {
			t.Errorf("%s never said the connection to carol went bad: %v", m.name, m.messages())
		}
	}
	before := bob.s.Frame()
	w.runFor(5 * time.Second)
	if adv := bob.s.Frame() - before; adv < 140 {
		t.Fatalf("bob advanced %d frames in 5 s after the removal", adv)
	}

	alice.vanish()
	gone = w.now()
	if !w.runUntil(drop+5*time.Second, func() bool {
		_, b := removedAt(bob, "alice")
		_, e := removedAt(eve, "alice")
		return b && e
	}) {
		t.Fatal("the host was not removed")
	}
	if got := mastersOf(bob); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("bob's masters %v, want alice then bob", got)
	}
	if got := mastersOf(eve); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("observer's masters %v", got)
	}
	before = bob.s.Frame()
	w.runFor(5 * time.Second)
	if adv := bob.s.Frame() - before; adv < 140 {
		t.Fatalf("bob advanced %d frames in 5 s as the new master", adv)
	}
	for f, ck := range bob.cks {
		if c, ok := eve.cks[f]; ok && c != ck {
			t.Fatalf("desync at frame %d", f)
		}
	}
}

// A player that quits (Ctrl-C) issues its own removal (S7): every machine
// executes it on the same frame and the quitter ends cleanly once its last
// datagrams are acked.
func TestPlayerQuitsCleanly_S7(t *testing.T) {
	w, alice, bob, carol, eve := threeAndWatcher(t, 12, 60*time.Second)
	bob.quit()
	if !w.runUntil(quitLimit, func() bool { return bob.s.Done() }) {
		t.Fatal("bob still quitting")
	}
	if bob.s.Err() != nil {
		t.Fatalf("quit ended with %v", bob.s.Err())
	}
	w.runFor(time.Second)
	frames := map[string]int{}
	for _, m := range []*machine{alice, bob, carol, eve} {
		f, ok := removedAt(m, "bob")
		if !ok {
			t.Fatalf("%s never executed bob's removal", m.name)
		}
		frames[m.name] = f
	}
	if frames["alice"] != frames["bob"] || frames["carol"] != frames["bob"] || frames["eve"] != frames["bob"] {
		t.Fatalf("removal frames %v", frames)
	}
	if got := len(alice.s.Links()); got != 2 {
		t.Fatalf("alice keeps %d links after bob left, want 2", got)
	}
}

// An observer that quits says so and every player forgets it; one that
// vanishes is forgotten after the drop timeout. Neither is ever removed by
// an event: it never had a seat.
func TestObserverLeavesOrVanishes(t *testing.T) {
	w, alice, bob, _, eve := threeAndWatcher(t, 13, 4*time.Second)
	eve.quit()
	if !w.runUntil(quitLimit, func() bool { return eve.s.Done() }) {
		t.Fatal("observer still quitting")
	}
	w.runFor(time.Second)
	for _, m := range []*machine{alice, bob} {
		if !hasMessage(m, "eve stopped watching") || len(m.s.Links()) != 2 {
			t.Fatalf("%s: messages %v, links %d", m.name, m.messages(), len(m.s.Links()))
		}
		if _, ok := removedAt(m, "eve"); ok {
			t.Fatal("an observer was removed by an event")
		}
	}

	w2, alice2, _, _, eve2 := threeAndWatcher(t, 14, 4*time.Second)
	eve2.vanish()
	w2.runFor(6 * time.Second)
	if !hasMessage(alice2, "eve went silent") || len(alice2.s.Links()) != 2 {
		t.Fatalf("silent observer not forgotten: %v", alice2.messages())
	}
}

// In the lobby: a joiner that leaves is taken off the roster, one that
// goes silent too, and when the host leaves the others are told.
func TestLobbyLeavesAndSilence(t *testing.T) {
	w := newWorld(t, 15, lan30)
	alice := w.host("alice", Config{Players: 4})
	bob := w.join("bob", RolePlayer, alice, Config{})
	carol := w.join("carol", RolePlayer, alice, Config{})
	w.runFor(2 * time.Second)
	if v := alice.s.View(w.now()).Lobby; alice.s.Started() || v == nil || v.Seated != 3 || v.Need != 4 {
		t.Fatalf("with 3 of 4 seated: started %v, lobby %+v", alice.s.Started(), v)
	}
	dave := w.join("dave", RolePlayer, alice, Config{})
	if !w.runUntil(2*time.Second, started(alice, bob, carol, dave)) {
		t.Fatal("did not start with four")
	}

	w = newWorld(t, 16, lan30)
	alice = w.host("alice", Config{Players: 4})
	bob = w.join("bob", RolePlayer, alice, Config{})
	carol = w.join("carol", RolePlayer, alice, Config{})
	w.runFor(2 * time.Second)
	bob.quit()
	w.runUntil(3*time.Second, func() bool { return bob.s.Done() })
	if bob.s.Err() != nil {
		t.Fatalf("bob's lobby quit: %v", bob.s.Err())
	}
	w.runFor(2 * time.Second)
	last := func(m *machine) []string {
		r := of[*feed.RosterEvent](m)
		return r[len(r)-1].Players
	}
	if got := last(carol); !slices.Equal(got, []string{"alice", "carol"}) {
		t.Fatalf("carol's roster after bob left: %v", got)
	}
	carol.vanish()
	w.runFor(maxLobbySilence + 2*time.Second)
	if got := last(alice); !slices.Equal(got, []string{"alice"}) {
		t.Fatalf("host's roster after carol went silent: %v", got)
	}
	dave = w.join("dave", RolePlayer, alice, Config{})
	w.runFor(2 * time.Second)
	alice.quit()
	w.runUntil(5*time.Second, func() bool { return alice.s.Done() && dave.s.Done() })
	if alice.s.Err() != nil || !errors.Is(dave.s.Err(), errHostLeft) {
		t.Fatalf("host quit: %v; dave: %v", alice.s.Err(), dave.s.Err())
	}
}

// The Start can be lost: a machine that has not started holds the frame
// packets that reach it and plays them once the repeated Start arrives, so
// nobody desyncs (T5, Q6).
func TestLostStartIsRepeatedAndHeldPacketsPlayed_T5(t *testing.T) {
	w := newWorld(t, 17, lan30)
	alice := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, alice, Config{})
	carol := w.join("carol", RolePlayer, alice, Config{})
	if !w.runUntil(5*time.Second, func() bool {
		return alice.s.seated() == 3 && bob.s.version == alice.s.version && carol.s.version == alice.s.version
	}) {
		t.Fatal("lobby did not fill")
	}
	// Everything from alice to bob is lost for two seconds around the start.
	w.net.SetPath(alice.addr, bob.addr, impair.Profile{Delay: 15 * time.Millisecond, Loss: 1})
	w.at(w.now()+2*time.Second, func() { w.net.SetPath(alice.addr, bob.addr, lan30) })
	maxHeld := 0
	for w.now() < 2*time.Second+w.now() && !bob.s.Started() {
		if !w.sched.Step() {
			break
		}
		maxHeld = max(maxHeld, len(bob.s.buffered))
	}
	if !w.runUntil(5*time.Second, started(alice, bob, carol)) {
		t.Fatal("bob never started")
	}
	if !alice.s.Started() || maxHeld == 0 {
		t.Fatalf("alice started %v; bob held %d packets before his start", alice.s.Started(), maxHeld)
	}
	w.runFor(15 * time.Second)
	for f, ck := range alice.cks {
		for _, m := range []*machine{bob, carol} {
			if c, ok := m.cks[f]; ok && c != ck {
				t.Fatalf("desync at frame %d on %s", f, m.name)
			}
		}
	}
	for _, m := range []*machine{alice, bob, carol} {
		if len(of[*feed.RemovedEvent](m)) != 0 {
			t.Fatalf("%s removed someone", m.name)
		}
		if hasMessage(m, "Desync") {
			t.Fatalf("%s: %v", m.name, m.messages())
		}
	}
	if bob.s.Frame() < 400 {
		t.Fatalf("bob at frame %d after 15 s", bob.s.Frame())
	}
}
