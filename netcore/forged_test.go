package netcore

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// Forged datagrams on a session without a key: a machine that knows the
// session token and can send from a member's address. It can always forge
// a whole message — only a key (Q7) stops that — but a datagram that
// carries nothing, or numbers far from the real ones, must not be able to
// take a real packet's place or wreck a link's windows.

// forgeries are datagrams from peerA's address with the right token that
// carry no message: a header alone on every channel, and records on a
// channel they do not belong to. On the reliable channel each bears packet
// number 0 and datagram number 0, the numbers of A's first real datagram.
func forgeries() map[string][]byte {
	hdr := func(ch Channel) Header { return Header{Token: token, Sender: peerA, Channel: ch} }
	ack := appendAck(nil, ChannelReliable, 0, 0)
	carried := appendAckRecord(nil, recCarriedAck, ChannelReliable, 0, 0)
	report := AppendLinkReport(nil, LinkReport{Expected: 5})
	hello := must(AppendHello(nil, Hello{Nonce: 1, Role: RolePlayer, Name: "x"}))
	data := AppendData(nil, Data{MsgID: 0, Payload: []byte("forged")})
	return map[string][]byte{
		"header only, control":           raw(hdr(ChannelControl), nil),
		"header only, reliable":          raw(hdr(ChannelReliable), nil),
		"header only, unreliable":        raw(hdr(ChannelUnreliable), nil),
		"header only, global":            raw(hdr(ChannelGlobal), nil),
		"ack on the reliable channel":    raw(hdr(ChannelReliable), ack),
		"report on the reliable channel": raw(hdr(ChannelReliable), report),
		"hello on the reliable channel":  raw(hdr(ChannelReliable), hello),
		"report on the unreliable one":   raw(hdr(ChannelUnreliable), report),
		"ack on the global channel":      raw(hdr(ChannelGlobal), appendAck(nil, ChannelGlobal, 0, 0)),
		"carried ack alone, reliable":    raw(hdr(ChannelReliable), carried),
		"carried ack alone, unreliable":  raw(hdr(ChannelUnreliable), carried),
		"carried ack on control":         raw(hdr(ChannelControl), carried),
		"data on the control channel":    raw(hdr(ChannelControl), data),
		"hello in a session datagram":    raw(Header{Token: token, Sender: peerA}, hello),
		"handshake datagram, no records": raw(Header{Sender: PeerUnassigned}, nil),
	}
}

func TestDatagramWithoutAMessageCannotTakeAPacketsPlace_T11(t *testing.T) {
	for name, d := range forgeries() {
		t.Run(name, func(t *testing.T) {
			a, b := newPair(t, func(_ PeerID, c *Config) {
				c.Handshake = func(time.Duration, netip.AddrPort, PeerID, HandshakeMsg) {
					t.Error("an empty handshake datagram reached the session layer")
				}
			})
			before, _ := b.ep.Stats(peerA)
			b.ep.Receive(ms(1), addrA, d)
			if r := b.ep.Rejected(); r != (RejectCounts{Malformed: 1}) {
				t.Errorf("rejected %+v, want one malformed", r)
			}
			if len(b.tr.sent) != 0 || len(b.got) != 0 {
				t.Errorf("answered with %d datagrams, delivered %d", len(b.tr.sent), len(b.got))
			}
			if after, _ := b.ep.Stats(peerA); after != before {
				t.Errorf("stats moved: %+v → %+v", before, after)
			}
			// The real first datagram of every channel still arrives and is
			// delivered: nothing took its packet or datagram number.
			a.ep.Send(ms(2), peerB, ChannelReliable, []byte("real reliable"))
			a.ep.Send(ms(2), peerB, ChannelUnreliable, []byte("real unreliable"))
			a.ep.Send(ms(2), peerB, ChannelGlobal, []byte("real global"))
			pass(a, b, ms(3))
			if len(b.got) != 3 {
				t.Fatalf("delivered %d of the 3 real messages: %+v", len(b.got), b.got)
			}
			if n := countChannel(t, b.tr.sent, ChannelControl); n != 2 {
				t.Errorf("%d acks for the real reliable and global datagrams, want 2", n)
			}
		})
	}
}

