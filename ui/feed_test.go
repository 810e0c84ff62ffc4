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
