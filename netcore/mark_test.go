package netcore

import (
	"fmt"
	"testing"
	"time"
)

// Delivered follows the acks of what was sent before the mark alone: a
// message sent after it, never acked, does not hold it; one sent before
// it and still in flight, or still in the backlog, does.
func TestDeliveredFollowsTheMark(t *testing.T) {
	a, b := newPair(t, nil)
	now := 10 * time.Millisecond
	for _, m := range []string{"one", "two"} {
		if err := a.ep.Send(now, peerB, ChannelReliable, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	mark, ok := a.ep.ReliableMark(peerB)
	if !ok {
		t.Fatal("no mark on a link")
	}
	before := a.tr.take()
	if err := a.ep.Send(now, peerB, ChannelReliable, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if a.ep.Delivered(peerB, mark) {
		t.Fatal("delivered before anything arrived")
	}
	drop(a) // "after" is lost
	for _, d := range before {
		b.ep.Receive(now, addrA, d.data)
	}
	if pass(b, a, now+time.Millisecond) == 0 {
		t.Fatal("no acks")
	}
	if st, _ := a.ep.Stats(peerB); !a.ep.Delivered(peerB, mark) || st.InFlight != 1 {
		t.Fatalf("delivered %v with %d in flight, want delivered with \"after\" alone in flight", a.ep.Delivered(peerB, mark), st.InFlight)
	}
	if _, ok := a.ep.ReliableMark(PeerID(99)); ok || !a.ep.Delivered(PeerID(99), mark) {
		t.Fatal("a peer without a link has a mark, or holds one up")
	}
}

func TestDeliveredWaitsForTheBacklog(t *testing.T) {
	a, b := newPair(t, nil)
	now := 10 * time.Millisecond
	for i := range sendWindow + 3 {
		if err := a.ep.Send(now, peerB, ChannelReliable, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := a.ep.Stats(peerB); st.Backlog != 3 {
		t.Fatalf("backlog %d, want 3", st.Backlog)
	}
	mark, _ := a.ep.ReliableMark(peerB)
	for round := 1; round <= 3; round++ {
		now += time.Millisecond
		pass(a, b, now)
		pass(b, a, now)
		st, _ := a.ep.Stats(peerB)
		got := a.ep.Delivered(peerB, mark)
		// Round 1 acks the window and sends the backlog; round 2 acks it.
		if want := round >= 2; got != want {
			t.Fatalf("round %d: delivered %v with %d in flight and %d waiting, want %v", round, got, st.InFlight, st.Backlog, want)
		}
	}
}