// forgedRun is a session from A to B with every seventh datagram of A's
// lost and resent; forge, if given, returns datagrams to throw at B (from
// A's address, with the token) every tenth round. It returns what B
// delivered and both ends' stats.
func forgedRun(t *testing.T, forge func(b *side) [][]byte) (got []delivery, bst, ast LinkStats, rej RejectCounts, forged, bSent int) {
	t.Helper()
	a, b := newPair(t, nil)
	now := time.Duration(0)
	for round := range 400 {
		now = time.Duration(round) * 10 * time.Millisecond
		if round < 300 {
			a.ep.Send(now, peerB, ChannelReliable, fmt.Appendf(nil, "r%d", round))
			a.ep.Send(now, peerB, ChannelUnreliable, fmt.Appendf(nil, "u%d", round))
			if round%5 == 0 {
				a.ep.Send(now, peerB, ChannelGlobal, fmt.Appendf(nil, "g%d", round))
			}
		}
		a.ep.Tick(now)
		for i, d := range a.tr.take() {
			if (i+round)%7 != 3 {
				b.ep.Receive(now, addrA, d.data)
			}
		}
		if forge != nil && round%10 == 5 {
			for _, d := range forge(b) {
				b.ep.Receive(now, addrA, d)
				forged++
			}
		}
		b.ep.Tick(now)
		bSent += len(b.tr.sent)
		pass(b, a, now+5*time.Millisecond)
	}
	bst, _ = b.ep.Stats(peerA)
	ast, _ = a.ep.Stats(peerB)
	return b.got, bst, ast, b.ep.Rejected(), forged, bSent
}

func TestForgedFarNumbersChangeNothing_L2(t *testing.T) {
	quiet, qb, qa, _, _, qSent := forgedRun(t, nil)
	k := uint32(0)
	got, fb, fa, rej, n, fSent := forgedRun(t, func(b *side) [][]byte {
		k++
		l := b.ep.links[peerA]
		rel, unrel, glob := l.windows[ChannelReliable].highest, l.windows[ChannelUnreliable].highest, l.windows[ChannelGlobal].highest
		next := l.relIn.next
		data := AppendData(nil, Data{MsgID: l.unrelIn.last + 1, Payload: []byte("forged")})
		d := func(ch Channel, seq, packet uint32) []byte {
			return raw(Header{Token: token, Sender: peerA, Channel: ch, Seq: seq, Packet: packet}, data)
		}
		return [][]byte{
			// Datagram numbers far ahead and far behind, on packets B has
			// (a new one would be evidence; see the outage test).
			d(ChannelReliable, rel+MaxJump+k, next-1),
			d(ChannelReliable, rel-MaxJump-k, next-1),
			d(ChannelUnreliable, unrel+1<<31-k, 0),
			d(ChannelUnreliable, unrel+MaxJump+1, 0),
			d(ChannelUnreliable, unrel-1<<20, 0),
			d(ChannelGlobal, glob+5000*k, l.globIn.highest+1),
			// Reliable packet numbers no conforming sender has in flight.
			d(ChannelReliable, rel+1, next+sendWindow),
			d(ChannelReliable, rel+1, next-sendWindow-1),
			d(ChannelReliable, rel+1, next+1<<31),
		}
	})
	if len(got) != len(quiet) {
		t.Fatalf("delivered %d messages with forgeries, %d without", len(got), len(quiet))
	}
	for i := range got {
		if string(got[i].msg) != string(quiet[i].msg) || got[i].ch != quiet[i].ch || got[i].at != quiet[i].at {
			t.Fatalf("delivery %d: %q on %v at %v, without forgeries %q on %v at %v",
				i, got[i].msg, got[i].ch, got[i].at, quiet[i].msg, quiet[i].ch, quiet[i].at)
		}
	}
	if fb != qb || fa != qa {
		t.Errorf("stats moved:\nB %+v\n  %+v\nA %+v\n  %+v", qb, fb, qa, fa)
	}
	if fSent != qSent {
		t.Errorf("B sent %d datagrams with forgeries, %d without: it answered a forgery", fSent, qSent)
	}
	if rej != (RejectCounts{Window: uint64(n)}) || n != 360 {
		t.Errorf("rejected %+v, want all %d forgeries as Window", rej, n)
	}
	if qb.Loss.Missing == 0 || len(quiet) < 300 {
		t.Fatalf("the quiet run measured no loss (%+v) or delivered little (%d)", qb.Loss, len(quiet))
	}
}

