package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, js string) *Scenario {
	t.Helper()
	sc, err := ParseScenario(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The run begins at the handshake: every joiner goes through
// Hello, Challenge, Response and Welcome (two round trips) one after
// another, then the roster and the lobby's pings, before the host starts
// the game (T5). So the lobby takes at least two round trips per joiner;
// the scenario's order of players is the house order, so the first is the
// master and, when it leaves, the second takes over (S16), whatever their
// names; the observer, slow to reach the host, is still in the game from
// its start: the host waits for it.
func TestWholeSessionFromTheHandshake_T5_S16(t *testing.T) {
	sc := parse(t, `{"fps": 30, "frames": 600, "seed": 5, "commands_per_minute": 120,
	  "players": ["zed", "carol", "alice"], "observers": ["bob"],
	  "network": {"rtt_ms": 100}, "links": [{"between": ["zed", "bob"], "rtt_ms": 1000}],
	  "timeline": [{"at_frame": 200, "remove": "zed"}]}`)
	r := runScenario(t, sc)
	if min := 3 * 2 * 100 * time.Millisecond; r.res.Lobby < min {
		t.Fatalf("the lobby took %v, want at least %v (two round trips for each of 3 joiners)", r.res.Lobby, min)
	}
	masters := r.of("master")
	if len(masters) != 2 || masters[0].str("player") != "zed" || masters[1].str("player") != "carol" {
		t.Fatalf("masters %v, want zed then carol (house order is the scenario's)", masters)
	}
	if len(r.res.Peers) != 4 {
		t.Fatalf("%d machines in the game, want 4", len(r.res.Peers))
	}
	for _, p := range r.res.Peers {
		if p.Observer() != (p.View(0).Self == "bob") {
			t.Errorf("%s: observer %v", p.View(0).Self, p.Observer())
		}
	}
	// The observer executed the game from its first frames.
	if f := r.cks["bob"]; len(f) < 500 {
		t.Fatalf("the observer executed %d frames", len(f))
	}
}

// at_ms counts from the game's start, not from the run's: a removal at
// 1000 ms lands a second into the game even when the lobby itself took
// longer than that, and the hooks get the same clock.
func TestAtMsCountsFromTheGameStart(t *testing.T) {
	sc := parse(t, `{"fps": 30, "frames": 300, "seed": 9,
	  "players": ["alice", "bob", "carol"],
	  "network": {"rtt_ms": 400},
	  "timeline": [{"at_ms": 1000, "remove": "carol"}]}`)
	var removedAt time.Duration = -1
	var first time.Duration = -1
	var buf bytes.Buffer
	res, err := RunWith(sc, &buf, Options{OnLine: func(at time.Duration, from string, line []byte) {
		if first < 0 {
			first = at
		}
		var h struct{ Type string }
		if json.Unmarshal(line, &h) == nil && h.Type == "removed" && removedAt < 0 {
			removedAt = at
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lobby <= time.Second {
		t.Fatalf("the lobby took %v: too short for this test to tell the clocks apart", res.Lobby)
	}
	if first != 0 {
		t.Fatalf("the first printed line is at %v on the run's clock, want 0 (the game's start)", first)
	}
	if removedAt < time.Second || removedAt > 4*time.Second {
		t.Fatalf("carol's removal executed at %v, want a little after 1 s into the game", removedAt)
	}
}

// A lobby that cannot form ends the run with the joiner's reason, not with
// a run that hangs until its limit.
func TestLobbyThatCannotFormFails(t *testing.T) {
	sc := parse(t, `{"fps": 30, "frames": 300, "seed": 1,
	  "players": ["alice", "bob"], "network": {"rtt_ms": 60, "loss": 0.99}}`)
	_, err := RunWith(sc, &bytes.Buffer{}, Options{})
	if err == nil || !strings.Contains(err.Error(), "the host does not answer") || !strings.Contains(err.Error(), "bob") {
		t.Fatalf("err = %v, want bob's: the host does not answer", err)
	}
}

// Tokens, nonces and cookies come from a seeded source: two runs of a
// scenario with observers and removals are byte for byte the same.
func TestWholeSessionDeterministic(t *testing.T) {
	a := runScenario(t, loadScenario(t, "lossy.json"))
	b := runScenario(t, loadScenario(t, "lossy.json"))
	if !bytes.Equal(a.raw, b.raw) || a.res.Lobby != b.res.Lobby {
		t.Fatal("two runs of lossy.json differ")
	}
}
