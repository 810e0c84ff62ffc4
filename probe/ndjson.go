package probe

import (
	"bufio"
	"encoding/json"
	"io"
)

// NDJSONWriter is the `--json` sink: every event of every update as one JSON
// object per line (CONTRACTS.md), flushed after each update so a reader
// sees lines as they happen. It writes events only; Views are for screens.
type NDJSONWriter struct {
	w   *bufio.Writer
	err error
}

// NewNDJSONWriter writes to w.
func NewNDJSONWriter(w io.Writer) *NDJSONWriter {
	return &NDJSONWriter{w: bufio.NewWriterSize(w, 32<<10)}
}

// Write writes u's events. After the first error it writes nothing more
// and keeps returning that error.
func (n *NDJSONWriter) Write(u Update) error {
	if n.err != nil {
		return n.err
	}
	for _, e := range u.Events {
		if err := n.WriteEvent(e); err != nil {
			return err
		}
	}
	if err := n.w.Flush(); err != nil && n.err == nil {
		n.err = err
	}
	return n.err
}

// WriteEvent writes one event without flushing.
func (n *NDJSONWriter) WriteEvent(e Event) error {
	if n.err != nil {
		return n.err
	}
	b, err := json.Marshal(e)
	if err != nil {
		n.err = err
		return err
	}
	b = append(b, '\n')
	if _, err := n.w.Write(b); err != nil {
		n.err = err
	}
	return n.err
}

// Flush writes out what is buffered.
func (n *NDJSONWriter) Flush() error {
	if n.err != nil {
		return n.err
	}
	n.err = n.w.Flush()
	return n.err
}
