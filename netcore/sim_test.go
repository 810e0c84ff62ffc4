package netcore

import (
	"fmt"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// TestReliableOverLossySimnet is the acceptance run: 5 % loss each
// way, 10 000 reliable messages, on the simulated network. Every message
// arrives exactly once and in order (T8, T11), the receiver's observed
// inbound loss is within one point of 5 % (L2), and the sender's resend
// share is at least the observed loss (L8).
func TestReliableOverLossySimnet_L8(t *testing.T) {
	const msgs = 10000
	prof := impair.Profile{Delay: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.05}
	n, a, b := simPair(t, 7, prof, nil)
	s := n.Scheduler()
	// A game-like pace: a message every 5 ms.
	sent := 0
	var next func()
	next = func() {
		a.send(t, peerB, ChannelReliable, fmt.Appendf(nil, "msg %05d", sent))
		sent++
		if sent < msgs {
			s.After(5*time.Millisecond, next)
		}
	}
	s.At(0, next)
	s.RunUntil(msgs*5*time.Millisecond + 30*time.Second)

	if len(b.got) != msgs {
		t.Fatalf("delivered %d messages, want %d", len(b.got), msgs)
	}
	for i, d := range b.got {
		if want := fmt.Sprintf("msg %05d", i); string(d.msg) != want || d.ch != ChannelReliable {
			t.Fatalf("delivery %d = %q on %v, want %q in order", i, d.msg, d.ch, want)
		}
	}
	for m, c := range b.count {
		if c != 1 {
			t.Fatalf("%q delivered %d times", m, c)
		}
	}
	in, _ := b.ep.Stats(peerA)
	observed := float64(in.Loss.Missing) / float64(in.Loss.Expected)
	if observed < 0.04 || observed > 0.06 {
		t.Errorf("observed inbound loss %.4f (%d/%d), want 0.05 ± 0.01", observed, in.Loss.Missing, in.Loss.Expected)
	}
	out, _ := a.ep.Stats(peerB)
	resend := float64(out.Loss.Retransmitted) / float64(out.Loss.Sent)
	if resend < observed {
		t.Errorf("resend share %.4f below observed loss %.4f", resend, observed)
	}
	if out.InFlight != 0 || out.Backlog != 0 {
		t.Errorf("sender still has %d in flight, %d waiting", out.InFlight, out.Backlog)
	}
	near(t, "SRTT", out.SRTT, 40*time.Millisecond, 5*time.Millisecond)
	t.Logf("observed loss %.4f, resend share %.4f, SRTT %v RTTVAR %v RTO %v, sent %d", observed, resend,
		out.SRTT, out.RTTVAR, out.RTO, out.Loss.Sent)
}
