package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// lineTexts is the message list oldest first, each line as drawn: its
// stamp, ALERT when an alert marks it, its words.
func lineTexts(s *session) []string {
	var out []string
	for _, m := range s.msgs {
		stamp := fmtClock(m.at)
		if m.pregame {
			stamp = "lobby"
		}
		if m.alert {
			stamp += " ALERT"
		}
		out = append(out, stamp+" "+m.text)
	}
	return out
}

// One line per event, whichever order an alert and its message come in:
// the engine writes a tier alert before the tier line, a bad link's line
// before its alert, a loss alert before its loss line. An incident has a
// line when it opens and one when it closes, none for its updates; a loss
// alert about its player while it is open marks its open line (which
// takes the newest sentence of its updates), and the
// loss line that comes with that alert is not a line of its own. A loss
// alert about someone else is its loss line, marked.
func TestOneLinePerEvent(t *testing.T) {
	s := newSession()
	at := func(sec float64) feed.Header {
		ms := sec * 1000
		return feed.Header{Frame: int(sec * 30), GameMs: &ms}
	}
	you, ada, bob := "you", "ada", "bob"
	link := func(to *string) (*string, *string) { return &you, to }
	alert := func(sec float64, kind feed.AlertKind, to *string, text string) *feed.AlertEvent {
		h := at(sec)
		h.Type = vocab.EventAlert
		e := &feed.AlertEvent{Header: h, Player: you, Kind: kind, Text: text}
		if to != nil {
			e.From, e.To = link(to)
		}
		return e
	}
	msg := func(sec float64, m *feed.MessageEvent) *feed.MessageEvent {
		m.Header = at(sec)
		m.Type = vocab.EventMessage
		return m
	}
	incident := func(sec float64, id int, phase vocab.IncidentPhase, player *string, text string) *feed.IncidentEvent {
		h := at(sec)
		h.Type = vocab.EventIncident
		return &feed.IncidentEvent{Header: h, Incident: feed.Incident{ID: id, Phase: phase, Player: player, Cause: vocab.CauseLatency, Text: text}}
	}
	lossAda := feed.LossText("ada", 0.08, -1, 10*time.Second)
	lossBob := feed.LossText("bob", 0.06, -1, 10*time.Second)
	view := fixtureView(60)
	s.apply(feed.Update{View: view, Events: []feed.Event{
		// A tier alert, then its line.
		alert(10, feed.AlertTier, nil, "Connection quality target worsened from Fast to Normal"),
		msg(10, &feed.MessageEvent{Text: "Connection quality target: Normal", Kind: feed.MessageTier, Subject: "Normal"}),
		// A bad link's line, then its alert.
		msg(12, feed.LinkMessage(0, you, bob, true)),
		alert(12, feed.AlertBad, &bob, feed.LinkBadText(bob)),
		// ada's incident opens, is updated, a loss alert about ada and its
		// loss line come, then it closes.
		incident(20, 1, vocab.IncidentOpen, &ada, "Waiting for ada since 00:19: ada's round trips are 240 ms above normal."),
		incident(21, 1, vocab.IncidentUpdate, &ada, "Waiting for ada since 00:19: ada's round trips are 250 ms above normal."),
		alert(22, feed.AlertLoss, &ada, lossAda),
		msg(22, feed.LossMessage(0, you, ada, lossAda)),
		// bob's loss is no part of ada's incident: its own line, marked.
		alert(23, feed.AlertLoss, &bob, lossBob),
		msg(23, feed.LossMessage(0, you, bob, lossBob)),
		incident(40, 1, vocab.IncidentClose, &ada, "ada's side held the match back from 00:19 to 00:40; it cost the match 8.0 s of waiting."),
	}})
	got := lineTexts(s)
	want := []string{
		"00:10 ALERT Connection quality target: Normal",
		"00:12 ALERT Connection to bob has gone bad",
		"00:20 ALERT Waiting for ada since 00:19: ada's round trips are 250 ms above normal.",
		"00:23 ALERT " + lossBob,
		"00:40 ada's side held the match back from 00:19 to 00:40; it cost the match 8.0 s of waiting.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the message list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.alerts != 4 {
		t.Errorf("%d alerts counted for the bell, want 4", s.alerts)
	}
	// A loss alert after the incident closed is its loss line again.
	s.apply(feed.Update{View: view, Events: []feed.Event{
		alert(50, feed.AlertLoss, &ada, lossAda),
		msg(50, feed.LossMessage(0, you, ada, lossAda)),
	}})
	if got := lineTexts(s); len(got) != len(want)+1 || got[len(got)-1] != "00:50 ALERT "+lossAda {
		t.Errorf("after the incident closed:\n%s", strings.Join(got, "\n"))
	}
}

// The clocks: a line carries its session time; a live line without one
// came before the game started (once the feed's lines carry session
// times) and reads "lobby"; the header says "t" and the session time, in
// the lobby "lobby" and the time there.
func TestLinesAndHeaderOnTheSessionClock(t *testing.T) {
	s := newSession()
	tms, game := 4000.0, 2500.0
	lobby := feed.View{At: 4 * time.Second, Self: "alice"}
	if got := sessionClock(&lobby); got != "lobby 00:04" {
		t.Errorf("the lobby's clock %q", got)
	}
	started := fixtureView(30)
	started.Game = 27 * time.Second // 3 s of stalls since the start
	if got := sessionClock(&started); got != "t 00:27" {
		t.Errorf("the game's clock %q, want the session time t 00:27", got)
	}
	old := started
	old.Game = 0 // a recording made before Views carried it: frames at the rate
	if got := sessionClock(&old); got != "t 00:30" {
		t.Errorf("an old recording's clock %q, want t 00:30 from frame 900 at 30 fps", got)
	}
	s.apply(feed.Update{View: started, Events: []feed.Event{
		&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 75, TMs: &tms, GameMs: &game}, Text: "first"},
		&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 0, TMs: &tms}, Text: "bob joined (2 of 3 players seated)"},
		&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 0, Pregame: true}, Text: "from the host's lobby"},
	}})
	got := strings.Join(lineTexts(s), "\n")
	if want := "00:02 first\nlobby bob joined (2 of 3 players seated)\nlobby from the host's lobby"; got != want {
		t.Errorf("lines:\n%s\nwant:\n%s", got, want)
	}
}
