package netcore

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Token: 1, Sender: 0, Channel: ChannelControl},
		{Flags: flagSealed, Token: 0xFFFFFFFFFFFFFFFF, Sender: 0xFFFE, Channel: ChannelReliable, Seq: 0xFFFFFFFF, Packet: 7},
		{Token: 42, Sender: 3, Channel: ChannelUnreliable, Seq: 9},
		{Token: 42, Sender: 3, Channel: ChannelGlobal, Seq: 9, Packet: 1 << 31},
	} {
		b := make([]byte, HeaderLen)
		PutHeader(b, h)
		got, err := DecodeHeader(b)
		if err != nil || got != h {
			t.Errorf("%+v → %x → %+v, %v", h, b, got, err)
		}
	}
	// Byte by byte, as docs/protocol.md shows it.
	b := make([]byte, HeaderLen)
	PutHeader(b, Header{Token: 0x0807060504030201, Sender: 0x0A09, Channel: ChannelGlobal, Seq: 0x0E0D0C0B, Packet: 0x1211100F})
	want := []byte{'L', 'S', 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3, 0, 11, 12, 13, 14, 15, 16, 17, 18}
	if !bytes.Equal(b, want) {
		t.Errorf("header bytes %v, want %v", b, want)
	}
}

func TestDecodersRejectMalformedInput(t *testing.T) {
	hdr := func(mod func([]byte)) []byte {
		b := make([]byte, HeaderLen)
		PutHeader(b, Header{Token: 1, Channel: ChannelReliable, Seq: 1, Packet: 1})
		mod(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", hdr(func([]byte) {})[:HeaderLen-1], errShort},
		{"magic", hdr(func(b []byte) { b[0] = 'X' }), errMagic},
		{"version", hdr(func(b []byte) { b[2] = 1 }), errVersion},
		{"flag bits", hdr(func(b []byte) { b[3] = 0x80 }), errReserved},
		{"reserved byte", hdr(func(b []byte) { b[15] = 1 }), errReserved},
		{"channel", hdr(func(b []byte) { b[14] = 4 }), errChannel},
		{"numbered control", hdr(func(b []byte) { b[14] = 0 }), errField},
		{"unreliable with packet", hdr(func(b []byte) { b[14] = 2 }), errField},
	} {
		if _, err := DecodeHeader(c.b); !errors.Is(err, c.want) {
			t.Errorf("header %s: %v, want %v", c.name, err, c.want)
		}
	}
	full := bytes.Repeat([]byte{1}, fragmentPayload)
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"record header short", func() error { _, _, _, err := NextRecord([]byte{RecData, 1}); return err }},
		{"record longer than body", func() error { _, _, _, err := NextRecord([]byte{RecData, 5, 0, 1}); return err }},
		{"data short", func() error { _, err := DecodeData([]byte{1, 2, 3}); return err }},
		{"data oversize", func() error { _, err := DecodeData(make([]byte, 4+MaxDataPayload+1)); return err }},
		{"fragment short", func() error { _, err := decodeFragment(make([]byte, 7)); return err }},
		{"fragment count 1", func() error { _, err := decodeFragment(fragPayload(1, 0, 1, nil)); return err }},
		{"fragment index ≥ count", func() error { _, err := decodeFragment(fragPayload(1, 3, 3, nil)); return err }},
		{"fragment count too large", func() error { _, err := decodeFragment(fragPayload(1, 0, maxFragments+1, full)); return err }},
		{"fragment not full", func() error { _, err := decodeFragment(fragPayload(1, 0, 2, full[1:])); return err }},
		{"fragment too long", func() error { _, err := decodeFragment(fragPayload(1, 1, 2, append(full, 1))); return err }},
		{"fragment message too long", func() error {
			_, err := decodeFragment(fragPayload(1, maxFragments-1, maxFragments, full))
			return err
		}},
		{"ack short", func() error { _, err := decodeAck([]byte{1, 0, 0}); return err }},
		{"ack channel", func() error { _, err := decodeAck(payloadOf(appendAck(nil, ChannelUnreliable, 0, 1))); return err }},
		{"ack count", func() error {
			p := payloadOf(appendAck(nil, ChannelReliable, 0, 1, 2))
			p[1] = 3
			_, err := decodeAck(p)
			return err
		}},
		{"link report length", func() error { _, err := decodeLinkReport(make([]byte, 15)); return err }},
		{"link report missing > expected", func() error {
			_, err := decodeLinkReport(payloadOf(AppendLinkReport(nil, LinkReport{Expected: 1, Missing: 2})))
			return err
		}},
		{"keep-alive short", func() error { _, err := decodeKeepAlive([]byte{1, 0, 0, 0}); return err }},
		{"keep-alive flags", func() error { _, err := decodeKeepAlive([]byte{1, 0, 0, 0, 2}); return err }},
		{"keep-alive oversize", func() error { _, err := decodeKeepAlive(make([]byte, 5+maxKeepAlivePayload+1)); return err }},
		{"keep-alive reply length", func() error { _, err := decodeKeepAliveReply(make([]byte, 5)); return err }},
		{"hello role", func() error { _, err := decodeHello([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 0}); return err }},
		{"hello name length", func() error {
			p := payloadOf(must(AppendHello(nil, Hello{Role: RolePlayer, Name: "ab"})))
			p[9] = 3
			_, err := decodeHello(p)
			return err
		}},
		{"hello name not UTF-8", func() error {
			p := payloadOf(must(AppendHello(nil, Hello{Role: RolePlayer, Name: "ab"})))
			p[10] = 0xFF
			_, err := decodeHello(p)
			return err
		}},
		{"hello name too long", func() error {
			p := append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1, MaxNameLen + 1}, bytes.Repeat([]byte("a"), MaxNameLen+1)...)
			_, err := decodeHello(p)
			return err
		}},
		{"challenge length", func() error { _, err := decodeChallenge(make([]byte, 23)); return err }},
		{"response short", func() error { _, err := decodeResponse(make([]byte, 25)); return err }},
		{"welcome unassigned", func() error {
			_, err := decodeWelcome(payloadOf(appendWelcome(nil, Welcome{Peer: PeerUnassigned, Token: 1})))
			return err
		}},
		{"welcome token 0", func() error { _, err := decodeWelcome(payloadOf(appendWelcome(nil, Welcome{Peer: 1}))); return err }},
		{"refuse length", func() error { _, err := decodeRefuse(make([]byte, 10)); return err }},
	} {
		if err := c.f(); err == nil {
			t.Errorf("%s: decoded without error", c.name)
		}
	}
	if _, err := AppendHello(nil, Hello{Role: 9}); err == nil {
		t.Error("encoded a Hello with an unknown role")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func payloadOf(rec []byte) []byte {
	_, p, _, err := NextRecord(rec)
	if err != nil {
		panic(err)
	}
	return p
}

func fragPayload(id uint32, index, count uint16, data []byte) []byte {
	return payloadOf(appendFragment(nil, fragment{MsgID: id, Index: index, Count: count, Payload: data}))
}

func TestRecordsRoundTrip(t *testing.T) {
	cookie := [CookieLen]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, c := range []struct {
		rec    []byte
		typ    uint8
		decode func([]byte) (any, error)
		want   any
	}{
		{AppendData(nil, Data{MsgID: 9, Payload: []byte("hi")}), RecData,
			func(p []byte) (any, error) { return DecodeData(p) }, Data{MsgID: 9, Payload: []byte("hi")}},
		{appendFragment(nil, fragment{MsgID: 1, Index: 1, Count: 2, Payload: []byte("x")}), recFragment,
			func(p []byte) (any, error) { return decodeFragment(p) }, fragment{MsgID: 1, Index: 1, Count: 2, Payload: []byte("x")}},
		{AppendLinkReport(nil, LinkReport{Expected: 1 << 40, Missing: 3}), recLinkReport,
			func(p []byte) (any, error) { return decodeLinkReport(p) }, LinkReport{Expected: 1 << 40, Missing: 3}},
		{appendKeepAlive(nil, keepAlive{ID: 0x04030201, WantReply: true, Payload: []byte{0x24}}), recKeepAlive,
			func(p []byte) (any, error) { return decodeKeepAlive(p) }, keepAlive{ID: 0x04030201, WantReply: true, Payload: []byte{0x24}}},
		{appendKeepAliveReply(nil, keepAliveReply{ID: 0x04030201}), recKeepAliveReply,
			func(p []byte) (any, error) { return decodeKeepAliveReply(p) }, keepAliveReply{ID: 0x04030201}},
		{must(AppendHello(nil, Hello{Nonce: 5, Role: RoleObserver, Name: "Zoë"})), recHello,
			func(p []byte) (any, error) { return decodeHello(p) }, Hello{Nonce: 5, Role: RoleObserver, Name: "Zoë"}},
		{appendChallenge(nil, Challenge{Nonce: 6, Cookie: cookie}), recChallenge,
			func(p []byte) (any, error) { return decodeChallenge(p) }, Challenge{Nonce: 6, Cookie: cookie}},
		{must(AppendResponse(nil, Response{Nonce: 7, Cookie: cookie, Role: RolePlayer, Name: ""})), recResponse,
			func(p []byte) (any, error) { return decodeResponse(p) }, Response{Nonce: 7, Cookie: cookie, Role: RolePlayer}},
		{appendWelcome(nil, Welcome{Nonce: 8, Peer: 4, Token: 99}), recWelcome,
			func(p []byte) (any, error) { return decodeWelcome(p) }, Welcome{Nonce: 8, Peer: 4, Token: 99}},
		{AppendRefuse(nil, Refuse{Nonce: 9, Reason: RefuseFull}), recRefuse,
			func(p []byte) (any, error) { return decodeRefuse(p) }, Refuse{Nonce: 9, Reason: RefuseFull}},
	} {
		typ, p, rest, err := NextRecord(c.rec)
		if err != nil || typ != c.typ || len(rest) != 0 {
			t.Fatalf("record %x: type %x rest %d err %v", c.rec, typ, len(rest), err)
		}
		got, err := c.decode(p)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("type %#x: got %+v, %v; want %+v", c.typ, got, err, c.want)
		}
	}
	a, err := decodeAck(payloadOf(appendAck(nil, ChannelReliable, 77, 1, 2, 3)))
	if err != nil || a.Channel != ChannelReliable || a.Cumulative != 77 || a.Len() != 3 || a.Packet(2) != 3 {
		t.Errorf("ack %+v, %v", a, err)
	}
}

