package simworld

import (
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// RunUntil stops as soon as its condition holds, and otherwise at its
// limit, with the clock on the limit.
func TestRunUntil(t *testing.T) {
	w := New(1, impair.Profile{})
	fired := false
	w.Sched.At(30*time.Millisecond, func() { fired = true })
	if !w.RunUntil(time.Second, func() bool { return fired }) || w.Now() != 30*time.Millisecond {
		t.Fatalf("fired %v at %v, want true at 30ms", fired, w.Now())
	}
	if w.RunUntil(time.Second, func() bool { return false }) || w.Now() != 1030*time.Millisecond {
		t.Fatalf("a condition that never holds ran to %v, want 1.03s", w.Now())
	}
	w.Sched.RunUntil(w.Now() + time.Second)
	if w.Now() != 2030*time.Millisecond {
		t.Fatalf("a second more ended at %v", w.Now())
	}
}

// A Recorder keeps what it passes on only while Keep is set, and a copy:
// the sender may reuse its buffer.
func TestRecorder(t *testing.T) {
	w := New(1, impair.Profile{})
	got := 0
	to := w.Net.Attach(addr(2), func(time.Duration, netip.AddrPort, []byte) { got++ })
	_, h := w.Attach(1)
	r := &Recorder{Inner: h.Node()}
	p := []byte("one")
	_ = r.Send(to.LocalAddr(), p)
	r.Keep = true
	_ = r.Send(to.LocalAddr(), p)
	p[0] = 'x'
	w.Sched.RunUntil(w.Now() + time.Second)
	if got != 2 || len(r.Sent) != 1 || string(r.Sent[0].Data) != "one" || r.Sent[0].To != addr(2) {
		t.Fatalf("delivered %d, kept %+v", got, r.Sent)
	}
}

// Every machine gets seeds of its own, and the same ones in every run of
// the same world.
func TestSeeds(t *testing.T) {
	w := New(5, impair.Profile{})
	s0, r0 := w.Seeds(0)
	s1, r1 := w.Seeds(1)
	again, r0again := New(5, impair.Profile{}).Seeds(0)
	if s0 == s1 || s0 != again {
		t.Fatalf("seeds %d, %d, and %d again", s0, s1, again)
	}
	if a, b, c := r0.Uint64(), r1.Uint64(), r0again.Uint64(); a == b || a != c {
		t.Fatalf("first draws %d, %d, and %d again", a, b, c)
	}
}
