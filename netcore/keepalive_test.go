package netcore

import (
	"bytes"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// aliveEvery is the live session's keep-alive period.
const aliveEvery = time.Second

// TestKeepAlivesAreNotCounted_L2: while only keep-alives flow — both ways,
// with and without replies, for a minute — no loss total on either end
// moves, every datagram is an unnumbered control datagram, and the
// payloads still reach the DeliverFunc (on the control channel).
func TestKeepAlivesAreNotCounted_L2(t *testing.T) {
	a, b := newPair(t, nil)
	for now := time.Duration(0); now < time.Minute; now += aliveEvery {
		if err := a.ep.SendUnnumbered(now, peerB, []byte{0x24}, true); err != nil {
			t.Fatal(err)
		}
		if err := b.ep.SendUnnumbered(now, peerA, []byte("ping"), false); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*side{a, b} {
			for _, d := range s.tr.sent {
				if h, _ := parse(t, d.data); h.Channel != ChannelControl || h.Seq != 0 || h.Packet != 0 {
					t.Fatalf("keep-alive went out as %+v, want unnumbered control", h)
				}
			}
		}
		pass(a, b, now+ms(10))
		pass(b, a, now+ms(20)) // b's ping and its reply to a
		pass(a, b, now+ms(30))
		a.ep.Tick(now + ms(500))
		b.ep.Tick(now + ms(500))
		pass(a, b, now+ms(510)) // LinkReports
		pass(b, a, now+ms(510))
	}
	for _, s := range []*side{a, b} {
		other := peerB
		if s == b {
			other = peerA
		}
		st, _ := s.ep.Stats(other)
		if st.Loss != (Loss{}) || st.Bad || st.InFlight != 0 {
			t.Errorf("%d: loss %+v bad %v in flight %d after a minute of keep-alives, want all zero", s.ep.Self(), st.Loss, st.Bad, st.InFlight)
		}
		if tot := s.ep.Totals(); tot.Loss != (Loss{}) || tot.Global != (GlobalStats{}) {
			t.Errorf("%d: totals %+v", s.ep.Self(), tot)
		}
		if r := s.ep.Rejected(); r != (RejectCounts{}) {
			t.Errorf("%d: rejected %+v", s.ep.Self(), r)
		}
	}
	if len(b.got) != 60 || b.got[0].ch != ChannelControl || !bytes.Equal(b.got[59].msg, []byte{0x24}) {
		t.Errorf("b delivered %d keep-alives (first %+v), want 60 on the control channel", len(b.got), b.got[0])
	}
	if len(a.got) != 60 || a.got[0].ch != ChannelControl || string(a.got[0].msg) != "ping" {
		t.Errorf("a delivered %d pings, want 60 on the control channel", len(a.got))
	}
}

// TestGameTrafficCountsAndKeepAlivesDoNot_L2: the same link carrying game
// traffic and keep-alives counts exactly the game traffic.
func TestGameTrafficCountsAndKeepAlivesDoNot_L2(t *testing.T) {
	a, b := newPair(t, nil)
	const n = 100
	for i := range n {
		now := time.Duration(i) * ms(33)
		a.ep.Send(now, peerB, ChannelReliable, []byte("frame"))
		a.ep.SendUnnumbered(now, peerB, []byte("alive"), true)
		pass(a, b, now+ms(5))
		pass(b, a, now+ms(10))
	}
	sa, _ := a.ep.Stats(peerB)
	sb, _ := b.ep.Stats(peerA)
	if sa.Loss.Sent != n || sa.Loss.Retransmitted != 0 {
		t.Errorf("a sent %d (%d resent), want the %d frames only", sa.Loss.Sent, sa.Loss.Retransmitted, n)
	}
	// L2: the newest 33 are not judged yet.
	if sb.Loss.Expected != n-33 || sb.Loss.Missing != 0 {
		t.Errorf("b expected %d missing %d, want %d and 0", sb.Loss.Expected, sb.Loss.Missing, n-33)
	}
}

// TestSilentPeerGoesBadThroughUnansweredKeepAlives_T11: with no reliable
// traffic at all, a peer that stops answering keep-alives goes bad one
// connection timeout after the first unanswered one — NextDeadline wakes
// the endpoint for it — and recovers, once, when a reply arrives.
func TestSilentPeerGoesBadThroughUnansweredKeepAlives_T11(t *testing.T) {
	log := &logRecorder{}
	a, b := newPair(t, func(_ PeerID, c *Config) {
		c.ConnTimeout = 2 * time.Second
		c.Logger = slog.New(log)
	})
	// Answered for 10 s: never bad.
	now := time.Duration(0)
	for ; now < 10*time.Second; now += aliveEvery {
		a.ep.SendUnnumbered(now, peerB, nil, true)
		pass(a, b, now+ms(5))
		pass(b, a, now+ms(10))
		runTicks(t, a, now+aliveEvery-1, func(time.Duration) { drop(a) })
	}
	if len(log.messages()) != 0 {
		t.Fatalf("answered keep-alives logged %q", log.messages())
	}
	// b falls silent at 10 s; a keeps sending every second.
	silent := now
	for ; now < 30*time.Second; now += aliveEvery {
		a.ep.SendUnnumbered(now, peerB, nil, true)
		checkDeadline(t, a.ep)
		if d, _ := a.ep.linkDeadline(a.ep.links[peerB]); now < silent+2*time.Second && d != silent+2*time.Second {
			t.Fatalf("at %v next deadline %v, want the moment it goes bad %v", now, d, silent+2*time.Second)
		}
		runTicks(t, a, now+aliveEvery-1, nil)
		drop(a)
	}
	if want := []string{"12s connection has gone bad"}; !slices.Equal(log.messages(), want) {
		t.Fatalf("log %q, want %q", log.messages(), want)
	}
	st, _ := a.ep.Stats(peerB)
	if !st.Bad || st.State != Bad || st.InFlight != 0 || st.Loss.Sent != 0 {
		t.Errorf("stats %+v, want bad through keep-alives alone", st)
	}
	// b answers again.
	a.ep.SendUnnumbered(now, peerB, nil, true)
	pass(a, b, now+ms(5))
	pass(b, a, now+ms(10))
	if want := []string{"12s connection has gone bad", "30.01s connection recovered"}; !slices.Equal(log.messages(), want) {
		t.Errorf("log %q, want %q", log.messages(), want)
	}
	if st, _ := a.ep.Stats(peerB); st.Bad {
		t.Error("still bad after the reply")
	}
	checkDeadline(t, a.ep)
}

// TestKeepAliveReplyNeedsAnIDInFlight_T11: a reply to an id that is not
// waiting (late after a later one was answered, or never sent) does not
// clear the silence.
func TestKeepAliveReplyNeedsAnIDInFlight_T11(t *testing.T) {
	a, _ := newPair(t, func(_ PeerID, c *Config) { c.ConnTimeout = 2 * time.Second })
	a.ep.SendUnnumbered(0, peerB, nil, true) // id 0
	a.ep.SendUnnumbered(ms(1), peerB, nil, true)
	reply := func(id uint32) []byte {
		return raw(Header{Token: token, Sender: peerB}, appendKeepAliveReply(nil, keepAliveReply{ID: id}))
	}
	a.ep.Receive(ms(2), addrB, reply(7)) // never sent
	a.ep.Tick(2 * time.Second)
	if st, _ := a.ep.Stats(peerB); !st.Bad {
		t.Fatal("a reply to an id never sent cleared the silence")
	}
	a.ep.Receive(3*time.Second, addrB, reply(1))
	if st, _ := a.ep.Stats(peerB); st.Bad {
		t.Fatal("a reply to the newest id in flight did not end it")
	}
	a.ep.SendUnnumbered(4*time.Second, peerB, nil, true) // id 2
	a.ep.Receive(4*time.Second, addrB, reply(0))         // late
	a.ep.Tick(6 * time.Second)
	if st, _ := a.ep.Stats(peerB); !st.Bad {
		t.Error("a late reply to an answered id cleared the new silence")
	}
}

// TestKeepAliveReplyIsNeverLarger: several KeepAlives in one datagram get
// one reply, no larger than the datagram that asked, so that a forged
// datagram gains no amplification.
func TestKeepAliveReplyIsNeverLarger(t *testing.T) {
	_, b := newPair(t, nil)
	var body []byte
	for i := range 4 {
		body = appendKeepAlive(body, keepAlive{ID: uint32(i), WantReply: true})
	}
	for _, c := range []struct {
		body []byte
		id   uint32
	}{{body, 3}, {appendKeepAlive(nil, keepAlive{ID: 9, WantReply: true}), 9}} {
		d := raw(Header{Token: token, Sender: peerA}, c.body)
		b.ep.Receive(0, addrA, d)
		out := b.tr.take()
		if len(out) != 1 {
			t.Fatalf("%d bytes in: %d replies, want 1", len(d), len(out))
		}
		if len(out[0].data) > len(d) {
			t.Errorf("%d bytes in, %d out", len(d), len(out[0].data))
		}
		_, recs := parse(t, out[0].data)
		r, err := decodeKeepAliveReply(recs[0].payload)
		if err != nil || len(recs) != 1 || recs[0].typ != recKeepAliveReply || r.ID != c.id {
			t.Errorf("reply %+v %v, want one echoing id %d", r, err, c.id)
		}
	}
	// Without wanting a reply: none.
	b.ep.Receive(0, addrA, raw(Header{Token: token, Sender: peerA}, appendKeepAlive(nil, keepAlive{ID: 1})))
	if n := len(b.tr.take()); n != 0 {
		t.Errorf("%d replies to a keep-alive that wanted none", n)
	}
}

// TestKeepAliveOnlyOnControl_L2: a keep-alive record on a numbered channel
// would take a real datagram's number: the datagram is malformed.
func TestKeepAliveOnlyOnControl_L2(t *testing.T) {
	_, b := newPair(t, nil)
	for _, rec := range [][]byte{appendKeepAlive(nil, keepAlive{ID: 1}), appendKeepAliveReply(nil, keepAliveReply{ID: 1})} {
		b.ep.Receive(0, addrA, raw(Header{Token: token, Sender: peerA, Channel: ChannelUnreliable}, rec))
	}
	if r := b.ep.Rejected(); r.Malformed != 2 || len(b.got) != 0 {
		t.Errorf("rejected %+v, delivered %d", r, len(b.got))
	}
	if st, _ := b.ep.Stats(peerA); st.Loss != (Loss{}) {
		t.Errorf("loss %+v", st.Loss)
	}
}

func TestSendUnnumberedErrors(t *testing.T) {
	a, _ := newPair(t, nil)
	if err := a.ep.SendUnnumbered(0, 9, nil, true); err != errUnknownPeer {
		t.Errorf("unknown peer: %v", err)
	}
	if err := a.ep.SendUnnumbered(0, peerB, make([]byte, maxKeepAlivePayload+1), true); err != errMessageTooLarge {
		t.Errorf("too large: %v", err)
	}
	if err := a.ep.SendUnnumbered(0, peerB, make([]byte, maxKeepAlivePayload), true); err != nil {
		t.Errorf("largest: %v", err)
	}
	if d := a.tr.take(); len(d) != 1 || len(d[0].data) != MaxDatagram-SealOverhead {
		t.Errorf("largest keep-alive: %d datagrams", len(d))
	}
}

// TestDeliverMayRemoveLinkDuringKeepAlive: the DeliverFunc may end the
// link; the rest of the datagram is then ignored and no reply goes out.
func TestDeliverMayRemoveLinkDuringKeepAlive(t *testing.T) {
	var ep *Endpoint
	tr := &capture{}
	calls := 0
	ep, err := NewEndpoint(Config{Self: peerB, Session: token}, tr, func(time.Duration, PeerID, Channel, []byte) {
		calls++
		ep.RemoveLink(peerA)
	})
	if err != nil {
		t.Fatal(err)
	}
	ep.AddLink(0, peerA, addrA, PublicKey{})
	body := appendKeepAlive(appendKeepAlive(nil, keepAlive{ID: 1, WantReply: true}), keepAlive{ID: 2, WantReply: true})
	ep.Receive(0, addrA, raw(Header{Token: token, Sender: peerA}, body))
	if calls != 1 || len(tr.sent) != 0 {
		t.Errorf("%d deliveries, %d sent after the link ended", calls, len(tr.sent))
	}
}

// TestKeepAliveBytes_S19 pins the records byte by byte, as
// docs/protocol.md shows them: record IDs never change meaning.
func TestKeepAliveBytes_S19(t *testing.T) {
	got := appendKeepAlive(nil, keepAlive{ID: 0x04030201, WantReply: true, Payload: []byte{0x24}})
	if want := []byte{0x22, 6, 0, 1, 2, 3, 4, 1, 0x24}; !bytes.Equal(got, want) {
		t.Errorf("KeepAlive % x, want % x", got, want)
	}
	got = appendKeepAliveReply(nil, keepAliveReply{ID: 0x04030201})
	if want := []byte{0x23, 4, 0, 1, 2, 3, 4}; !bytes.Equal(got, want) {
		t.Errorf("KeepAliveReply % x, want % x", got, want)
	}
}

// TestKeepAliveSealed_Q7: with a key, keep-alives and replies are sealed
// like every datagram, and still end the silence.
func TestKeepAliveSealed_Q7(t *testing.T) {
	a, b := newPair(t, func(_ PeerID, c *Config) { c.Key = []byte("pre-shared key") })
	if err := a.ep.SendUnnumbered(0, peerB, []byte("alive"), true); err != nil {
		t.Fatal(err)
	}
	for _, d := range a.tr.sent {
		if h, _ := DecodeHeader(d.data); h.Flags&flagSealed == 0 {
			t.Fatal("keep-alive not sealed")
		}
	}
	pass(a, b, ms(5))
	pass(b, a, ms(10))
	if len(b.got) != 1 || string(b.got[0].msg) != "alive" || a.ep.links[peerB].alive.waiting {
		t.Errorf("delivered %+v, still waiting %v", b.got, a.ep.links[peerB].alive.waiting)
	}
	if ra, rb := a.ep.Rejected(), b.ep.Rejected(); ra != (RejectCounts{}) || rb != (RejectCounts{}) {
		t.Errorf("rejected %+v %+v", ra, rb)
	}
}