func TestUnknownRecordTypesAreSkippedSilently(t *testing.T) {
	a, b := newPair(t, nil)
	body := append([]byte{0x7F, 3, 0, 'n', 'e', 'w'}, AppendData(nil, Data{MsgID: 0, Payload: []byte("known")})...)
	b.ep.Receive(0, addrA, raw(Header{Token: token, Sender: peerA, Channel: ChannelUnreliable}, body))
	b.ep.Receive(0, addrA, raw(Header{Token: token, Sender: peerA}, []byte{0x7E, 0, 0}))
	if len(b.got) != 1 || string(b.got[0].msg) != "known" {
		t.Errorf("delivered %+v, want the known record", b.got)
	}
	if r := b.ep.Rejected(); r != (RejectCounts{}) {
		t.Errorf("unknown records counted as rejects: %+v", r)
	}
	_ = a
}

func TestNoDatagramAbove1400AndEveryMessageArrives_Q5(t *testing.T) {
	sizes := []int{0, 1, MaxDataPayload, MaxDataPayload + 1, 2 * fragmentPayload, 2*fragmentPayload + 1, 100000, maxMessage}
	for _, key := range [][]byte{nil, []byte("k")} {
		a, b := newPair(t, func(_ PeerID, c *Config) { c.Key = key })
		now := time.Duration(0)
		var want []delivery
		for _, ch := range []Channel{ChannelReliable, ChannelUnreliable, ChannelGlobal} {
			for _, n := range sizes {
				msg := make([]byte, n)
				for i := range msg {
					msg[i] = byte(i*7 + n)
				}
				if err := a.ep.Send(now, peerB, ch, msg); err != nil {
					t.Fatal(err)
				}
				want = append(want, delivery{from: peerA, ch: ch, msg: msg})
				// Run the exchange until both sides are quiet.
				for range 1000 {
					sentA, sentB := a.tr.sent, b.tr.sent
					for _, d := range append(sentA, sentB...) {
						if len(d.data) > MaxDatagram {
							t.Fatalf("key %q, %v message of %d: datagram of %d bytes", key, ch, n, len(d.data))
						}
					}
					if pass(a, b, now)+pass(b, a, now) == 0 {
						break
					}
					now += time.Millisecond
				}
			}
		}
		if len(b.got) != len(want) {
			t.Fatalf("key %q: delivered %d messages, want %d", key, len(b.got), len(want))
		}
		for i, d := range b.got {
			if d.ch != want[i].ch || !bytes.Equal(d.msg, want[i].msg) {
				t.Errorf("key %q: delivery %d: %v %d bytes, want %v %d bytes", key, i, d.ch, len(d.msg), want[i].ch, len(want[i].msg))
			}
		}
		st, _ := a.ep.Stats(peerB)
		// 1 each up to MaxDataPayload, then ceil(n / fragmentPayload):
		// 1+1+1 + 2+2+3 + 76 (100 000 B) + 787 (1 MiB).
		if want := uint64(1 + 1 + 1 + 2 + 2 + 3 + 76 + 787); st.Loss.Sent != want {
			t.Errorf("key %q: reliable datagrams sent %d, want %d (every fragment counts, L1)", key, st.Loss.Sent, want)
		}
	}
	if err := newPairEP(t).Send(0, peerB, ChannelReliable, make([]byte, maxMessage+1)); err != errMessageTooLarge {
		t.Errorf("oversize message: %v", err)
	}
}

