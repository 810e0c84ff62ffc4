package netcore

import (
	"bytes"
	"testing"
	"time"
)

// Coalescing (docs/protocol.md): the ack Receive owes rides on a
// datagram the owner sends the same peer before Receive returns, and is
// never held past it.

// echoPair is a capture pair whose B answers every reliable message at once
// from its DeliverFunc, on channel ch.
func echoPair(t *testing.T, ch Channel) (a, b *side) {
	a, b = newPair(t, nil)
	ep := b.ep
	ep.deliver = func(now time.Duration, from PeerID, c Channel, msg []byte) {
		b.record(now, from, c, msg)
		if c == ChannelReliable {
			if err := ep.Send(now, from, ch, append([]byte("re:"), msg...)); err != nil {
				t.Error(err)
			}
		}
	}
	return a, b
}

// recordTypes lists the record types of an unsealed datagram.
func recordTypes(t *testing.T, d []byte) (Header, []uint8, []record) {
	h, recs := parse(t, d)
	var typs []uint8
	for _, r := range recs {
		typs = append(typs, r.typ)
	}
	return h, typs, recs
}

func TestAckRidesOnTheReplyOfTheSameWakeUp_T1(t *testing.T) {
	for _, ch := range []Channel{ChannelReliable, ChannelUnreliable, ChannelGlobal} {
		t.Run(ch.String(), func(t *testing.T) {
			a, b := echoPair(t, ch)
			a.ep.Send(0, peerB, ChannelReliable, []byte("ping"))
			pass(a, b, ms(10))
			out := b.tr.take()
			if len(out) != 1 {
				t.Fatalf("B sent %d datagrams for one message and its echo, want 1", len(out))
			}
			h, typs, recs := recordTypes(t, out[0].data)
			if h.Channel != ch || len(typs) != 2 || typs[1] != recCarriedAck {
				t.Fatalf("B's datagram: channel %v records %x, want %v with a message and a CarriedAck", h.Channel, typs, ch)
			}
			ack, err := decodeAck(recs[1].payload)
			if err != nil || ack.Channel != ChannelReliable || ack.Len() != 1 || ack.Packet(0) != 0 || ack.Cumulative != 1 {
				t.Fatalf("coalesced ack %+v err %v", ack, err)
			}
			// A takes the sample from it — a clean round trip, T2 —
			// and frees the packet; the reply is delivered.
			b.tr.sent = append(b.tr.sent, out...)
			pass(b, a, ms(30))
			st, _ := a.ep.Stats(peerB)
			if st.InFlight != 0 || st.Estimate != Measured || st.SRTT != ms(30) {
				t.Errorf("A after the echo: in flight %d, %v, SRTT %v; want 0, measured, 30ms", st.InFlight, st.Estimate, st.SRTT)
			}
			if len(a.got) != 1 || !bytes.Equal(a.got[0].msg, []byte("re:ping")) || a.got[0].ch != ch {
				t.Errorf("A delivered %+v", a.got)
			}
			if r := a.ep.Rejected(); r != (RejectCounts{}) {
				t.Errorf("A rejected %+v", r)
			}
		})
	}
}

// Without a reply the ack leaves alone, inside the same Receive (T1):
// coalescing never waits for data.
func TestAckWithoutAReplyLeavesBeforeReceiveReturns_T1(t *testing.T) {
	a, b := newPair(t, nil)
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	a.ep.Send(0, peerB, ChannelGlobal, []byte("y"))
	for i, d := range a.tr.take() {
		b.ep.Receive(ms(10), addrA, d.data)
		out := b.tr.take()
		if len(out) != 1 {
			t.Fatalf("arrival %d: %d datagrams out, want the ack", i, len(out))
		}
		if h, typs, _ := recordTypes(t, out[0].data); h.Channel != ChannelControl || len(typs) != 1 || typs[0] != RecAck {
			t.Fatalf("arrival %d: %v %x, want a control Ack", i, h.Channel, typs)
		}
	}
}