// outage passes nothing from A to B while A sends and retries, until A's
// datagram number on ch is more than MaxJump past what B has seen.
func outage(t *testing.T, a *side, ch Channel, now time.Duration) time.Duration {
	t.Helper()
	l := a.ep.links[peerB]
	for start := l.txSeq[ch]; l.txSeq[ch]-start < MaxJump+100; {
		d, ok := a.ep.NextDeadline()
		if !ok {
			t.Fatal("nothing left to send in the outage")
		}
		now = d
		a.ep.Tick(now)
		drop(a)
	}
	return now
}

// A genuine outage: the peer sent over 10 000 datagrams that never came
// (or, on the other channels, more than MaxJump), then traffic resumes.
// Every window comes back to the peer's numbers, the gap counts as loss,
// and messages are delivered again.
func TestGenuineLongOutageRecovers_L2(t *testing.T) {
	t.Run("unreliable: 10 000 lost in a row", func(t *testing.T) {
		a, b := newPair(t, nil)
		send := func(n int, lose bool) {
			for i := range n {
				a.ep.Send(ms(1), peerB, ChannelUnreliable, fmt.Appendf(nil, "%d", i))
				if lose {
					drop(a)
				} else {
					pass(a, b, ms(1))
				}
			}
		}
		send(100, false)
		send(10000, true)
		send(100, false)
		// The first resyncAfter-1 after the outage are held back; the
		// one that completes the run and all after it are delivered.
		if len(b.got) != 200-(resyncAfter-1) {
			t.Errorf("delivered %d of 200, want all but %d", len(b.got), resyncAfter-1)
		}
		if r := b.ep.Rejected(); r != (RejectCounts{Window: resyncAfter - 1}) {
			t.Errorf("rejected %+v", r)
		}
		// Sequences 0..10199; judged up to the newest-33; the 10 000 lost
		// are missing and nothing else (the held ones did arrive).
		if st, _ := b.ep.Stats(peerA); st.Loss.Expected != 10199-lossWindow || st.Loss.Missing != 10000 {
			t.Errorf("loss %+v, want %d expected, 10000 missing", st.Loss, 10199-lossWindow)
		}
	})
	for _, keyed := range []bool{true, false} {
		name := "reliable, keyed: the first new packet is believed at once"
		var mod func(PeerID, *Config)
		held := uint64(0)
		if keyed {
			mod = func(_ PeerID, c *Config) { c.Key = []byte("outage key") }
		} else {
			// Without a key a packet number is as forgeable as a
			// datagram number: the run of resends believes.
			name, held = "reliable, unkeyed: believed after a run of resends", resyncAfter-1
		}
		t.Run(name, func(t *testing.T) { reliableOutage(t, mod, held) })
	}
	t.Run("reliable: only the acks were lost", func(t *testing.T) {
		a, b := newPair(t, nil)
		for i := range 100 {
			a.ep.Send(0, peerB, ChannelReliable, fmt.Appendf(nil, "%03d", i))
		}
		pass(a, b, ms(10)) // B has everything; its acks are lost
		drop(b)
		now := ms(10)
		for start := a.ep.links[peerB].txSeq[ChannelReliable]; a.ep.links[peerB].txSeq[ChannelReliable]-start < MaxJump+100; {
			// Every resend arrives at B, whose acks all go missing, the
			// first ones after B's window saw its last datagram included.
			now, _ = a.ep.NextDeadline()
			a.ep.Tick(now)
			drop(a)
		}
		for st, _ := a.ep.Stats(peerB); st.InFlight > 0; st, _ = a.ep.Stats(peerB) {
			now, _ = a.ep.NextDeadline()
			a.ep.Tick(now)
			pass(a, b, now)
			pass(b, a, now)
		}
		if len(b.got) != 100 {
			t.Errorf("delivered %d, want each of the 100 once", len(b.got))
		}
		// Resends of packets B has are no evidence: resyncAfter-1 held.
		if r := b.ep.Rejected(); r != (RejectCounts{Window: resyncAfter - 1}) {
			t.Errorf("rejected %+v", r)
		}
	})
	t.Run("global: datagram and packet numbers both moved on", func(t *testing.T) {
		a, b := newPair(t, nil)
		a.ep.Send(0, peerB, ChannelGlobal, []byte("before"))
		pass(a, b, ms(10))
		pass(b, a, ms(20))
		// The outage outlives the global timeout many times over: A gives
		// up on more than MaxJump packets.
		now := ms(20)
		for i := range MaxJump + 300 {
			if err := a.ep.Send(now, peerB, ChannelGlobal, []byte("lost")); err != nil {
				t.Fatal(err)
			}
			if i%sendWindow == sendWindow-1 {
				now += defaultGlobalTimeout
				a.ep.Tick(now)
			}
			drop(a)
		}
		now += defaultGlobalTimeout
		a.ep.Tick(now)
		drop(a)
		if st, _ := a.ep.Stats(peerB); st.GlobalInFlight != 0 || st.Global.Dropped <= MaxJump {
			t.Fatalf("A still has %d global packets in flight, dropped %d", st.GlobalInFlight, st.Global.Dropped)
		}
		a.ep.Send(now, peerB, ChannelGlobal, []byte("after"))
		for st, _ := a.ep.Stats(peerB); st.GlobalInFlight > 0; st, _ = a.ep.Stats(peerB) {
			pass(a, b, now)
			pass(b, a, now)
			now, _ = a.ep.NextDeadline()
			a.ep.Tick(now)
		}
		if len(b.got) != 2 || string(b.got[1].msg) != "after" {
			t.Errorf("delivered %d: %+v", len(b.got), b.got)
		}
		if r := b.ep.Rejected(); r != (RejectCounts{Window: resyncAfter - 1}) {
			t.Errorf("rejected %+v", r)
		}
	})
}