func newPairEP(t *testing.T) *Endpoint { a, _ := newPair(t, nil); return a.ep }

func TestReassemblyIsBoundedInMemoryAndTime_Q5(t *testing.T) {
	_, b := newPair(t, nil)
	full := bytes.Repeat([]byte{7}, fragmentPayload)
	seq := uint32(0)
	send := func(ch Channel, id uint32, index, count uint16) {
		h := Header{Token: token, Sender: peerA, Channel: ch, Seq: seq}
		if ch == ChannelGlobal {
			h.Packet = seq
		}
		seq++
		b.ep.Receive(time.Duration(seq)*time.Millisecond, addrA, raw(h, appendFragment(nil, fragment{MsgID: id, Index: index, Count: count, Payload: full})))
	}
	// A flood of first halves of the largest messages.
	for id := range uint32(1000) {
		send(ChannelUnreliable, id+1, 0, maxFragments)
		if b.ep.budget.used > maxPartials*maxFragments*fragmentPayload {
			t.Fatalf("after %d half-messages: %d bytes held", id+1, b.ep.budget.used)
		}
	}
	l := b.ep.links[peerA]
	held := 0
	for _, p := range l.unrelAsm.parts {
		if p.inUse {
			held++
		}
	}
	if held != maxPartials {
		t.Errorf("%d partial messages held, want at most %d", held, maxPartials)
	}
	// Time: they go after the reassembly timeout.
	b.ep.Tick(time.Duration(seq)*time.Millisecond + minReassemblyTimeout)
	if b.ep.budget.used != 0 {
		t.Errorf("%d bytes still held after the timeout", b.ep.budget.used)
	}
	// The endpoint-wide budget holds across links and channels.
	b.ep.budget.limit = 3 * fragmentPayload
	send(ChannelGlobal, 1, 0, 2)
	send(ChannelGlobal, 2, 0, 2)
	if b.ep.budget.used > b.ep.budget.limit {
		t.Errorf("budget exceeded: %d > %d", b.ep.budget.used, b.ep.budget.limit)
	}
	// A complete message still gets through once room is back.
	b.ep.budget.limit = reassemblyBudget
	send(ChannelGlobal, 3, 1, 2)
	send(ChannelGlobal, 3, 0, 2)
	if n := len(b.got); n != 1 || len(b.got[0].msg) != 2*fragmentPayload {
		t.Errorf("delivered %d messages", n)
	}
}

