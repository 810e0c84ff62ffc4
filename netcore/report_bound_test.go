package netcore

import (
	"testing"
)

// A LinkReport (L4) is a peer's own count of what it
// received from us, and the high-water mark of its reports stands for the
// rest of the link. One forged report claiming 4.6·10¹⁸ datagrams would pin
// peer_expected there for good; a report claiming more than we ever sent
// on the link's numbered channels (plus a margin for windows forgeries
// moved) is refused and counted, and real reports go on being taken.
func TestForgedLinkReportRefused_L4(t *testing.T) {
	a, b := newPair(t, nil)
	for i := range 10 {
		a.ep.Send(ms(float64(i)), peerB, ChannelUnreliable, []byte("frame"))
	}
	pass(a, b, ms(10))
	drop(b)
	report := func(r LinkReport) []byte {
		return raw(Header{Token: token, Sender: peerB, Channel: ChannelControl}, AppendLinkReport(nil, r))
	}
	a.ep.Receive(ms(11), addrB, report(LinkReport{Expected: 10, Missing: 1}))
	a.ep.Receive(ms(12), addrB, report(LinkReport{Expected: 4_600_000_000_000_000_000, Missing: 4_600_000_000_000_000_000}))
	a.ep.Receive(ms(13), addrB, report(LinkReport{Expected: 10 + reportMargin + 1}))
	st, _ := a.ep.Stats(peerB)
	if want := (PeerLoss{Expected: 10, Missing: 1, Known: true}); st.PeerLoss != want {
		t.Fatalf("peer loss %+v after the forged reports, want %+v (the real report's)", st.PeerLoss, want)
	}
	if r := a.ep.Rejected(); r != (RejectCounts{Implausible: 2}) {
		t.Fatalf("rejected %+v, want the two forged reports as implausible", r)
	}
	// A report at the margin is still taken (a window a forger moved), and
	// missing never passes expected: decodeLinkReport refuses that.
	a.ep.Receive(ms(14), addrB, report(LinkReport{Expected: 10 + reportMargin, Missing: 5}))
	a.ep.Receive(ms(15), addrB, report(LinkReport{Expected: 3, Missing: 4}))
	st, _ = a.ep.Stats(peerB)
	if want := (PeerLoss{Expected: 10 + reportMargin, Missing: 5, Known: true}); st.PeerLoss != want {
		t.Fatalf("peer loss %+v, want %+v", st.PeerLoss, want)
	}
	if r := a.ep.Rejected(); r != (RejectCounts{Implausible: 2, Malformed: 1}) {
		t.Fatalf("rejected %+v", r)
	}
}

// Without a key, one datagram on the reliable channel bearing the packet
// number B waits for and a datagram number 2^31-1 ahead would move B's
// window there at once — two billion datagrams judged missing — if a new
// packet number were taken as proof that the peer really sent it. It is
// held like any far number (the real packet still arrives, and is
// delivered), and the loss totals do not move.
func TestForgedReliableNumberHeld_L2(t *testing.T) {
	a, b := newPair(t, nil)
	for i := range 40 {
		a.ep.Send(ms(float64(i)), peerB, ChannelReliable, []byte("real"))
	}
	pass(a, b, ms(50))
	pass(b, a, ms(50))
	before, _ := b.ep.Stats(peerA)
	next := b.ep.links[peerA].relIn.next
	forged := raw(Header{Token: token, Sender: peerA, Channel: ChannelReliable, Seq: 39 + 1<<31 - 1, Packet: next},
		AppendData(nil, Data{MsgID: 1000, Payload: []byte("forged")}))
	b.ep.Receive(ms(60), addrA, forged)
	after, _ := b.ep.Stats(peerA)
	if after.Loss != before.Loss {
		t.Fatalf("loss %+v → %+v after one forged datagram", before.Loss, after.Loss)
	}
	if r := b.ep.Rejected(); r != (RejectCounts{Window: 1}) {
		t.Fatalf("rejected %+v, want the forgery held (window)", r)
	}
	a.ep.Send(ms(61), peerB, ChannelReliable, []byte("next real"))
	pass(a, b, ms(70))
	if got := b.got[len(b.got)-1]; string(got.msg) != "next real" || len(b.got) != 41 {
		t.Fatalf("delivered %d, last %q: the real packet did not take its place", len(b.got), got.msg)
	}
}
