package netcore

import (
	"testing"
)

// Issue 15, finding 4 (L4): a LinkReport is a peer's own count of what it
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
	// missing never passes expected: DecodeLinkReport refuses that.
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
