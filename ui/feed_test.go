package ui

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe"
)

func drain(ch <-chan probe.Update) []probe.Update {
	var out []probe.Update
	for u := range ch {
		out = append(out, u)
	}
	return out
}

func TestStaticFeedEndsOnQuit(t *testing.T) {
	f := NewStaticFeed(fixtureUpdates()[:3]...)
	f.Control(probe.Control{Speed: 20})
	f.Control(probe.Control{Quit: true})
	f.Control(probe.Control{Quit: true}) // a second quit is harmless
	got := drain(f.Updates())
	if len(got) != 4 || !got[3].Done || got[3].View.At != 2*time.Second {
		t.Fatalf("got %d updates, last %+v", len(got), got[len(got)-1].Done)
	}
	if c := f.Controls(); len(c) != 3 || c[0].Speed != 20 {
		t.Fatalf("controls %+v", c)
	}
	f.Close() // after the end: harmless
}

func TestStaticFeedWithDoneClosesByItself(t *testing.T) {
	ups := fixtureUpdates()[:3]
	ups[2].Done = true
	got := drain(NewStaticFeed(ups...).Updates())
	if len(got) != 3 || !got[2].Done {
		t.Fatalf("%d updates", len(got))
	}
}

// A replay delivers every update in order, events included, and marks the
// last one Done.
func TestReplayFeedPlaysInOrder(t *testing.T) {
	ups := fixtureUpdates()[:20]
	f := NewReplayFeed(ups, ReplayOptions{Percent: 100, MaxGap: time.Microsecond})
	defer f.Close()
	got := drain(f.Updates())
	if len(got) != len(ups) {
		t.Fatalf("%d updates, want %d", len(got), len(ups))
	}
	events := 0
	for i, u := range got {
		if u.View.At != ups[i].View.At {
			t.Fatalf("update %d at %v, want %v", i, u.View.At, ups[i].View.At)
		}
		events += len(u.Events)
	}
	if events != 2 || !got[len(got)-1].Done {
		t.Fatalf("%d events, last Done %v", events, got[len(got)-1].Done)
	}
}

// Quit stops a replay with a Done update carrying the last picture shown.
func TestReplayFeedQuit(t *testing.T) {
	ups := fixtureUpdates()
	f := NewReplayFeed(ups, ReplayOptions{MaxGap: time.Hour}) // would take 100 s
	defer f.Close()
	first := <-f.Updates()
	f.Control(probe.Control{Quit: true})
	rest := drain(f.Updates())
	if len(rest) != 1 || !rest[0].Done || rest[0].View.At != first.View.At {
		t.Fatalf("after quit: %d updates %+v", len(rest), rest)
	}
}

// Hold keeps the last picture until Quit.
func TestReplayFeedHold(t *testing.T) {
	ups := fixtureUpdates()[:3]
	f := NewReplayFeed(ups, ReplayOptions{MaxGap: time.Microsecond, Hold: true})
	defer f.Close()
	for i := 0; i < 3; i++ {
		if u := <-f.Updates(); u.Done {
			t.Fatalf("update %d is Done with Hold", i)
		}
	}
	f.Control(probe.Control{Quit: true})
	rest := drain(f.Updates())
	if len(rest) != 1 || !rest[0].Done {
		t.Fatalf("after quit %+v", rest)
	}
}

func TestReplayFeedCloseStopsAtOnce(t *testing.T) {
	f := NewReplayFeed(fixtureUpdates(), ReplayOptions{MaxGap: time.Hour})
	<-f.Updates()
	f.Close()
	f.Close()
	drain(f.Updates()) // closed, not hung
}