func TestUnreliableDeliversOnlyNewerMessages_Q1(t *testing.T) {
	a, b := newPair(t, nil)
	for i := range 3 {
		a.ep.Send(0, peerB, ChannelUnreliable, fmt.Appendf(nil, "state %d", i))
	}
	ds := a.tr.take()
	for _, i := range []int{0, 2, 1, 2} { // 1 arrives after 2: worthless; 2 twice: once
		b.ep.Receive(0, addrA, ds[i].data)
	}
	var got []string
	for _, d := range b.got {
		got = append(got, string(d.msg))
	}
	if fmt.Sprint(got) != "[state 0 state 2]" {
		t.Errorf("delivered %q, want the newest states only", got)
	}
}

// The sizes docs/protocol.md states.
func TestProtocolSizesMatchTheDocument_Q5(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"HeaderLen", HeaderLen, 24},
		{"SealOverhead", SealOverhead, 32},
		{"MaxBody", maxBody, 1344},
		{"MaxDataPayload", MaxDataPayload, 1337},
		{"FragmentPayload", fragmentPayload, 1333},
		{"MaxFragments", maxFragments, 787},
		{"largest datagram", HeaderLen + SealOverhead + maxBody, MaxDatagram},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, docs/protocol.md says %d", c.name, c.got, c.want)
		}
	}
}

