package ui

import (
	"sync"
	"time"

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

// ReplayFeed plays recorded updates back at the pace they were recorded,
// judged by the gaps between their View.At times (scaled by the speed of
// playback), so a recorded session can be watched as if it were live. It is
// the feed `lagscope replay` hands the UI.
//
// Quit ends playback with a Done update; a Speed control changes the speed
// of playback (in percent of real time: 100 is as recorded), since a
// recording's own game speed cannot be changed.
type ReplayFeed struct {
	ch      chan probe.Update
	control chan probe.Control
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// ReplayOptions tune a ReplayFeed.
type ReplayOptions struct {
	// Percent is the speed of playback in percent of real time; 0 means 100.
	Percent int
	// MaxGap caps the wait between two updates, so a recording with a long
	// silence does not look hung; 0 means one second.
	MaxGap time.Duration
	// Hold keeps the feed open after the last update until Quit, so the last
	// picture stays on screen; otherwise the last update is marked Done.
	Hold bool
}

// NewReplayFeed starts playing updates back.
func NewReplayFeed(updates []probe.Update, opt ReplayOptions) *ReplayFeed {
	if opt.Percent <= 0 {
		opt.Percent = 100
	}
	if opt.MaxGap <= 0 {
		opt.MaxGap = time.Second
	}
	f := &ReplayFeed{ch: make(chan probe.Update, 1), control: make(chan probe.Control, 8), stop: make(chan struct{})}
	f.wg.Add(1)
	go f.play(updates, opt)
	return f
}

func (f *ReplayFeed) play(updates []probe.Update, opt ReplayOptions) {
	defer f.wg.Done()
	defer close(f.ch)
	percent := opt.Percent
	var last probe.View
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i, u := range updates {
		if i > 0 {
			gap := u.View.At - updates[i-1].View.At
			gap = min(max(gap, 0), opt.MaxGap) * 100 / time.Duration(percent)
			timer.Reset(gap)
		wait:
			for {
				select {
				case <-timer.C:
					break wait
				case c := <-f.control:
					if c.Quit {
						f.send(probe.Update{View: last, Done: true})
						return
					}
					if c.Speed > 0 {
						percent = c.Speed
					}
				case <-f.stop:
					return
				}
			}
		}
		last = u.View
		if !opt.Hold && i == len(updates)-1 {
			u.Done = true
		}
		if !f.send(u) || u.Done {
			return
		}
	}
	for {
		select {
		case c := <-f.control:
			if c.Quit {
				f.send(probe.Update{View: last, Done: true})
				return
			}
		case <-f.stop:
			return
		}
	}
}

// send delivers u unless the feed is stopped. Only the newest View matters
// to a front end, but events must not be lost, so it blocks rather than
// dropping.
func (f *ReplayFeed) send(u probe.Update) bool {
	select {
	case f.ch <- u:
		return true
	case <-f.stop:
		return false
	}
}

// Updates implements probe.Feed.
func (f *ReplayFeed) Updates() <-chan probe.Update { return f.ch }

// Control implements probe.Feed. It never blocks: a control that finds the
// queue full is dropped.
func (f *ReplayFeed) Control(c probe.Control) {
	select {
	case f.control <- c:
	default:
	}
}

// Close stops playback at once and waits for the player goroutine to end.
func (f *ReplayFeed) Close() {
	f.once.Do(func() { close(f.stop) })
	f.wg.Wait()
}

var _ probe.Feed = (*ReplayFeed)(nil)
