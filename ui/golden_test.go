package ui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
)

// drive runs the UI as a real bubbletea program under teatest at w×h on
// the fixture session, waits for the last picture, types keys, waits for
// want, and returns the final model once the program has stopped.
func drive(t *testing.T, w, h int, updates []feed.Update, keys []tea.Msg, want string) *tuiModel {
	t.Helper()
	fd := newStaticFeed(updates...)
	m, err := newModel(fd, Options{NoColor: true, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	t.Cleanup(func() {
		fd.Close()
		close(m.stop)
	})
	last := sessionClock(&updates[len(updates)-1].View)
	if w < minWidth || h < minHeight {
		last = "lagscope needs"
	}
	waitFor(t, tm, last)
	for _, k := range keys {
		tm.Send(k)
	}
	if want != "" {
		waitFor(t, tm, want)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*tuiModel)
	if !ok {
		t.Fatal("final model is not *tuiModel")
	}
	return fm
}

func waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
		teatest.WithDuration(30*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

var tab = tea.KeyMsg{Type: tea.KeyTab}

func typed(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// TestGolden pins every view at the smallest supported size and at a large
// one: the four tabs, the options dialog, the help screen, the
// L8 hint on a focused link, and the too-small message.
func TestGolden(t *testing.T) {
	type view struct {
		name string
		keys []tea.Msg
		want string // text that shows the keys have taken effect
	}
	views := []view{
		{"Session", nil, ""},
		{"Link", []tea.Msg{tab}, "Link alice → bob"},
		{"Players", []tea.Msg{tab, tab}, "Who made us wait"},
		{"Messages", []tea.Msg{tab, tab, tab}, "in all"},
		{"Options", []tea.Msg{typed("o")}, "(rung 5)"},
		{"Help", []tea.Msg{typed("?")}, "Mouse:"},
		{"HintL8", []tea.Msg{tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyEnter}}, "Round trip · dave"},
	}
	for _, sz := range goldenSizes {
		for _, v := range views {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], fixtureUpdates(), v.keys, v.want)
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
	t.Run("TooSmall_79x24", func(t *testing.T) {
		m := drive(t, 79, 24, fixtureUpdates(), nil, "")
		out := m.View()
		if !strings.Contains(out, "at least 80×24") || !strings.Contains(out, "79×24") {
			t.Fatalf("too-small message missing:\n%s", out)
		}
		teatest.RequireEqualOutput(t, []byte(out))
	})
	// At 40×12 the message wraps and shows whole.
	t.Run("TooSmall_40x12", func(t *testing.T) {
		m := drive(t, 40, 12, fixtureUpdates(), nil, "")
		out := m.View()
		flat := strings.Join(strings.Fields(out), " ")
		if !strings.Contains(flat, "lagscope needs a terminal of at least 80×24. This one is 40×12: please make it larger.") {
			t.Fatalf("too-small message cut:\n%s", out)
		}
		checkSize(t, out, 40, 12)
		teatest.RequireEqualOutput(t, []byte(out))
	})
}

// checkSize asserts a picture fills the terminal exactly: h lines, none
// wider than w.
func checkSize(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Errorf("picture has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := lipglossWidth(l); n > w {
			t.Errorf("line %d is %d wide, more than %d: %q", i, n, w, l)
		}
	}
}

// goldenSizes are the terminal sizes every view is pinned at: the smallest supported, a common one and a wide one.
var goldenSizes = [][2]int{{80, 24}, {120, 40}, {200, 60}}

// TestGoldenDiagnosis pins the Diagnosis view from the
// hand-made diagnosis, and the header's verdict on the overview.
func TestGoldenDiagnosis(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("Diagnosis_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := drive(t, sz[0], sz[1], diagnosisUpdates(), toDiagnosis, "who and what holds")
			out := m.View()
			checkSize(t, out, sz[0], sz[1])
			teatest.RequireEqualOutput(t, []byte(out))
		})
		t.Run(fmt.Sprintf("Verdict_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := drive(t, sz[0], sz[1], diagnosisUpdates(), nil, "")
			out := m.View()
			checkSize(t, out, sz[0], sz[1])
			teatest.RequireEqualOutput(t, []byte(out))
		})
	}
}

