package session

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
)

// lan30 is a clean 30 ms round trip.
var lan30 = impair.Profile{Delay: 15 * time.Millisecond}

func started(ms ...*machine) func() bool {
	return func() bool {
		for _, m := range ms {
			if !m.s.Started() {
				return false
			}
		}
		return true
	}
}

// timingKeys is what every machine must agree on about its timing events:
// frame, decision frame, timing, frame rate and reason of each (S12, S15).
func timingKeys(m *machine) []string {
	var out []string
	for _, e := range of[*feed.TimingEvent](m) {
		out = append(out, fmt.Sprintf("f%d d%d %d/%d %dfps %s", e.Frame, e.Decided, e.SendPeriod, e.LookAhead, e.FPS, e.Reason))
	}
	return out
}

// prefixUpTo keeps the timing keys of events on frames every machine has
// executed.
func commonPrefix(lists ...[]string) int {
	n := len(lists[0])
	for _, l := range lists {
		n = min(n, len(l))
	}
	return n
}

// A host, two players and an observer form a session: every player links to
// every other machine, the observer to every player (T1); the host starts
// once three players are seated and everyone is ready, measurement starting
// over at that moment (T5); every player's links get measured; every machine
// executes the same timing events on the same frames; the observer is in no
// report.
func TestLobbyFullMeshStartAndMeasure_T1_T5(t *testing.T) {
	w := newWorld(t, 1, lan30)
	host := w.host("alice", Config{Players: 3, DropTimeout: 5 * time.Second})
	eve := w.join("eve", RoleObserver, host, Config{})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	all := []*machine{host, eve, bob, carol}

	if !w.runUntil(10*time.Second, started(all...)) {
		t.Fatalf("not all started: %v %v %v %v", host.s.Started(), eve.s.Started(), bob.s.Started(), carol.s.Started())
	}
	startedAt := w.now()
	// At the start no link has an estimate: measurement starts over (T5).
	for _, m := range all {
		for _, id := range m.linkPeers() {
			st, _ := m.s.endpoint().Stats(id)
			if st.Estimate == netcore.Measured {
				t.Errorf("%s: link to %d measured at the start (T5)", m.name, id)
			}
		}
	}
	if startedAt > 3*time.Second {
		t.Errorf("lobby took %v to start", startedAt)
	}
	// Full mesh: players link to all 3 others, the observer to the 3 players.
	for _, m := range []*machine{host, bob, carol} {
		if got := len(m.linkPeers()); got != 3 {
			t.Errorf("%s has %d links, want 3", m.name, got)
		}
	}
	if got := len(eve.linkPeers()); got != 3 {
		t.Errorf("observer has %d links, want 3 (one per player)", got)
	}
	// Every machine has the same roster in the same house order.
	want := []string{"alice", "eve", "bob", "carol"}
	for _, m := range all {
		var names []string
		for _, p := range m.s.View(w.now()).Players {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: roster %v, want %v", m.name, names, want)
		}
	}

	w.runFor(30 * time.Second)
	for _, m := range []*machine{host, bob, carol} {
		for _, ls := range m.s.Links() {
			if ls.State != "measured" {
				t.Errorf("%s → %s is %s after 30 s", ls.From, ls.To, ls.State)
			}
			if ls.SRTTMs == nil || *ls.SRTTMs < 29 || *ls.SRTTMs > 33 {
				t.Errorf("%s → %s SRTT %v, want ~30 ms", ls.From, ls.To, ls.SRTTMs)
			}
		}
	}
	keys := [][]string{timingKeys(host), timingKeys(bob), timingKeys(carol), timingKeys(eve)}
	if len(keys[0]) == 0 {
		t.Fatal("no timing event in 30 s")
	}
	n := commonPrefix(keys...)
	for i, k := range keys {
		if !slices.Equal(k[:n], keys[0][:n]) {
			t.Errorf("%s timing events differ:\n%v\n%v", all[[]int{0, 2, 3, 1}[i]].name, k, keys[0])
		}
	}
	for _, m := range all {
		for _, r := range of[*feed.ReportEvent](m) {
			if r.Player == "eve" {
				t.Fatalf("%s: the observer is in a report at frame %d", m.name, r.Frame)
			}
		}
		if len(of[*feed.ReportEvent](m)) == 0 {
			t.Errorf("%s saw no report", m.name)
		}
	}
	// Every machine executed the same commands: checksums agree.
	for f, ck := range host.cks {
		for _, m := range []*machine{bob, carol, eve} {
			if c, ok := m.cks[f]; ok && c != ck {
				t.Fatalf("desync at frame %d: %s %08x, alice %08x", f, m.name, c, ck)
			}
		}
	}
	if len(eve.cks) < 500 {
		t.Errorf("observer executed only %d frames", len(eve.cks))
	}
}