// A forger that knows a link's numbers gets its own message delivered — only
// a key (Q7) stops that — but cannot lock the link: real traffic is
// delivered again at once, or after resyncAfter-1 held back when it had to
// move the loss window.
func TestLinkHealsAfterABelievedForgery_L2(t *testing.T) {
	setup := func(t *testing.T, ch Channel) (a, b *side, l *link) {
		a, b = newPair(t, nil)
		for i := range 10 {
			a.ep.Send(0, peerB, ch, fmt.Appendf(nil, "before %d", i))
		}
		pass(a, b, ms(1))
		pass(b, a, ms(2))
		b.got = nil
		return a, b, b.ep.links[peerA]
	}
	deliverAfter := func(t *testing.T, a, b *side, ch Channel, n int) []string {
		for i := range n {
			a.ep.Send(ms(10), peerB, ch, fmt.Appendf(nil, "after %d", i))
		}
		pass(a, b, ms(11))
		var got []string
		for _, d := range b.got {
			got = append(got, string(d.msg))
		}
		return got
	}
	forged := []byte("forged")
	t.Run("unreliable message id far ahead", func(t *testing.T) {
		a, b, l := setup(t, ChannelUnreliable)
		w := &l.windows[ChannelUnreliable]
		b.ep.Receive(ms(5), addrA, raw(Header{Token: token, Sender: peerA, Channel: ChannelUnreliable, Seq: w.highest + 1},
			AppendData(nil, Data{MsgID: l.unrelIn.last + 1<<30, Payload: forged})))
		got := deliverAfter(t, a, b, ChannelUnreliable, 10)
		// The forgery took the next datagram number: that real one is a
		// duplicate; every later one is delivered.
		if len(got) != 10 || got[0] != "forged" || got[1] != "after 1" || got[9] != "after 9" {
			t.Errorf("delivered %q", got)
		}
	})
	t.Run("global packet number far ahead", func(t *testing.T) {
		a, b, l := setup(t, ChannelGlobal)
		b.ep.Receive(ms(5), addrA, raw(Header{Token: token, Sender: peerA, Channel: ChannelGlobal,
			Seq: l.windows[ChannelGlobal].highest + 100, Packet: l.globIn.highest + 1<<30},
			AppendData(nil, Data{Payload: forged})))
		got := deliverAfter(t, a, b, ChannelGlobal, 10)
		if len(got) != 11 || got[0] != "forged" || got[1] != "after 0" {
			t.Errorf("delivered %q", got)
		}
	})
	t.Run("a run of datagram numbers far ahead", func(t *testing.T) {
		a, b, l := setup(t, ChannelUnreliable)
		at := l.windows[ChannelUnreliable].highest + 1<<30
		for i := range uint32(resyncAfter) {
			b.ep.Receive(ms(5), addrA, raw(Header{Token: token, Sender: peerA, Channel: ChannelUnreliable, Seq: at + i},
				AppendData(nil, Data{MsgID: l.unrelIn.last + 1<<30 + i, Payload: forged})))
		}
		got := deliverAfter(t, a, b, ChannelUnreliable, 10)
		// The window believed the run; the real numbers are now far
		// behind, and a run of them brings it back.
		want := []string{"forged", "after 3", "after 4", "after 5", "after 6", "after 7", "after 8", "after 9"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("delivered %q, want %q", got, want)
		}
		if r := b.ep.Rejected(); r != (RejectCounts{Window: 2 * (resyncAfter - 1)}) {
			t.Errorf("rejected %+v", r)
		}
	})
	t.Run("a forged first arrival", func(t *testing.T) {
		a, b := newPair(t, nil)
		b.ep.Receive(0, addrA, raw(Header{Token: token, Sender: peerA, Channel: ChannelUnreliable, Seq: 1 << 31},
			AppendData(nil, Data{MsgID: 1 << 31, Payload: forged})))
		got := deliverAfter(t, a, b, ChannelUnreliable, 10)
		if len(got) != 1+10-(resyncAfter-1) || got[1] != fmt.Sprintf("after %d", resyncAfter-1) {
			t.Errorf("delivered %q", got)
		}
		if st, _ := b.ep.Stats(peerA); st.Loss != (Loss{}) {
			t.Errorf("loss %+v: starting over counted something", st.Loss)
		}
	})
}

