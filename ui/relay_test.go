package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/lagscope/lagscope/probe/feed"
)

// Fixtures for paths through the host: relayed links, the host's relay counters
// and a lobby whose pairs are not connected yet.

// relayedUpdates is the fixture session seen from alice, a joiner whose
// link to dave found no direct path and goes through the host; in the
// Matrix bob's link to dave is relayed too.
func relayedUpdates() []feed.Update {
	us := matrixUpdates()
	for i := range us {
		v := &us[i].View
		for j := range v.Links {
			if v.Links[j].Peer == "dave" {
				v.Links[j].Relayed = true
			}
		}
		relayMatrix(&v.Matrix, [2]string{"alice", "dave"}, [2]string{"bob", "dave"})
	}
	return us
}

// relayMatrix marks the links from→to named in pairs relayed.
func relayMatrix(mv *feed.MatrixView, pairs ...[2]string) {
	for i := range mv.Players {
		for j := range mv.Players[i].Links {
			l := &mv.Players[i].Links[j]
			for _, p := range pairs {
				if l.From == p[0] && l.To == p[1] {
					l.Relayed = true
				}
			}
		}
	}
}

// hostRelayUpdates is the fixture session seen from alice as the host: it
// forwards bob ↔ dave (some of it refused over the pair's budget) and
// carol ↔ dave; bob's link to dave is relayed in the Matrix.
func hostRelayUpdates() []feed.Update {
	us := matrixUpdates()
	for i := range us {
		v := &us[i].View
		relayMatrix(&v.Matrix, [2]string{"bob", "dave"})
		t := uint64(i)
		v.Relay = []feed.RelayStat{
			{Between: [2]string{"bob", "dave"}, Datagrams: t * 61, Bytes: t * 61 * 180, RefusedDatagrams: t / 10, RefusedBytes: t / 10 * 180},
			{Between: [2]string{"carol", "dave"}, Datagrams: t * 59, Bytes: t * 59 * 170},
		}
	}
	return us
}

// lobbyPendingUpdates is the lobby with five pairs not connected yet:
// more than the header has lines for.
func lobbyPendingUpdates() []feed.Update {
	us := lobbyUpdates()
	for i := range us {
		d := time.Duration(i) * time.Second
		us[i].View.Lobby = &feed.LobbyView{Need: 4, Seated: 3, Observers: 1, CanStart: true, Pending: []feed.PendingPair{
			{A: "bob", B: "carol", Trying: "punching", For: 4*time.Second + d},
			{A: "alice", B: "carol", Trying: "direct", For: 1500*time.Millisecond + d},
			{A: "bob", B: "dave", Trying: feed.PathRelayed, For: 3*time.Second + d},
			{A: "carol", B: "dave", Trying: "punching", For: d},
			{A: "carol", B: "erin", Trying: "punching", For: d},
		}}
	}
	return us
}

var toLinkDave = []tea.Msg{tab, keyDownMsg, keyDownMsg}

// relayViews are the views that show relayed paths, for the goldens and for the
// checks every view passes (every size, no word cut, no requirement
// number).
func relayViews() []screenCase {
	return []screenCase{
		{"RelayedSession", relayedUpdates, nil},
		{"RelayedLink", relayedUpdates, toLinkDave},
		{"RelayedMatrix", relayedUpdates, toMatrix},
		{"HostRelayPlayers", hostRelayUpdates, []tea.Msg{tab, tab}},
		{"HostRelayMatrix", hostRelayUpdates, toMatrix},
		{"LobbyPending", lobbyPendingUpdates, nil},
	}
}

// TestGoldenRelay pins the relayed mark and word, the host's relay
// counters and the lobby's pending pairs at every size.
func TestGoldenRelay(t *testing.T) {
	want := map[string]string{
		"RelayedLink":   "Link alice → dave",
		"RelayedMatrix": "Who causes lag", "HostRelayPlayers": "Relayed through this machine",
		"HostRelayMatrix": "Who causes lag",
	}
	for _, sz := range goldenSizes {
		for _, c := range relayViews() {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				m := drive(t, sz[0], sz[1], c.updates(), c.keys, want[c.name])
				out := m.View()
				checkSize(t, out, sz[0], sz[1])
				teatest.RequireEqualOutput(t, []byte(out))
			})
		}
	}
}

