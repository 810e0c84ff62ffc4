package ui

import (
	"github.com/lagscope/lagscope/vocab"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/feed"
)

// evil is a player's name that would retitle the terminal window, ring
// its bell and clear the screen if it were written out raw.
const evil = "mal\x1b]0;pwned\x07lory\x1b[2J\x9b"

// evilUpdates puts evil everywhere outside text reaches the UI: a link's
// peer, a player, the master, the waited-on player, the matrix, a message,
// a removal, an alert and the diagnosis.
func evilUpdates() []feed.Update {
	us := diagnosisUpdates()
	for i := range us {
		v := &us[i].View
		v.Master, v.WaitedOn, v.Stalled = evil, evil, i > 50
		v.Links = append([]feed.LinkView(nil), v.Links...)
		v.Links[1].Peer, v.Links[1].To = evil, evil
		v.Players = append([]feed.PlayerView(nil), v.Players...)
		v.Players[2].Name = evil
		v.Matrix = fixtureMatrix(i)
		v.Matrix.Players[2].Name = evil
		if v.Diagnosis != nil {
			d := *v.Diagnosis
			d.Players = append(d.Players[:0:0], d.Players...)
			d.Players[2].Player = evil
			d.Verdict = evil + " holds the match back"
			v.Diagnosis = &d
		}
	}
	to := evil
	us[60].Events = append(us[60].Events,
		&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage}, Text: "hello from " + evil},
		&feed.RemovedEvent{Header: feed.Header{Type: vocab.EventRemoved}, Player: evil},
		&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster}, Player: evil},
		&feed.AlertEvent{Header: feed.Header{Type: vocab.EventAlert}, Kind: feed.AlertLoss, From: &to, To: &to})
	return us
}

// Names and message texts from outside leave no control byte in the
// picture (textsafe): on every view, the help and the options dialog.
func TestOutsideTextIsEscaped(t *testing.T) {
	m := model(t, newStaticFeed(), 200, 60, evilUpdates())
	check := func(where string) {
		t.Helper()
		v := m.View()
		if i := strings.IndexAny(v, "\x1b\x07\u009b"); i >= 0 {
			t.Fatalf("%s: a control character reached the screen at %d: %q", where, i, v[max(0, i-20):min(len(v), i+20)])
		}
		if !strings.Contains(v, `mal\x1b`) && !strings.Contains(v, `mal\u001b`) && !strings.Contains(v, "mal\\") {
			t.Fatalf("%s: the escaped name should be visible:\n%s", where, v)
		}
	}
	for _, sc := range screens {
		check(sc.name)
		press(m, tab)
	}
	// The evil link focused, and the messages.
	press(m, keyDownMsg, tea.KeyMsg{Type: tea.KeyEnter})
	check("focused evil link")
	press(m, typed("o"))
	check("options")
	press(m, tea.KeyMsg{Type: tea.KeyEsc}, typed("?"))
	check("help")
}