// Record types are wire numbers: pinned here so one can never be
// renumbered (S19), and the same as docs/protocol.md's table.
func TestRecordTypesAreStable_S19(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint8
	}{
		{"Hello", recHello, 0x01},
		{"Challenge", recChallenge, 0x02},
		{"Response", recResponse, 0x03},
		{"Welcome", recWelcome, 0x04},
		{"Refuse", recRefuse, 0x05},
		{"Data", RecData, 0x10},
		{"Fragment", recFragment, 0x11},
		{"Ack", RecAck, 0x20},
		{"LinkReport", recLinkReport, 0x21},
		{"KeepAlive", recKeepAlive, 0x22},
		{"KeepAliveReply", recKeepAliveReply, 0x23},
		{"CarriedAck", recCarriedAck, 0x24},
	} {
		if c.got != c.want {
			t.Errorf("record type %s = %#x, the wire says %#x", c.name, c.got, c.want)
		}
	}
}

// Refusal reasons are wire numbers: pinned here so one can never be
// renumbered (S19), and the same as docs/protocol.md's table. probe/live
// sends 5 and 6.
func TestRefuseReasonsAreStable_S19(t *testing.T) {
	for _, c := range []struct {
		name string
		got  RefuseReason
		want uint8
	}{
		{"RefuseFull", RefuseFull, 1},
		{"RefuseStarted", RefuseStarted, 2},
		{"RefuseBadCookie", RefuseBadCookie, 3},
		{"RefuseBadVersion", refuseBadVersion, 4},
		{"RefuseNameTaken", RefuseNameTaken, 5},
		{"RefuseBadName", RefuseBadName, 6},
	} {
		if uint8(c.got) != c.want {
			t.Errorf("%s = %d, the wire says %d", c.name, c.got, c.want)
		}
		rec := AppendRefuse(nil, Refuse{Nonce: 3, Reason: c.got})
		if m, err := decodeRefuse(payloadOf(rec)); err != nil || m.Reason != c.got || rec[len(rec)-1] != c.want {
			t.Errorf("%s: %x decodes to %+v, %v", c.name, rec, m, err)
		}
	}
	// A reason from a newer host is kept, not refused.
	if m, err := decodeRefuse(payloadOf(AppendRefuse(nil, Refuse{Nonce: 3, Reason: 200}))); err != nil || m.Reason != 200 {
		t.Errorf("unknown reason: %+v, %v", m, err)
	}
}
