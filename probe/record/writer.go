package record

import (
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// flushEvery is the longest a complete record waits in memory before it is
// written out (at least every second), so a recording cut
// off by SIGKILL loses at most this much.
const flushEvery = time.Second

// viewEvery is how often Observe stores a machine's View: the per-second
// `link` lines of the NDJSON events (docs/cli.md).
const viewEvery = time.Second

// flushSize is the buffered amount that triggers a write regardless of time:
// large enough that a simulation writing thousands of records a millisecond
// makes few system calls.
const flushSize = 64 << 10

// Writer appends records to a recording. It is safe for use by several
// goroutines (a demo records every machine from its own feed); each record
// is written whole or, after a failed write, not at all.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	file *os.File // when the Writer created the file: truncated back to whole records after a failed write
	// Now is the wall clock used only to decide when to flush; tests replace it.
	now       func() time.Time
	lastFlush time.Time

	buf     []byte
	ends    []int // offsets in buf where a record ends
	written int64 // bytes of whole records already in w
	err     error // sticky: after a failed write nothing more is written

	lastView map[string]time.Duration
	closed   bool
}

// Create creates (or truncates) the file at path and writes the header.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	w, err := newWriter(f, h, time.Now)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.file = f
	return w, nil
}

// newWriter writes the header to w and returns a Writer appending to it;
// now is the clock that decides when to flush. The header's Magic, Format
// and Protocol are filled in.
func newWriter(w io.Writer, h Header, now func() time.Time) (*Writer, error) {
	h.Magic, h.Format, h.Protocol = magic, format, feed.ProtocolVersion
	body, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	wr := &Writer{w: w, now: now, lastFlush: now(), lastView: map[string]time.Duration{}}
	wr.buf = appendLine(wr.buf, kindHeader, body)
	wr.ends = append(wr.ends, len(wr.buf))
	// The header goes out at once: a recording that exists names its version.
	if err := wr.flushLocked(); err != nil {
		return nil, err
	}
	return wr, nil
}

// event appends one published event at time at from machine from.
func (w *Writer) event(at time.Duration, from string, e feed.Event) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return w.eventLine(at, from, raw)
}

// eventLine appends an event already encoded as its NDJSON object (without
// the newline), so a replay prints exactly the bytes a sink printed.
func (w *Writer) eventLine(at time.Duration, from string, raw []byte) error {
	return w.add(KindEvent, envelope{AtNs: int64(at), From: from, Event: raw})
}

// View appends a machine's picture.
func (w *Writer) View(v feed.View) error {
	return w.add(KindView, envelope{AtNs: int64(v.At), From: v.Self, View: recordOf(&v)})
}

// Command appends a command that machine from executed at time at (S13).
func (w *Writer) Command(at time.Duration, from string, c Command) error {
	return w.add(KindCommand, envelope{AtNs: int64(at), From: from, Command: &c})
}

// Observe is the recorder as a sink of a live feed: it appends the update's
// events, the machine's View at most once a viewEvery (and on the last
// update), and flushes. An event's time is its t_ms when the driver set one,
// else the View's time.
func (w *Writer) Observe(u feed.Update) {
	self := u.View.Self
	for _, e := range u.Events {
		at := u.View.At
		if h := feed.Head(e); h.TMs != nil {
			at = units.FromMillis(*h.TMs)
		}
		w.event(at, self, e)
	}
	w.mu.Lock()
	last, seen := w.lastView[self]
	due := !seen || u.View.At-last >= viewEvery || u.Done
	if due {
		w.lastView[self] = u.View.At
	}
	w.mu.Unlock()
	if due {
		w.View(u.View)
	}
	w.Flush()
}

func (w *Writer) add(kind Kind, env envelope) error {
	body, err := json.Marshal(env)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return os.ErrClosed
	}
	w.buf = appendLine(w.buf, kind, body)
	w.ends = append(w.ends, len(w.buf))
	if len(w.buf) >= flushSize || w.now().Sub(w.lastFlush) >= flushEvery {
		return w.flushLocked()
	}
	return nil
}

// Flush writes out every buffered record.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	w.lastFlush = w.now()
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		// A full disk or a failing device: keep what is whole and stop. If
		// we own the file, cut a half-written record off so the file ends on
		// a record boundary; a reader copes either way.
		whole := 0
		for _, e := range w.ends {
			if e <= n {
				whole = e
			}
		}
		if w.file != nil && whole < n {
			w.file.Truncate(w.written + int64(whole))
		}
		w.written += int64(whole)
		w.err = err
		w.buf, w.ends = w.buf[:0], w.ends[:0]
		return err
	}
	w.written += int64(n)
	w.buf, w.ends = w.buf[:0], w.ends[:0]
	return nil
}

// Err is the first write error, if any: after it the recording holds every
// record before the failure and nothing after.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes and, if the Writer created the file, closes it.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.flushLocked()
	w.closed = true
	if w.file != nil {
		if cerr := w.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
