package session

import (
	"github.com/lagscope/lagscope/vocab"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// The knobs the simulator drives a session with: a host told to
// wait for an observer does not start when the players are seated (T5:
// "every player is ready" includes the watchers it was told of); with a
// LobbySink the session's own lines go there and Sink gets only the game's;
// ProcessTime and LinkEvery reach the peer; NoTelemetry keeps players from
// streaming.
func TestSimulatorKnobs_T5_S5(t *testing.T) {
	w := newWorld(t, 3, lan30)
	var lobby []feed.Event
	ls := feed.SinkFunc(func(_ string, e feed.Event) { lobby = append(lobby, e) })
	knobs := Config{LobbySink: ls, NoTelemetry: true, LinkEvery: 30, ProcessTime: 20 * time.Millisecond, Virtual: true}
	hc := knobs
	hc.Players, hc.Observers = 2, 1
	host := w.host("alice", hc)
	bob := w.join("bob", RolePlayer, host, knobs)
	if w.runUntil(5*time.Second, started(host)) {
		t.Fatal("the host started before the observer it waits for joined")
	}
	eve := w.join("eve", RoleObserver, host, knobs)
	if !w.runUntil(10*time.Second, started(host, bob, eve)) {
		t.Fatal("the game did not start once the observer joined")
	}
	w.runFor(5 * time.Second)

	types := map[vocab.EventType]int{}
	for _, e := range lobby {
		types[feed.Head(e).Type]++
	}
	if types["session"] != 3 || types["roster"] == 0 || types["message"] == 0 {
		t.Errorf("lobby sink got %v, want 3 session lines, roster lines and messages", types)
	}
	for _, m := range []*machine{host, bob, eve} {
		for _, e := range m.events {
			switch e.(type) {
			case *feed.SessionEvent, *feed.RosterEvent:
				t.Fatalf("%s: lobby line %T in the game's sink", m.name, e)
			}
		}
	}
	if n := len(of[*feed.LinkEvent](host)); n == 0 {
		t.Error("LinkEvery did not reach the peer: no link lines")
	}
	var proc float64
	for _, r := range of[*feed.ReportEvent](host) {
		if r.Player == "alice" {
			proc = r.ProcessMs
		}
	}
	if proc != 20 {
		t.Errorf("alice reports process_ms %v, want 20 (ProcessTime)", proc)
	}
	// Without telemetry bob's links reach alice only in bob's own lines.
	for _, l := range host.s.KnownLinks(w.now()) {
		if l.From != "alice" {
			t.Errorf("with NoTelemetry alice knows a link of %s: %s→%s", l.From, l.From, l.To)
		}
	}
}
