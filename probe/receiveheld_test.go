package probe

import (
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// A datagram read with others after it (ReceiveHeld) runs no frame: the
// acks of the datagrams read with it leave before any frame's work (T2).
// The frames it makes due run at once all the same — the peer's next
// deadline is now — so a machine that takes every datagram held reaches
// each frame at the same virtual moment as one that takes them one by one.
func TestReceiveHeldRunsNoFrameAndItsFramesRunAtOnce_T2(t *testing.T) {
	const last = 300
	reached := func(heldOn bool) []time.Duration {
		w := newTruthWorld(t, 3, impair.Profile{Delay: 20 * time.Millisecond}, nil)
		held := 0
		if heldOn {
			w.held = func(to int, p *Peer, now time.Duration, from netip.AddrPort, d []byte) {
				if to != 0 {
					p.Receive(now, from, d)
					return
				}
				f := p.Frame()
				p.ReceiveHeld(now, from, d)
				if p.Frame() != f {
					t.Fatalf("ReceiveHeld at %v ran frames %d to %d", now, f, p.Frame())
				}
				if at, ok := p.NextDeadline(); p.started && (!ok || at > now) {
					t.Fatalf("after ReceiveHeld at %v the next deadline is %v (%v), want at once", now, at, ok)
				}
				held++
			}
		}
		var at []time.Duration
		w.start()
		for f := 1; f <= last; f += 50 {
			w.runUntilFrame(t, f)
			at = append(at, w.sched.Now())
		}
		if heldOn && held < last {
			t.Fatalf("%d datagrams taken held by frame %d", held, last)
		}
		return at
	}
	plain, held := reached(false), reached(true)
	for i := range plain {
		if d := held[i] - plain[i]; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("frame %d: reached at %v taking datagrams held, %v one by one", 1+50*i, held[i], plain[i])
		}
	}
}