// TestGoldenDiagnosisBufferbloat pins the Diagnosis view's evidence for a
// player whose latest load test found bufferbloat.
func TestGoldenDiagnosisBufferbloat(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("Diagnosis_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := drive(t, sz[0], sz[1], bufferbloatUpdates(), toDiagnosis, "who and what holds")
			out := m.View()
			checkSize(t, out, sz[0], sz[1])
			if sz[0] >= 120 && !strings.Contains(strings.Join(strings.Fields(out), " "), "carol: when its line is busy, its upload adds 380 ms") {
				t.Errorf("no bufferbloat evidence for carol:\n%s", out)
			}
			teatest.RequireEqualOutput(t, []byte(out))
		})
	}
}

// TestGoldenAlerts pins alerts in the message list, on the
// overview and on the Messages view.
func TestGoldenAlerts(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, v := range []struct {
			name string
			keys []tea.Msg
			want string
		}{{"Session", nil, ""}, {"Messages", []tea.Msg{tab, tab, tab}, "in all"}} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], alertUpdates(), v.keys, v.want)
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// TestGoldenMore pins the cases that are easy to get wrong: long messages
// that must wrap, and the lobby (the Matrix saying why it is empty).
func TestGoldenMore(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, v := range []struct {
			name    string
			updates func() []feed.Update
			keys    []tea.Msg
			want    string
		}{
			{"LongMessages", longMessageUpdates, nil, ""},
			{"LongMessagesList", longMessageUpdates, []tea.Msg{tab, tab, tab}, "in all"},
			{"Lobby", lobbyUpdates, nil, ""},
			{"LobbyMatrix", lobbyUpdates, toMatrix, "no link reports"},
		} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], v.updates(), v.keys, v.want)
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// TestGoldenNoColorEnv pins the picture under NO_COLOR with its escape
// codes: bold, underline and reverse only (the active tab reversed, the
// focused row reversed), never a colour.
func TestGoldenNoColorEnv(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("Session_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m, err := newModel(newStaticFeed(), Options{Output: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			for _, u := range fixtureUpdates() {
				m.Update(updateMsg{u})
			}
			out := m.View()
			if !strings.Contains(out, "\x1b[1;7mSession\x1b[0m") {
				t.Errorf("the active tab is not drawn bold and reversed")
			}
			teatest.RequireEqualOutput(t, []byte(out))
		})
	}
}

// longNames renames the fixture's players: one longer than a column, one
// of emoji and one of CJK letters (two cells each), so cut names end in …
// and the columns stay aligned, counted in terminal cells.
func longNameUpdates(us []feed.Update) []feed.Update {
	rename := map[string]string{"bob": "bartholomew-the-great", "carol": "🎮🎮🎮🎮🎮🎮🎮🎮", "dave": "日本語の名前です"}
	to := func(n string) string {
		if r, ok := rename[n]; ok {
			return r
		}
		return n
	}
	for i := range us {
		v := &us[i].View
		v.Self, v.Master = to(v.Self), to(v.Master)
		for k := range v.Links {
			v.Links[k].Peer = to(v.Links[k].Peer)
			v.Links[k].From, v.Links[k].To = to(v.Links[k].From), to(v.Links[k].To)
		}
		for k := range v.Players {
			v.Players[k].Name = to(v.Players[k].Name)
		}
		for k := range v.Matrix.Players {
			row := &v.Matrix.Players[k]
			row.Name = to(row.Name)
			for j := range row.Links {
				row.Links[j].From, row.Links[j].To = to(row.Links[j].From), to(row.Links[j].To)
			}
		}
	}
	return us
}

func TestGoldenLongNames(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, v := range []struct {
			name    string
			updates func() []feed.Update
			keys    []tea.Msg
			want    string
		}{
			{"Session", fixtureUpdates, nil, ""},
			{"Matrix", matrixUpdates, toMatrix, "Who causes lag"},
		} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], longNameUpdates(v.updates()), v.keys, v.want)
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				if !strings.Contains(out, "…") {
					t.Errorf("no cut name ends in …:\n%s", out)
				}
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}
