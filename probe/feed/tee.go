package feed

import (
	"errors"
	"slices"
	"sync"
)

// UpdateSink consumes every update of a feed, in order: the NDJSON writer,
// a recorder, a metrics exporter. It runs on the tee's goroutine, never on
// the engine's, so a slow sink delays other sinks but never the session.
type UpdateSink interface {
	Write(Update) error
}

// UpdateSinkFunc adapts a function to UpdateSink.
type UpdateSinkFunc func(Update) error

// Write calls f.
func (f UpdateSinkFunc) Write(u Update) error { return f(u) }

// Teed is a feed split by Tee: every sink has seen each update before it is
// offered to the Teed's own reader (a TUI).
type Teed struct {
	src   Feed
	sinks []UpdateSink
	out   chan Update
	done  chan struct{}

	mu   sync.Mutex
	errs []error
}

var _ Feed = (*Teed)(nil)

// Tee reads src on a goroutine of its own and hands every update to each
// sink in turn, then to the returned feed. Its reader follows the Feed
// rules: a slow reader loses intermediate Views, never Events, and the
// last update (Done set) always arrives before the channel closes. The
// returned feed must be read to its end (a caller without a screen ranges
// over Updates). A sink that fails is not called again; Err reports it.
func Tee(src Feed, sinks ...UpdateSink) *Teed {
	t := &Teed{src: src, sinks: sinks, out: make(chan Update, 1), done: make(chan struct{})}
	go t.run()
	return t
}

// Updates implements Feed.
func (t *Teed) Updates() <-chan Update { return t.out }

// Control implements Feed: requests go straight to the source.
func (t *Teed) Control(c Control) { t.src.Control(c) }

// Err is every sink's first error, once the feed has ended (nil before).
func (t *Teed) Err() error {
	select {
	case <-t.done:
	default:
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.errs...)
}

func (t *Teed) run() {
	// done closes before out, so a reader that has seen out close finds
	// every sink's error in Err.
	defer close(t.out)
	defer close(t.done)
	failed := make([]bool, len(t.sinks))
	var pending *Update
	for u := range t.src.Updates() {
		for i, s := range t.sinks {
			if failed[i] {
				continue
			}
			if err := s.Write(u); err != nil {
				failed[i] = true
				t.mu.Lock()
				t.errs = append(t.errs, err)
				t.mu.Unlock()
			}
		}
		if pending == nil {
			c := u
			pending = &c
		} else {
			pending.Events = append(slices.Clip(pending.Events), u.Events...)
			pending.View, pending.Done, pending.Err = u.View, u.Done, u.Err
		}
		if pending.Done {
			continue // the last one is sent, blocking, once the source closes
		}
		select {
		case t.out <- *pending:
			pending = nil
		default:
		}
	}
	if pending != nil {
		t.out <- *pending
	}
}
