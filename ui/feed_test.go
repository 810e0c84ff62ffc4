package ui

import (
	"sync"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// staticFeed is the tests' feed.Feed over a fixed list of updates. All
// updates are queued at once. When the list does not end with a Done
// update, the feed stays open until a front end asks to quit, and then ends
// with a Done update, the way a live engine does. Controls are recorded for
// inspection.
type staticFeed struct {
	ch chan feed.Update

	mu       sync.Mutex
	controls []feed.Control
	closed   bool
	last     feed.View
	// QuitIgnored, when set before use, makes the feed ignore Quit, to
	// stand in for an engine that does not answer.
	QuitIgnored bool
}

// newStaticFeed queues updates for delivery.
func newStaticFeed(updates ...feed.Update) *staticFeed {
	f := &staticFeed{ch: make(chan feed.Update, len(updates)+1)}
	for _, u := range updates {
		f.ch <- u
		f.last = u.View
		if u.Done {
			f.closed = true
			close(f.ch)
			break
		}
	}
	return f
}

// Updates implements feed.Feed.
func (f *staticFeed) Updates() <-chan feed.Update { return f.ch }

// Control implements feed.Feed: it records c, and on Quit ends the feed.
func (f *staticFeed) Control(c feed.Control) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controls = append(f.controls, c)
	if c.Quit && !f.QuitIgnored && !f.closed {
		f.closed = true
		f.ch <- feed.Update{View: f.last, Done: true}
		close(f.ch)
	}
}

// Close ends the feed without a Done update, as a feed whose engine went
// away would. It is safe to call more than once.
func (f *staticFeed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
}

// Controls returns the controls received so far.
func (f *staticFeed) Controls() []feed.Control {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]feed.Control(nil), f.controls...)
}

var _ feed.Feed = (*staticFeed)(nil)

func drain(ch <-chan feed.Update) []feed.Update {
	var out []feed.Update
	for u := range ch {
		out = append(out, u)
	}
	return out
}

func TestStaticFeedEndsOnQuit(t *testing.T) {
	f := newStaticFeed(fixtureUpdates()[:3]...)
	f.Control(feed.Control{Speed: 20})
	f.Control(feed.Control{Quit: true})
	f.Control(feed.Control{Quit: true}) // a second quit is harmless
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
	got := drain(newStaticFeed(ups...).Updates())
	if len(got) != 3 || !got[2].Done {
		t.Fatalf("%d updates", len(got))
	}
}
