package record

import (
	"bytes"
	"github.com/lagscope/lagscope/vocab"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

func measured(from, to string, srttMs float64) feed.Link {
	return feed.Link{From: from, To: to, State: feed.LinkMeasured, RTTKnown: true, SRTT: units.FromMillis(srttMs),
		RTTVAR: units.FromMillis(1), RTO: time.Second, ConnTimeout: 10 * time.Second, LossKnown: true, Sent: 10}
}

// A live recording holds one machine's Views and, once a second, the link
// lines of every link it knows. The replay rebuilds the matrix from them:
// the shown machine's row from its View, another player's from its latest
// batch of link lines (a pair missing from that batch is gone), a player
// with no lines yet unknown (L3); nothing in the lobby.
func TestReplayMatrixFromLinkLines_L3(t *testing.T) {
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "lagscope join", Self: "you"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	players := []feed.PlayerView{{Name: "you", Self: true}, {Name: "ada", Report: &feed.ReportView{Frame: 55, Wait: 20 * time.Millisecond, Process: 3 * time.Millisecond}},
		{Name: "bob"}, {Name: "obs", Observer: true}}
	lv := func(to string, ms float64, caused time.Duration) feed.LinkView {
		return feed.LinkView{Link: measured("you", to, ms), Peer: to, Caused: caused, Observer: to == "obs"}
	}
	line := func(at time.Duration, l feed.Link) {
		if err := w.event(at, "you", &feed.LinkEvent{Header: feed.Header{Type: vocab.EventLink, Frame: 30}, LinkStat: l.Stat()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.View(feed.View{At: 0, Self: "you", FPS: 30, Speed: 30, Players: players, Lobby: &feed.LobbyView{Need: 3, Seated: 3}}); err != nil {
		t.Fatal(err)
	}
	line(time.Second, measured("ada", "you", 41))
	line(time.Second, measured("ada", "bob", 90))
	line(time.Second, measured("ada", "obs", 12))
	line(2*time.Second, measured("ada", "you", 42))
	line(2*time.Second, measured("ada", "obs", 13)) // ada→bob no longer in the batch
	if err := w.View(feed.View{At: 2500 * time.Millisecond, Self: "you", Started: true, FPS: 30, Speed: 30, Frame: 75, InForce: rungs.RungTiming(2), Target: rungs.RungTiming(2), Players: players,
		Links: []feed.LinkView{lv("ada", 40, 0), lv("bob", 50, 70*time.Millisecond), lv("obs", 10, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stop != nil {
		t.Fatalf("recording stopped: %v", rec.Stop)
	}
	c := newCursor(rec, "you")
	if m := c.advance(time.Second).View.Matrix; len(m.Players) != 0 {
		t.Fatalf("lobby matrix %+v", m)
	}
	m := c.advance(3 * time.Second).View.Matrix
	if len(m.Players) != 3 {
		t.Fatalf("rows %+v, want you, ada, bob (the observer has none)", m.Players)
	}
	you, ada, bob := m.Players[0], m.Players[1], m.Players[2]
	if you.Name != "you" || !you.Self || !you.Known || you.Frame != 75 || you.Waited != 70*time.Millisecond || len(you.Links) != 3 {
		t.Fatalf("own row %+v", you)
	}
	if l, _ := m.Link("you", "bob"); l.Caused != 70*time.Millisecond || l.SRTT != 50*time.Millisecond {
		t.Fatalf("you→bob %+v", l)
	}
	if ada.Name != "ada" || !ada.Known || ada.Self || ada.Age != 500*time.Millisecond || ada.Frame != 55 ||
		ada.Wait == nil || *ada.Wait != 20*time.Millisecond || ada.Process == nil || *ada.Process != 3*time.Millisecond {
		t.Fatalf("ada's row %+v", ada)
	}
	if len(ada.Links) != 2 || ada.Links[0].To != "you" || ada.Links[0].SRTT != 42*time.Millisecond || ada.Links[1].To != "obs" || !ada.Links[1].Observer {
		t.Fatalf("ada's links %+v, want the 2 s batch: you 42 ms, obs", ada.Links)
	}
	if bob.Name != "bob" || bob.Known || len(bob.Links) != 0 || bob.Wait != nil {
		t.Fatalf("bob's row %+v, want unknown (no link lines from bob)", bob)
	}
}

// BenchmarkReplayMatrix64: a replay hands out up to ten Views a second,
// each with the matrix rebuilt; at 64 players that is 64 rows of 63 links
// from the machines' recorded Views.
func BenchmarkReplayMatrix64(b *testing.B) {
	const n, views = 64, 10
	names := make([]string, n)
	players := make([]feed.PlayerView, n)
	for i := range names {
		names[i] = "p" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		players[i] = feed.PlayerView{Name: names[i]}
	}
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "bench", Virtual: true}, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	for s := range views {
		for i, self := range names {
			v := feed.View{At: time.Duration(s) * time.Second, Self: self, Started: true, FPS: 30, Speed: 30, Frame: 30 * s,
				InForce: rungs.RungTiming(2), Target: rungs.RungTiming(2), Players: players}
			for j, peer := range names {
				if j != i {
					v.Links = append(v.Links, feed.LinkView{Link: measured(self, peer, float64(20+j)), Peer: peer})
				}
			}
			if err := w.View(v); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil {
		b.Fatal(err, rec.Stop)
	}
	c := newCursor(rec, names[0])
	if m := c.advance(5 * time.Second).View.Matrix; len(m.Players) != n || len(m.Players[n-1].Links) != n-1 {
		b.Fatalf("matrix of %d rows", len(m.Players))
	}
	// A new picture every time: the matrix is rebuilt.
	b.Run("rebuild", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c.advance(time.Duration(i%views) * time.Second)
		}
	})
	// Playing: ten updates a second, a new picture once a second.
	b.Run("play", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c.advance(time.Duration(i%(10*views)) * 100 * time.Millisecond)
		}
	})
}
