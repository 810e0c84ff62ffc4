package ui

import (
	"sync"

	"github.com/lagscope/lagscope/probe"
)

// StaticFeed is a probe.Feed over a fixed list of updates, for tests and
// for showing a finished session. All updates are queued at once. When the
// list does not end with a Done update, the feed stays open until a front
// end asks to quit, and then ends with a Done update, the way a live engine
// does. Controls are recorded for inspection.
type StaticFeed struct {
	ch chan probe.Update

	mu       sync.Mutex
	controls []probe.Control
	closed   bool
	last     probe.View
	// QuitIgnored, when set before use, makes the feed ignore Quit, to
	// stand in for an engine that does not answer.
	QuitIgnored bool
}

// NewStaticFeed queues updates for delivery.
func NewStaticFeed(updates ...probe.Update) *StaticFeed {
	f := &StaticFeed{ch: make(chan probe.Update, len(updates)+1)}
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

// Updates implements probe.Feed.
func (f *StaticFeed) Updates() <-chan probe.Update { return f.ch }

// Control implements probe.Feed: it records c, and on Quit ends the feed.
func (f *StaticFeed) Control(c probe.Control) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controls = append(f.controls, c)
	if c.Quit && !f.QuitIgnored && !f.closed {
		f.closed = true
		f.ch <- probe.Update{View: f.last, Done: true}
		close(f.ch)
	}
}

// Close ends the feed without a Done update, as a feed whose engine went
// away would. It is safe to call more than once.
func (f *StaticFeed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
}

// Controls returns the controls received so far.
func (f *StaticFeed) Controls() []probe.Control {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]probe.Control(nil), f.controls...)
}

var _ probe.Feed = (*StaticFeed)(nil)
