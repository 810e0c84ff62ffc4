package record

import (
	"bytes"
	"context"
	"github.com/lagscope/lagscope/vocab"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"go.uber.org/goleak"
)

// timeline writes views of alice every second and one stall event every
// 500 ms for ten seconds.
func timeline(t *testing.T) *Recording {
	t.Helper()
	var buf bytes.Buffer
	w, _ := newWriter(&buf, Header{}, time.Now)
	for ms := 0; ms <= 10000; ms += 500 {
		at := time.Duration(ms) * time.Millisecond
		if ms%1000 == 0 {
			w.View(feed.View{At: at, Self: "alice", Frame: ms / 33})
			w.View(feed.View{At: at, Self: "bob", Frame: ms / 33})
		}
		w.event(at, "alice", &feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: ms}, Player: "alice", WaitMs: 40})
	}
	w.Close()
	rec, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func frames(u feed.Update) []int {
	var out []int
	for _, e := range u.Events {
		out = append(out, feed.Head(e).Frame)
	}
	return out
}

func TestCursorPlaysSeeksBack(t *testing.T) {
	c := newCursor(timeline(t), "bob")
	if c.End() != 10*time.Second {
		t.Fatalf("end %v", c.End())
	}
	u := c.advance(0)
	if len(u.Events) != 1 || u.View.Self != "bob" || u.View.At != 0 {
		t.Fatalf("start: %v %+v", frames(u), u.View)
	}
	u = c.advance(2500 * time.Millisecond)
	if got := frames(u); len(got) != 5 || got[0] != 500 || got[4] != 2500 || u.View.At != 2*time.Second {
		t.Fatalf("to 2.5 s: %v view at %v", got, u.View.At)
	}
	// Seeking back starts over: every event up to the target again, each
	// with its own time.
	u = c.advance(time.Second)
	if got := frames(u); len(got) != 3 || got[0] != 0 || u.View.At != time.Second {
		t.Fatalf("back to 1 s: %v view at %v", got, u.View.At)
	}
	for i, e := range u.Events {
		if tms := feed.Head(e).TMs; tms == nil || *tms != float64(i*500) {
			t.Fatalf("event %d of the seek back at t_ms %v, want %d", i, tms, i*500)
		}
	}
	u = c.advance(time.Hour)
	if len(u.Events) != 18 || c.position() != 10*time.Second || u.View.At != 10*time.Second {
		t.Fatalf("past the end: %d events, pos %v", len(u.Events), c.position())
	}
}

// The player moves by wall time × speed, pauses, seeks and ends on Quit;
// driven by made-up ticks, so no sleeps.
func TestPlayerSpeedPauseSeek(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := newPlayer(timeline(t), "", 2)
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { p.run(ctx, ticks); close(done) }()
	if u := <-p.Updates(); u.View.Self != "bob" || len(u.Events) != 1 { // the machine whose views last longest
		t.Fatalf("first update %+v", u)
	}
	base := time.Unix(0, 0)
	tick := func(d time.Duration) { ticks <- base.Add(d) }
	tick(0)
	tick(500 * time.Millisecond) // ×2: one second of recording
	u := <-p.Updates()
	if got := frames(u); len(got) != 2 || got[1] != 1000 {
		t.Fatalf("after 0.5 s at ×2: %v", got)
	}
	p.SetSpeed(100) // clamped to ×16
	if _, _, _, s := p.Position(); s != MaxSpeed {
		t.Fatalf("speed %v", s)
	}
	p.SetSpeed(0.5)
	tick(1500 * time.Millisecond) // ×0.5: half a second more
	u = <-p.Updates()
	if at, _, _, _ := p.Position(); at != 1500*time.Millisecond || len(u.Events) != 1 {
		t.Fatalf("at %v, %v", at, frames(u))
	}
	p.TogglePause()
	tick(5 * time.Second)
	// Seeks add up before the next tick plays them: Position reports the
	// one pending.
	p.Seek(4 * time.Second)
	if at, _, _, _ := p.Position(); at != 4*time.Second {
		t.Fatalf("position after a seek %v", at)
	}
	p.Seek(time.Hour)
	if at, end, _, _ := p.Position(); at != end {
		t.Fatalf("position after a seek past the end %v", at)
	}
	p.Seek(9 * time.Second)
	tick(6 * time.Second)
	u = <-p.Updates()
	if at, _, playing, _ := p.Position(); at != 9*time.Second || playing || u.View.At != 9*time.Second {
		t.Fatalf("after pause and seek: at %v playing %v view %v", at, playing, u.View.At)
	}
	p.Control(feed.Control{Quit: true})
	<-done
	var last feed.Update
	for u := range p.Updates() {
		last = u
	}
	if !last.Done {
		t.Fatal("no Done update after Quit")
	}
}