// A relayed link carries the mark in the table and the Matrix, and the
// word with what it means for the round trip wherever its round trip is
// read; a direct link carries neither.
func TestRelayedLinkIsMarked(t *testing.T) {
	for _, sz := range goldenSizes {
		m := model(t, newStaticFeed(), sz[0], sz[1], relayedUpdates())
		out := m.View()
		rows := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			for _, p := range []string{"bob", "carol", "dave"} {
				if strings.HasPrefix(strings.TrimLeft(l, " >!"), p) && rows[p] == "" {
					rows[p] = l
				}
			}
		}
		if !strings.Contains(rows["dave"], markRelayed) {
			t.Errorf("%dx%d: dave's row has no relayed mark: %q", sz[0], sz[1], rows["dave"])
		}
		for _, p := range []string{"bob", "carol"} {
			if strings.Contains(rows[p], markRelayed) {
				t.Errorf("%dx%d: %s's direct link is marked relayed: %q", sz[0], sz[1], p, rows[p])
			}
		}
		if !strings.Contains(out, "path through the host") {
			t.Errorf("%dx%d: the overview does not say a relayed round trip is the host's path:\n%s", sz[0], sz[1], out)
		}
		press(m, toLinkDave...)
		m.dirty = true
		if out := m.View(); !strings.Contains(out, "relayed through the host") || !strings.Contains(out, "path through the host") {
			t.Errorf("%dx%d: the Link view of a relayed link lacks the word:\n%s", sz[0], sz[1], out)
		}
	}
	// The fixture without relays shows no mark anywhere.
	m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	if out := m.View(); strings.Contains(out, markRelayed) || strings.Contains(out, "through the host") {
		t.Errorf("a session with no relayed link shows the relayed mark:\n%s", out)
	}
}

// The lobby lists its pending pairs with what is tried and for how long,
// at most maxPendingLines lines, the last saying how many more.
func TestPendingLines(t *testing.T) {
	pp := func(n int) []feed.PendingPair {
		var out []feed.PendingPair
		for i := 0; i < n; i++ {
			out = append(out, feed.PendingPair{A: "p" + itoa(i), B: "q", Trying: "punching", For: time.Duration(i) * time.Second})
		}
		return out
	}
	if got := pendingLines(nil, 3); got != nil {
		t.Errorf("no pending pairs: %q, want none", got)
	}
	got := pendingLines(pp(3), 3)
	if len(got) != 3 || !strings.Contains(got[0], "p0 ↔ q: punching, 0 s") || !strings.Contains(got[2], "p2 ↔ q: punching, 2 s") {
		t.Errorf("three pairs in three lines: %q", got)
	}
	got = pendingLines(pp(7), 3)
	if len(got) != 3 || !strings.Contains(got[1], "p1 ↔ q") || !strings.HasSuffix(got[2], "+5 more") {
		t.Errorf("seven pairs in three lines: %q", got)
	}
	if w := tryingWord(feed.PathRelayed); w != "relay through the host" {
		t.Errorf("relayed is tried as %q", w)
	}
	// A started game's header has no pending lines even if a view still
	// carries them.
	us := lobbyPendingUpdates()
	for i := range us {
		us[i].View.Started = true
	}
	m := model(t, newStaticFeed(), 120, 40, us)
	if out := m.View(); strings.Contains(out, "not connected yet") {
		t.Errorf("a started game lists pending pairs:\n%s", out)
	}
}

// The host's relay counters: one row per relayed pair with what it
// forwarded and refused, only on a machine that relays.
func TestRelayCounters(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, hostRelayUpdates())
	press(m, tab, tab)
	out := m.View()
	// At t=100: bob ↔ dave forwarded 6100 datagrams, 1098000 bytes,
	// refused 10 (1800 bytes).
	for _, want := range []string{"Relayed through this machine", "bob ⇄ dave", "6100", "1.1 MB", "10", "1.8 kB", "carol ⇄ dave", "5900"} {
		if !strings.Contains(out, want) {
			t.Errorf("Players view lacks %q:\n%s", want, out)
		}
	}
	m = model(t, newStaticFeed(), 120, 40, fixtureUpdates())
	press(m, tab, tab)
	if out := m.View(); strings.Contains(out, "Relayed through") {
		t.Errorf("a machine relaying nothing shows a relay section:\n%s", out)
	}
	for _, c := range []struct {
		n    uint64
		want string
	}{{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {1_500_000, "1.5 MB"}, {2_000_000_000, "2.0 GB"}} {
		if got := fmtBytes(c.n); got != c.want {
			t.Errorf("fmtBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
