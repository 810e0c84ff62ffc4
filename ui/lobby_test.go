package ui

import (
	"errors"
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"net/netip"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
)

// hostGuide is the guide `lagscope host --players 3` makes on a machine
// with a LAN, a VPN and a global IPv6 address and the seeded code
// (cmd_lobby_test.go in the root package builds the same one from those
// interfaces).
func hostGuide() *feed.JoinGuide {
	return &feed.JoinGuide{
		Line: "lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H",
		Addrs: []feed.GuideAddr{
			{Addr: netip.MustParseAddrPort("192.168.1.20:7373"), Kind: feed.AddrLAN},
			{Addr: netip.MustParseAddrPort("100.101.7.3:7373"), Kind: feed.AddrLAN},
			{Addr: netip.MustParseAddrPort("[2001:db8::20]:7373"), Kind: feed.AddrPublic},
		},
		Port: 7373,
	}
}

// hostLobbyUpdates is the host's lobby: bob seated of three, the guide.
func hostLobbyUpdates() []feed.Update {
	var out []feed.Update
	for t := 0; t <= 5; t++ {
		v := feed.View{At: secs(t), Session: "7c3a91", Self: "alice", Master: "alice", FPS: 30, Speed: 30}
		v.Players = []feed.PlayerView{{Name: "alice", Master: true, Self: true}}
		seated := 1
		if t >= 2 {
			v.Players = append(v.Players, feed.PlayerView{Name: "bob"})
			seated = 2
		}
		v.Lobby = &feed.LobbyView{Need: 3, Seated: seated, CanStart: true, Guide: hostGuide()}
		u := feed.Update{View: v}
		if t == 2 {
			u.Events = []feed.Event{&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage}, Text: "bob joined (2 of 3 players seated)"}}
		}
		out = append(out, u)
	}
	return out
}

var joinHost = netip.MustParseAddrPort("203.0.113.5:7373")

// joinContactingUpdates is a joiner in its handshake with a host that has
// not answered yet.
func joinContactingUpdates() []feed.Update {
	var out []feed.Update
	for t := 0; t <= 3; t++ {
		v := feed.View{At: secs(t), Self: "bob"}
		v.Lobby = &feed.LobbyView{Joining: true, HostAddr: joinHost, Attempt: 2*t + 1}
		out = append(out, feed.Update{View: v})
	}
	return out
}

// joinRefusedUpdates is a joiner the host refuses: the game has started.
// The error's words are the session's (probe/session pins them).
func joinRefusedUpdates() []feed.Update {
	out := joinContactingUpdates()[:2]
	last := out[1]
	last.Done = true
	last.Err = errors.New("the game at 203.0.113.5:7373 has started — `lagscope watch 203.0.113.5:7373 --key 7K3M-QX9P-4RTA-WZ2H` shows it")
	return append(out, last)
}

// lobbyViews are the lobby's screens, for the goldens and for the checks
// every view passes.
func lobbyViews() []screenCase {
	return []screenCase{
		{"HostLobby", hostLobbyUpdates, nil},
		{"HostLobbyHelp", hostLobbyUpdates, []tea.Msg{typed("?")}},
		{"JoinContacting", joinContactingUpdates, nil},
		{"JoinRefusedStarted", joinRefusedUpdates, nil},
	}
}

// TestGoldenLobbyGuide pins the lobby that guides: the host's addresses,
// join line, seats and `s`; a joiner contacting its host; a joiner
// refused because the game has started.
func TestGoldenLobbyGuide(t *testing.T) {
	want := map[string][]string{
		"HostLobby":          {"lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H", "waiting for 1 more player (2 of 3 seated)", "press s to start now with the 2 seated", "[2001:db8::20]:7373", "drops UDP port"},
		"HostLobbyHelp":      {"start now"},
		"JoinContacting":     {"contacting 203.0.113.5:7373… (attempt 7)"},
		"JoinRefusedStarted": {"could not join: the game at 203.0.113.5:7373 has started", "203.0.113.5:7373 --key 7K3M-QX9P-4RTA-WZ2H` shows it"},
	}
	for _, sz := range goldenSizes {
		for _, c := range lobbyViews() {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				var m *tuiModel
				if us := c.updates(); us[len(us)-1].Done {
					// The program ends with its feed: the last picture
					// is the model's, drawn without one.
					m = model(t, newStaticFeed(), sz[0], sz[1], us)
				} else {
					m = drive(t, sz[0], sz[1], us, c.keys, "")
				}
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				flat := strings.Join(strings.Fields(out), " ")
				for _, w := range want[c.name] {
					if !strings.Contains(flat, w) {
						t.Errorf("%q not on screen:\n%s", w, out)
					}
				}
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// The host's `s` in its lobby asks the engine to start now, and the
// footer lists it; elsewhere `s` sorts the link table, as before.
func TestHostStartKey(t *testing.T) {
	fd := newStaticFeed()
	m := model(t, fd, 120, 40, hostLobbyUpdates())
	if !strings.Contains(m.View(), "s start now") {
		t.Errorf("the host's lobby footer does not list s:\n%s", m.View())
	}
	runCmd(press(m, typed("s")))
	if cs := fd.Controls(); len(cs) != 1 || !cs[0].Start {
		t.Fatalf("controls after s: %+v, want one Start", cs)
	}
	if m.table.sortBy != sortHouse {
		t.Errorf("s in the host's lobby also sorted the table (by %d)", m.table.sortBy)
	}

	fd = newStaticFeed()
	m = model(t, fd, 120, 40, joinContactingUpdates())
	if strings.Contains(m.View(), "start now") {
		t.Errorf("a joiner's footer lists s to start:\n%s", m.View())
	}
	runCmd(press(m, typed("s")))
	if cs := fd.Controls(); len(cs) != 0 {
		t.Fatalf("a joiner's s sent %+v", cs)
	}
	if m.table.sortBy == sortHouse {
		t.Error("s outside the host's lobby did not sort the table")
	}
}