// Played to the end, the player hands out every event once, in order,
// and holds the last picture — no Done — until Quit, whose Done carries
// that picture.
func TestPlayerHoldsTheEndUntilQuit(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := newPlayer(timeline(t), "alice", MaxSpeed)
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { p.run(ctx, ticks); close(done) }()
	var got []int
	u := <-p.Updates()
	got = append(got, frames(u)...)
	base := time.Unix(0, 0)
	for i := 0; ; i++ {
		ticks <- base.Add(time.Duration(i) * 100 * time.Millisecond) // ×16: 1.6 s of recording a tick
		if i == 0 {
			continue
		}
		u = <-p.Updates()
		if u.Done {
			t.Fatal("Done before Quit")
		}
		got = append(got, frames(u)...)
		if _, _, playing, _ := p.Position(); !playing {
			break
		}
	}
	if len(got) != 21 || got[0] != 0 || got[20] != 10000 || u.View.At != 10*time.Second || u.View.Self != "alice" {
		t.Fatalf("events %v, last view %v", got, u.View.At)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("events out of order: %v", got)
		}
	}
	// At the end nothing moves: a tick hands out nothing. (The second
	// tick is taken only once the first has been dealt with.)
	ticks <- base.Add(time.Hour)
	ticks <- base.Add(2 * time.Hour)
	if n := len(p.updates); n != 0 {
		t.Fatalf("%d updates at the end", n)
	}
	p.Control(feed.Control{Quit: true})
	p.Control(feed.Control{Quit: true}) // a second quit is harmless
	<-done
	rest := []feed.Update{}
	for u := range p.Updates() {
		rest = append(rest, u)
	}
	if len(rest) != 1 || !rest[0].Done || rest[0].View.At != 10*time.Second || len(rest[0].Events) != 0 {
		t.Fatalf("after Quit: %+v", rest)
	}
}

// Ending the context stops a replay at once, mid-way, even with nobody
// reading: the channel closes and the goroutine is gone.
func TestPlayerStopsWithContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	p := NewPlayer(ctx, timeline(t), "", 1)
	<-p.Updates()
	cancel()
	for range p.Updates() {
	}
}

// A replay shows a filled Matrix although recordings leave
// View.Matrix out. In the root's golden recording (handoff.json: bob–
// carol at 400 ms until frame 400, alice leaves at frame 300), every View a
// replay hands out carries a row for every seated player still in the
// session, each row known and holding its links to the others, so the
// shown machine sees links it does not measure itself.
func TestReplayGoldenRecordingFillsMatrix(t *testing.T) {
	rec, err := Open(filepath.Join("..", "..", "testdata", "golden", "handoff.lsrec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, as := range []string{"alice", "bob", "carol"} {
		c := newCursor(rec, as)
		views := 0
		for at := time.Duration(0); at <= c.End(); at += time.Second {
			v := c.advance(at).View
			if !v.Started {
				continue
			}
			views++
			var seated []string
			for _, p := range v.Players {
				if !p.Observer && !p.Removed {
					seated = append(seated, p.Name)
				}
			}
			var rows []string
			for _, r := range v.Matrix.Players {
				rows = append(rows, r.Name)
				// Joiners start a one-way trip after the host (the lobby runs
				// in the simulation too), so at 0 s a row may not be known yet.
				if (at > 0 && !r.Known) || r.Self != (r.Name == as) {
					t.Fatalf("%s at %v: row %s known %v self %v", as, at, r.Name, r.Known, r.Self)
				}
				if at >= 5*time.Second && len(r.Links) != len(seated)-1 {
					t.Fatalf("%s at %v: row %s has %d links, want one to each of %v", as, at, r.Name, len(r.Links), seated)
				}
			}
			if strings.Join(rows, " ") != strings.Join(seated, " ") {
				t.Fatalf("%s at %v: matrix rows %v, seated %v", as, at, rows, seated)
			}
		}
		if views < 5 {
			t.Fatalf("%s: only %d views replayed", as, views)
		}
		// Five seconds in, bob–carol is the slow pair: alice's matrix shows
		// it from bob's and carol's rows, and who made whom wait.
		v := c.advance(5 * time.Second).View
		l, ok := v.Matrix.Link("bob", "carol")
		if !ok || !l.RTTKnown || l.SRTT < 350*time.Millisecond || l.SRTT > 450*time.Millisecond {
			t.Fatalf("%s at 5s: bob→carol %+v (known %v), want about 400 ms", as, l, ok)
		}
		if cs := v.Matrix.Culprits(); len(cs) != 3 || cs[0].Caused == 0 {
			t.Fatalf("%s at 5s: culprits %+v", as, cs)
		}
	}
}