// A reply to another peer, or one too big to take the ack, leaves the ack
// to go alone — still before Receive returns.
func TestAckThatDoesNotFitGoesAlone_T1(t *testing.T) {
	a, b := newPair(t, nil)
	big := bytes.Repeat([]byte{7}, MaxDataPayload) // fills the body
	ep := b.ep
	ep.deliver = func(now time.Duration, from PeerID, c Channel, msg []byte) {
		ep.Send(now, from, ChannelUnreliable, big)
	}
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	pass(a, b, ms(10))
	out := b.tr.take()
	if len(out) != 2 {
		t.Fatalf("%d datagrams, want the full reply and the ack", len(out))
	}
	for _, d := range out {
		if len(d.data) > MaxDatagram {
			t.Fatalf("datagram of %d bytes (Q5)", len(d.data))
		}
	}
	if h, typs, _ := recordTypes(t, out[1].data); h.Channel != ChannelControl || typs[0] != RecAck {
		t.Fatalf("second datagram %v %x, want the ack alone", h.Channel, typs)
	}
	b.tr.sent = out
	pass(b, a, ms(20))
	if st, _ := a.ep.Stats(peerB); st.InFlight != 0 || st.SRTT != ms(20) {
		t.Errorf("A: in flight %d SRTT %v", st.InFlight, st.SRTT)
	}
}

// With a key the coalesced ack is sealed with the message and counted in
// the sealed size bound.
func TestAckCoalescesUnderTheSeal_Q7(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	a, b := newPair(t, func(_ PeerID, c *Config) { c.Key = key })
	ep := b.ep
	ep.deliver = func(now time.Duration, from PeerID, c Channel, msg []byte) {
		ep.Send(now, from, ChannelReliable, msg)
	}
	a.ep.Send(0, peerB, ChannelReliable, []byte("sealed"))
	pass(a, b, ms(10))
	if n := len(b.tr.sent); n != 1 {
		t.Fatalf("B sent %d datagrams, want 1", n)
	}
	pass(b, a, ms(40))
	st, _ := a.ep.Stats(peerB)
	if st.InFlight != 0 || st.SRTT != ms(40) || a.ep.Rejected() != (RejectCounts{}) {
		t.Errorf("A: in flight %d SRTT %v rejected %+v", st.InFlight, st.SRTT, a.ep.Rejected())
	}
}

// A keep-alive sent from DeliverFunc is a control datagram: the owed ack
// rides on it as a plain Ack (L2: neither is numbered).
func TestAckRidesOnAKeepAliveAsAPlainAck_L2(t *testing.T) {
	a, b := newPair(t, nil)
	ep := b.ep
	ep.deliver = func(now time.Duration, from PeerID, c Channel, msg []byte) {
		if err := ep.SendUnnumbered(now, from, []byte("hi"), false); err != nil {
			t.Error(err)
		}
	}
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	pass(a, b, ms(10))
	out := b.tr.take()
	if len(out) != 1 {
		t.Fatalf("%d datagrams, want 1", len(out))
	}
	if h, typs, _ := recordTypes(t, out[0].data); h.Channel != ChannelControl || len(typs) != 2 || typs[0] != recKeepAlive || typs[1] != RecAck {
		t.Fatalf("%v %x, want a control KeepAlive with an Ack", h.Channel, typs)
	}
	b.tr.sent = out
	pass(b, a, ms(25))
	if st, _ := a.ep.Stats(peerB); st.InFlight != 0 || st.SRTT != ms(25) || a.ep.Totals().Loss.Expected != 0 {
		t.Errorf("A: in flight %d SRTT %v totals %+v", st.InFlight, st.SRTT, a.ep.Totals())
	}
}

// A CarriedAck is an Ack's bytes under type 0x24 (docs/protocol.md; the
// type never changes meaning, S19).
func TestCarriedAckIsAnAckUnderItsOwnType_S19(t *testing.T) {
	got := appendAckRecord(nil, recCarriedAck, ChannelReliable, 0x04030201, 0x08070605)
	want := []byte{0x24, 10, 0, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8}
	if !bytes.Equal(got, want) {
		t.Fatalf("CarriedAck % x, want % x", got, want)
	}
	plain := appendAck1(nil, ChannelReliable, 0x04030201, 0x08070605)
	if plain[0] != RecAck || !bytes.Equal(plain[1:], got[1:]) {
		t.Fatalf("Ack % x differs from the CarriedAck beyond its type", plain)
	}
}
