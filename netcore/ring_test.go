package netcore

import (
	"fmt"
	"testing"
)

// The send window's ring grows by need: packets in flight when
// it grows — acked out of order or not — keep their bodies, numbers and
// retry times, so what is resent after a growth is what was sent (T8).
func TestSendRingGrowsWithPacketsInFlight_T8(t *testing.T) {
	a, b := newPair(t, nil)
	msg := func(i int) []byte { return fmt.Appendf(nil, "message %03d", i) }
	for i := range minSlots {
		a.ep.Send(0, peerB, ChannelReliable, msg(i))
	}
	first := a.tr.take()
	// B gets all but packet 0: A's packets 1..7 are acked out of order,
	// not yet passed by oldest.
	for _, d := range first[1:] {
		b.ep.Receive(ms(5), addrA, d.data)
	}
	pass(b, a, ms(10))
	if st, _ := a.ep.Stats(peerB); st.InFlight != minSlots {
		t.Fatalf("in flight %d, want %d (oldest still 0)", st.InFlight, minSlots)
	}
	// More than the first ring holds: it grows (twice) with all that in it.
	const n = 3 * minSlots
	for i := minSlots; i < n; i++ {
		a.ep.Send(ms(20), peerB, ChannelReliable, msg(i))
	}
	if got := len(a.ep.links[peerB].rel.slots); got != 4*minSlots {
		t.Fatalf("ring of %d slots for %d in flight, want %d", got, n, 4*minSlots)
	}
	drop(a) // every new one lost too
	// Every retry is due: packet 0 and the 16 new ones go again, whole.
	a.ep.Tick(ms(5000))
	pass(a, b, ms(5010))
	pass(b, a, ms(5020))
	if len(b.got) != n {
		t.Fatalf("B delivered %d of %d", len(b.got), n)
	}
	for i, d := range b.got {
		if string(d.msg) != string(msg(i)) {
			t.Fatalf("delivery %d is %q, want %q", i, d.msg, msg(i))
		}
	}
	if st, _ := a.ep.Stats(peerB); st.InFlight != 0 || st.Loss.Retransmitted != 1+n-minSlots {
		t.Fatalf("A: in flight %d, retransmitted %d; want 0, %d", st.InFlight, st.Loss.Retransmitted, 1+n-minSlots)
	}
	// Steady state after: the grown ring is reused, bodies from spare.
	for i := n; i < n+3*sendWindow; i++ {
		a.ep.Send(ms(6000), peerB, ChannelReliable, msg(i))
		pass(a, b, ms(6001))
		pass(b, a, ms(6002))
	}
	if got := len(a.ep.links[peerB].rel.slots); got != 4*minSlots {
		t.Fatalf("ring grew to %d with one packet in flight at a time", got)
	}
	if len(b.got) != n+3*sendWindow || string(b.got[len(b.got)-1].msg) != string(msg(n+3*sendWindow-1)) {
		t.Fatalf("B delivered %d", len(b.got))
	}
}

// A full window still holds sendWindow packets: the ring reaches it.
func TestSendRingReachesTheWindow_T11(t *testing.T) {
	a, _ := newPair(t, nil)
	for i := range sendWindow + 5 {
		if err := a.ep.Send(0, peerB, ChannelReliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := a.ep.Stats(peerB)
	if st.InFlight != sendWindow || len(a.ep.links[peerB].rel.slots) != sendWindow || len(a.tr.take()) != sendWindow {
		t.Fatalf("in flight %d, ring %d; want %d each", st.InFlight, len(a.ep.links[peerB].rel.slots), sendWindow)
	}
}
