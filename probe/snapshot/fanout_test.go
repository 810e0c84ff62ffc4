package snapshot

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestSetNextMatchesEncode: a state set once and sent to many receivers
// with Next (each payload written once per base and shared by receivers
// on that base) is, byte for byte, what a sender of its own for
// each receiver writes with encode — where no payload is ever shared —
// across receivers that ack every update, some, or none (Q2, Q4), and
// states that change or stay.
func TestSetNextMatchesEncode(t *testing.T) {
	tb := telemetryTable
	rng := rand.New(rand.NewPCG(16, 64))
	const receivers = 9
	shared := newSender(tb)
	alone := make([]*Sender[Telemetry], receivers)
	for q := range alone {
		alone[q] = newSender(tb)
	}
	rcvA := make([]*Receiver[Telemetry], receivers)
	rcvS := make([]*Receiver[Telemetry], receivers)
	for q := range receivers {
		rcvA[q], rcvS[q] = newReceiver(tb), newReceiver(tb)
	}
	var st Telemetry
	links := make([]Link, 12)
	for i := range links {
		links[i].SRTTUs = uint32(1000 + i)
	}
	st.SetLinks(links)
	var a, s []byte
	for tick := range 400 {
		if rng.IntN(4) != 0 { // a quarter of the ticks send the same state again
			mutate(rng, tb, &st)
		}
		shared.Set(&st)
		for q := range receivers {
			a = alone[q].encode(a[:0], q, &st)
			s = shared.Next(s[:0], q)
			if !bytes.Equal(a, s) {
				t.Fatalf("tick %d, receiver %d: Next wrote %x, encode %x", tick, q, s, a)
			}
			// Receiver q acks with chance q/receivers: 0 never acks,
			// the last almost always.
			fa, errA := rcvA[q].Apply(a)
			gs, fs, errS := rcvS[q].Decode(s)
			if errA != nil || errS != nil || !fa || !fs {
				t.Fatalf("tick %d, receiver %d: %v %v %v %v", tick, q, errA, errS, fa, fs)
			}
			if *gs != st {
				t.Fatalf("tick %d, receiver %d: decoded state is not the one set", tick, q)
			}
			if rng.IntN(receivers) < q {
				alone[q].Acked(q, rcvA[q].Ack())
				shared.Acked(q, rcvS[q].Ack())
			}
		}
	}
}

// TestApplyBuildsStateOnDemand: Apply takes updates in without building
// the state, and State then holds the newest — not the last applied, when
// a late one came after it — and an error changes nothing.
func TestApplyBuildsStateOnDemand(t *testing.T) {
	snd, rcv := NewTelemetrySender(), NewTelemetryReceiver()
	if _, ok := rcv.State(); ok {
		t.Fatal("a receiver with nothing says it holds a state")
	}
	var states [4]Telemetry
	var msgs [4][]byte
	for i := range states {
		states[i].Frame = uint32(100 * (i + 1))
		states[i].SetLinks([]Link{{Peer: 2, SRTTUs: uint32(500 * (i + 1))}})
		msgs[i] = snd.encode(nil, 1, &states[i]) // no acks: each a full update
	}
	for _, i := range []int{0, 2, 1} { // 1 arrives late, after 2
		fresh, err := rcv.Apply(msgs[i])
		if err != nil || fresh != (i != 1) {
			t.Fatalf("update %d: fresh %v, err %v", i, fresh, err)
		}
	}
	if st, ok := rcv.State(); !ok || *st != states[2] {
		t.Fatalf("State after 0, 2, 1 is frame %d, want the newest (frame %d)", st.Frame, states[2].Frame)
	}
	if _, err := rcv.Apply(msgs[3][:3]); err == nil {
		t.Fatal("a truncated update was taken")
	}
	if st, _ := rcv.State(); *st != states[2] {
		t.Fatal("a failed Apply changed the state")
	}
	if _, err := rcv.Apply(msgs[3]); err != nil {
		t.Fatal(err)
	}
	if st, _ := rcv.State(); *st != states[3] {
		t.Fatalf("State is frame %d, want %d", st.Frame, states[3].Frame)
	}
}

// TestNextBeforeSetPanics: Next has no state to send before a Set; that is
// a programming mistake, not an input a network can cause.
func TestNextBeforeSetPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Next before Set did not panic")
		}
	}()
	NewTelemetrySender().Next(nil, 1)
}