// reliableOutage: A's reliable datagrams are lost for more than MaxJump
// datagram numbers, then traffic resumes; B delivers all 150 messages in
// order with the outage counted as loss, holding back held datagrams.
func reliableOutage(t *testing.T, mod func(PeerID, *Config), held uint64) {
	a, b := newPair(t, mod)
	for i := range 50 {
		a.ep.Send(0, peerB, ChannelReliable, fmt.Appendf(nil, "%03d", i))
	}
	pass(a, b, ms(10))
	pass(b, a, ms(20))
	for i := 50; i < 150; i++ {
		a.ep.Send(ms(30), peerB, ChannelReliable, fmt.Appendf(nil, "%03d", i))
	}
	drop(a)
	now := outage(t, a, ChannelReliable, ms(30))
	lost := a.ep.links[peerB].txSeq[ChannelReliable] - 50
	for st, _ := a.ep.Stats(peerB); st.InFlight > 0; st, _ = a.ep.Stats(peerB) {
		d, _ := a.ep.NextDeadline()
		now = d
		a.ep.Tick(now)
		pass(a, b, now)
		pass(b, a, now)
	}
	if len(b.got) != 150 {
		t.Fatalf("delivered %d of 150", len(b.got))
	}
	for i, d := range b.got {
		if string(d.msg) != fmt.Sprintf("%03d", i) {
			t.Fatalf("delivery %d is %q", i, d.msg)
		}
	}
	if r := b.ep.Rejected(); r != (RejectCounts{Window: held}) {
		t.Errorf("rejected %+v, want %d held back", r, held)
	}
	if st, _ := b.ep.Stats(peerA); st.Loss.Missing != uint64(lost) {
		t.Errorf("loss %+v, want the %d datagrams of the outage missing", st.Loss, lost)
	}
}
