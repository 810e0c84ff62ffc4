package simworld

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe"
)

// RunUntil stops as soon as its condition holds, and otherwise at its
// limit, with the clock on the limit.
func TestRunUntil(t *testing.T) {
	w := New(1, impair.Profile{})
	fired := false
	w.At(30*time.Millisecond, func() { fired = true })
	if !w.RunUntil(time.Second, func() bool { return fired }) || w.Now() != 30*time.Millisecond {
		t.Fatalf("fired %v at %v, want true at 30ms", fired, w.Now())
	}
	if w.RunUntil(time.Second, func() bool { return false }) || w.Now() != 1030*time.Millisecond {
		t.Fatalf("a condition that never holds ran to %v, want 1.03s", w.Now())
	}
	w.RunFor(time.Second)
	if w.Now() != 2030*time.Millisecond {
		t.Fatalf("RunFor(1s) ended at %v", w.Now())
	}
}

// A Recorder keeps what it passes on only while Keep is set, and a copy:
// the sender may reuse its buffer.
func TestRecorder(t *testing.T) {
	w := New(1, impair.Profile{})
	got := 0
	to := w.Net.Attach(Addr(2), func(time.Duration, netip.AddrPort, []byte) { got++ })
	_, h := w.Attach(1)
	r := &Recorder{Inner: h.Node()}
	p := []byte("one")
	_ = r.Send(to.LocalAddr(), p)
	r.Keep = true
	_ = r.Send(to.LocalAddr(), p)
	p[0] = 'x'
	w.RunFor(time.Second)
	if got != 2 || len(r.Sent) != 1 || string(r.Sent[0].Data) != "one" || r.Sent[0].To != Addr(2) {
		t.Fatalf("delivered %d, kept %+v", got, r.Sent)
	}
}

// Record's hooks write through their pointers, so a test that resets a
// machine's events or checksums keeps collecting into the new ones.
func TestRecord(t *testing.T) {
	var events []probe.Event
	cks := map[int]uint32{}
	sink, onFrame := Record(&events, &cks)
	sink.Emit("a", &probe.MessageEvent{Text: "hello"})
	events = nil
	sink.Emit("a", &probe.MessageEvent{Text: "again"})
	onFrame(3, 7)
	if m := Messages(events); !slices.Equal(m, []string{"again"}) || cks[3] != 7 {
		t.Fatalf("messages %v, checksums %v", m, cks)
	}
}
