package netcore

import (
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
	ack := AppendAck(nil, ChannelReliable, 0, 0)
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
		"ack on the global channel":      raw(hdr(ChannelGlobal), AppendAck(nil, ChannelGlobal, 0, 0)),
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