// Look-alike names are refused as taken: a Cyrillic
// `аlice` cannot sit beside the Latin `alice`; a fullwidth `Ｂｏｂ` is not a
// canonical name and never reaches the roster; the invisible filler is not a
// name at all.
func TestJoinRefusesLookAlikeName(t *testing.T) {
	w := newWorld(t, 3, lan30)
	host := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, host, Config{})
	w.runFor(2 * time.Second)
	fake := w.join("\u0430lice", RolePlayer, host, Config{}) // Cyrillic а
	if !w.runUntil(5*time.Second, func() bool { return fake.s.Done() }) {
		t.Fatal("look-alike still joining")
	}
	var re refusedError
	if !errors.As(fake.s.Err(), &re) || re.Reason != refuseNameTaken {
		t.Fatalf("err = %v, want name taken", fake.s.Err())
	}
	for _, n := range []string{"Bob", "BOB", "b\u043eb"} {
		if !host.s.nameTaken(n) {
			t.Errorf("%q not taken beside bob", n)
		}
	}
	if host.s.nameTaken("carol") {
		t.Error("carol taken")
	}
	for _, n := range []string{"\uff22\uff4f\uff42", "\u3164", "a\u202eb", "x\x1b[2J"} {
		if checkName(n) == nil {
			t.Errorf("%q accepted as a name on the wire", n)
		}
	}
	if bob.s.Done() || host.s.seated() != 2 {
		t.Fatal("the session was disturbed")
	}
}

// Names are unique in a session (case-insensitively); the refused joiner
// ends with the reason and the session is unaffected.
func TestJoinRefusesTakenName(t *testing.T) {
	w := newWorld(t, 2, lan30)
	host := w.host("alice", Config{Players: 3})
	bob := w.join("bob", RolePlayer, host, Config{})
	w.runFor(2 * time.Second)
	bob2 := w.join("BOB", RolePlayer, host, Config{})
	if !w.runUntil(5*time.Second, func() bool { return bob2.s.Done() }) {
		t.Fatal("second bob still joining")
	}
	var re refusedError
	if !errors.As(bob2.s.Err(), &re) || re.Reason != refuseNameTaken {
		t.Fatalf("err = %v, want name taken", bob2.s.Err())
	}
	if v := host.s.View(w.now()); v.Lobby == nil || v.Lobby.Seated != 2 {
		t.Fatalf("host lobby %+v, want 2 seated", v.Lobby)
	}
	if bob.s.Done() {
		t.Fatal("first bob was thrown out")
	}
}

// A seat count reached refuses more players; a started game refuses
// players (a watcher follows it: watch_test.go).
func TestJoinRefusesFullAndStarted(t *testing.T) {
	w := newWorld(t, 3, lan30)
	host := w.host("alice", Config{Players: 2})
	bob := w.join("bob", RolePlayer, host, Config{})
	if !w.runUntil(5*time.Second, started(host, bob)) {
		t.Fatal("did not start")
	}
	late := w.join("carol", RolePlayer, host, Config{})
	watcher := w.join("eve", RoleObserver, host, Config{})
	w.runUntil(5*time.Second, func() bool { return late.s.Done() && watcher.s.Started() })
	var re refusedError
	if !errors.As(late.s.Err(), &re) || re.Reason != netcore.RefuseStarted {
		t.Errorf("%s: err = %v, want game started", late.name, late.s.Err())
	}
	if watcher.s.Done() || !watcher.s.Started() {
		t.Errorf("late watcher: done %v (%v), started %v", watcher.s.Done(), watcher.s.Err(), watcher.s.Started())
	}
}

// A joiner whose host does not answer (nobody there, or another key) gives
// up with errNoAnswer after joinTimeout. (A joiner with no key at all is
// told so at once: TestKeyedHostRefusesAStrangerWithOneSmallAnswer.)
func TestJoinNoAnswer(t *testing.T) {
	for _, tc := range []struct {
		name            string
		hostKey, ourKey []byte
	}{
		{"nobody", nil, nil},
		{"wrong key", []byte("one key"), []byte("another key")},
		{"a key the open host lacks", nil, []byte("one key")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 4, lan30)
			var host *machine
			if tc.name == "nobody" {
				host = w.attach("nobody")
				host.h.Stop() // an address with no machine behind it
			} else {
				host = w.host("alice", Config{Key: tc.hostKey})
			}
			j := w.join("bob", RolePlayer, host, Config{Key: tc.ourKey})
			if !w.runUntil(joinTimeout+time.Second, func() bool { return j.s.Done() }) {
				t.Fatal("still trying")
			}
			if !errors.Is(j.s.Err(), errNoAnswer) {
				t.Fatalf("err = %v", j.s.Err())
			}
			if tc.name != "nobody" {
				if r := host.s.Rejected(); r.Auth == 0 {
					t.Fatalf("host rejected %+v, want auth failures counted", r)
				}
			}
		})
	}
}

// With the same pre-shared key everything is sealed and the session plays
// (Q7).
func TestSessionWithKey_Q7(t *testing.T) {
	w := newWorld(t, 5, lan30)
	key := []byte("correct horse battery staple")
	host := w.host("alice", Config{Players: 2, Key: key})
	bob := w.join("bob", RolePlayer, host, Config{Key: key})
	if !w.runUntil(5*time.Second, started(host, bob)) {
		t.Fatal("did not start with a key")
	}
	w.runFor(10 * time.Second)
	for _, m := range []*machine{host, bob} {
		ls := m.s.Links()
		if len(ls) != 1 || ls[0].State != "measured" {
			t.Fatalf("%s links %+v", m.name, ls)
		}
	}
}
