package netcore

import (
	"bytes"
	"crypto/ecdh"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// Every decoder of outside bytes has a fuzz test: it must return an error
// or a value, never panic, and a value it returns must encode back to the
// bytes it came from (so the decoder accepts nothing the encoder would not
// write). Seeds: f.Add below and testdata/fuzz/<FuzzName>/.

func FuzzDecodeHeader(f *testing.F) {
	for _, h := range []Header{
		{Token: 1, Channel: ChannelControl},
		{Flags: flagSealed, Token: 7, Sender: 2, Channel: ChannelReliable, Seq: 3, Packet: 4},
		{Token: 7, Sender: PeerUnassigned, Channel: ChannelUnreliable, Seq: 1 << 31},
		{Token: 7, Sender: 2, Channel: ChannelGlobal, Seq: 5, Packet: 5},
	} {
		b := make([]byte, HeaderLen)
		PutHeader(b, h)
		f.Add(b)
	}
	f.Add([]byte("LS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			return
		}
		out := make([]byte, HeaderLen)
		PutHeader(out, h)
		if !bytes.Equal(out, b[:HeaderLen]) {
			t.Errorf("%x decodes to %+v, which encodes to %x", b[:HeaderLen], h, out)
		}
	})
}

func FuzzNextRecord(f *testing.F) {
	f.Add(AppendData(appendAck(nil, ChannelReliable, 1, 2), Data{MsgID: 1, Payload: []byte("x")}))
	f.Add([]byte{0x7F, 0, 0})
	f.Add([]byte{RecData, 0xFF, 0xFF, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var rebuilt []byte
		for rest := b; len(rest) > 0; {
			typ, p, r, err := NextRecord(rest)
			if err != nil {
				return
			}
			rebuilt = appendRecordHeader(rebuilt, typ, len(p))
			rebuilt = append(rebuilt, p...)
			rest = r
		}
		if !bytes.Equal(rebuilt, b) {
			t.Errorf("records of %x rebuild to %x", b, rebuilt)
		}
	})
}

// fuzzRecord checks one record decoder: decode p, and if it succeeds, the
// re-encoded record's payload must equal p.
func fuzzRecord[T any](f *testing.F, seeds [][]byte, decode func([]byte) (T, error), encode func(T) []byte) {
	for _, s := range seeds {
		f.Add(payloadOf(s))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := decode(p)
		if err != nil {
			return
		}
		again, err := decode(payloadOf(encode(m)))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Errorf("%x → %+v → %+v, %v", p, m, again, err)
		}
		if out := payloadOf(encode(m)); !bytes.Equal(out, p) {
			t.Errorf("%x decodes to %+v, which encodes to %x", p, m, out)
		}
	})
}

func FuzzDecodeData(f *testing.F) {
	fuzzRecord(f, [][]byte{AppendData(nil, Data{MsgID: 3, Payload: []byte("hello")})},
		DecodeData, func(d Data) []byte { return AppendData(nil, d) })
}

func FuzzDecodeFragment(f *testing.F) {
	full := bytes.Repeat([]byte{1}, fragmentPayload)
	fuzzRecord(f, [][]byte{
		appendFragment(nil, fragment{MsgID: 1, Index: 0, Count: 2, Payload: full}),
		appendFragment(nil, fragment{MsgID: 1, Index: 1, Count: 2, Payload: []byte("end")}),
	}, decodeFragment, func(m fragment) []byte { return appendFragment(nil, m) })
}

func FuzzDecodeAck(f *testing.F) {
	fuzzRecord(f, [][]byte{
		appendAck(nil, ChannelReliable, 5, 4),
		appendAck(nil, ChannelGlobal, 0, 1, 2, 3),
	}, decodeAck, func(a ack) []byte {
		ps := make([]uint32, a.Len())
		for i := range ps {
			ps[i] = a.Packet(i)
		}
		return appendAck(nil, a.Channel, a.Cumulative, ps...)
	})
}

func FuzzDecodeLinkReport(f *testing.F) {
	fuzzRecord(f, [][]byte{AppendLinkReport(nil, LinkReport{Expected: 100, Missing: 5})},
		decodeLinkReport, func(r LinkReport) []byte { return AppendLinkReport(nil, r) })
}

func FuzzDecodeKeepAlive(f *testing.F) {
	fuzzRecord(f, [][]byte{
		appendKeepAlive(nil, keepAlive{ID: 7, WantReply: true, Payload: []byte{0x24}}),
		appendKeepAlive(nil, keepAlive{ID: 1 << 31}),
	}, decodeKeepAlive, func(k keepAlive) []byte { return appendKeepAlive(nil, k) })
}

func FuzzDecodeKeepAliveReply(f *testing.F) {
	fuzzRecord(f, [][]byte{appendKeepAliveReply(nil, keepAliveReply{ID: 7})},
		decodeKeepAliveReply, func(r keepAliveReply) []byte { return appendKeepAliveReply(nil, r) })
}

func FuzzDecodeHello(f *testing.F) {
	fuzzRecord(f, [][]byte{must(AppendHello(nil, Hello{Nonce: 1, Role: RolePlayer, Name: "alice"}))},
		decodeHello, func(m Hello) []byte { return must(AppendHello(nil, m)) })
}

func FuzzDecodeChallenge(f *testing.F) {
	fuzzRecord(f, [][]byte{appendChallenge(nil, Challenge{Nonce: 1, Cookie: [CookieLen]byte{1, 2}})},
		decodeChallenge, func(m Challenge) []byte { return appendChallenge(nil, m) })
}

func FuzzDecodeResponse(f *testing.F) {
	fuzzRecord(f, [][]byte{must(AppendResponse(nil, Response{Nonce: 1, Role: RoleObserver, Name: "watcher"}))},
		decodeResponse, func(m Response) []byte { return must(AppendResponse(nil, m)) })
}

func FuzzDecodeWelcome(f *testing.F) {
	fuzzRecord(f, [][]byte{appendWelcome(nil, Welcome{Nonce: 1, Peer: 2, Token: 3})},
		decodeWelcome, func(m Welcome) []byte { return appendWelcome(nil, m) })
}

func FuzzDecodeRefuse(f *testing.F) {
	fuzzRecord(f, [][]byte{AppendRefuse(nil, Refuse{Nonce: 1, Reason: RefuseStarted})},
		decodeRefuse, func(m Refuse) []byte { return AppendRefuse(nil, m) })
}

// splitDatagrams cuts fuzz input into datagrams, each prefixed by a
// little-endian u16 length, so the fuzzer can build sequences.
func splitDatagrams(b []byte) [][]byte {
	var ds [][]byte
	for len(b) >= 2 {
		n := int(le.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		ds = append(ds, b[:n])
		b = b[n:]
	}
	return ds
}

func joinDatagrams(ds ...[]byte) []byte {
	var b []byte
	for _, d := range ds {
		b = le.AppendUint16(b, uint16(len(d)))
		b = append(b, d...)
	}
	return b
}

// fuzzInstance makes sealing instances fixed, so seeds made by these
// endpoints stay valid sealed datagrams for the fuzzed one.
var fuzzInstance = []byte{1, 2, 3, 4, 5, 6, 7, 8}

const fuzzKey = "fuzz key"

// fuzzRand is what a fuzz endpoint draws its instance and identity from:
// fixed per PeerID, so each side knows the other's public key.
func fuzzRand(self PeerID) []byte {
	b := append([]byte{}, fuzzInstance...)
	for i := range 32 {
		b = append(b, byte(self)*31+byte(i))
	}
	return b
}

// fuzzPublicKey is the public key of the fuzz endpoint with ID peer (the
// zero key where nothing is sealed).
func fuzzPublicKey(tb testing.TB, peer PeerID, sealed bool) PublicKey {
	var k PublicKey
	if !sealed {
		return k
	}
	priv, err := ecdh.X25519().NewPrivateKey(fuzzRand(peer)[len(fuzzInstance):])
	if err != nil {
		tb.Fatal(err)
	}
	copy(k[:], priv.PublicKey().Bytes())
	return k
}

// fuzzEndpoint builds one side of the fuzz world. The fuzzed endpoint is
// B; before the input arrives it has sent A a reliable and a global
// message, so acks in the input find packets in flight.
func fuzzEndpoint(tb testing.TB, self PeerID, sealed bool, deliver DeliverFunc) (*Endpoint, *capture) {
	var key []byte
	if sealed {
		key = []byte(fuzzKey)
	}
	addr, peer, peerAddr := addrA, peerB, addrB
	if self == peerB {
		addr, peer, peerAddr = addrB, peerA, addrA
	}
	tr := &capture{addr: addr}
	e, err := NewEndpoint(Config{Self: self, Session: token, Key: key, Rand: bytes.NewReader(fuzzRand(self)),
		Handshake: func(time.Duration, netip.AddrPort, PeerID, HandshakeMsg) {}}, tr, deliver)
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.AddLink(0, peer, peerAddr, fuzzPublicKey(tb, peer, sealed)); err != nil {
		tb.Fatal(err)
	}
	if self == peerB {
		e.Send(0, peer, ChannelReliable, []byte("from B"))
		e.Send(0, peer, ChannelGlobal, []byte("from B"))
		e.SendUnnumbered(0, peer, []byte("alive"), true)
	}
	return e, tr
}

// fuzzSeeds is traffic A would really send the fuzzed B: reliable,
// unreliable and global messages (some fragmented), resends, a link report,
// a handshake, acks of B's own first packets, a reply to B's keep-alive and
// a keep-alive of A's.
func fuzzSeeds(f *testing.F, sealed bool) [][]byte {
	nop := func(time.Duration, PeerID, Channel, []byte) {}
	a, atr := fuzzEndpoint(f, peerA, sealed, nop)
	b, btr := fuzzEndpoint(f, peerB, sealed, nop)
	fromB := btr.take()
	for _, d := range fromB[:2] {
		a.Receive(ms(30), addrB, d.data) // A acks them
	}
	a.Send(0, peerB, ChannelReliable, []byte("reliable"))
	a.Send(0, peerB, ChannelUnreliable, []byte("state"))
	a.Send(0, peerB, ChannelGlobal, []byte("chat"))
	a.Send(0, peerB, ChannelReliable, bytes.Repeat([]byte("R"), 2*fragmentPayload+5))
	a.Send(0, peerB, ChannelUnreliable, bytes.Repeat([]byte("U"), fragmentPayload+5))
	a.Tick(2 * time.Second) // resends and a link report
	a.SendHandshake(addrB, Hello{Nonce: 1, Role: RolePlayer, Name: "a"})
	a.Receive(ms(40), addrB, fromB[2].data) // A replies to B's keep-alive
	a.SendUnnumbered(ms(40), peerB, []byte("ping"), true)
	// Last, so the indexes above stay put: A echoes B's next reliable
	// message at once, and the echo carries its ack (a CarriedAck).
	a.deliver = func(now time.Duration, from PeerID, ch Channel, msg []byte) {
		a.Send(now, from, ChannelReliable, msg)
	}
	b.Send(ms(45), peerA, ChannelReliable, []byte("echo me"))
	for _, d := range btr.take() {
		a.Receive(ms(50), addrB, d.data)
	}
	var ds [][]byte
	for _, d := range atr.take() {
		ds = append(ds, d.data)
	}
	return ds
}

// fuzzSequences are short runs of fuzzSeeds' datagrams: acks, a report and
// a duplicate; an unreliable message's fragments in reverse; a reliable
// message's fragments around a gap.
func fuzzSequences(ds [][]byte) [][]byte {
	return [][]byte{
		joinDatagrams(ds[0], ds[1], ds[15], ds[3], ds[3]),
		joinDatagrams(ds[9], ds[8]),
		joinDatagrams(ds[6], ds[7], ds[2], ds[5]),
	}
}

func FuzzEndpointReceive(f *testing.F) {
	// Seeds stay small: every datagram alone, and a few short sequences.
	// The engine minimizes each new interesting input by re-running it
	// many times, so a long seed would spend the fuzzing time minimizing.
	for _, sealed := range []bool{false, true} {
		ds := fuzzSeeds(f, sealed)
		for _, d := range ds {
			f.Add(joinDatagrams(d), sealed)
		}
		for _, seq := range fuzzSequences(ds) {
			f.Add(seq, sealed)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, sealed bool) {
		var b *Endpoint
		b, tr := fuzzEndpoint(t, peerB, sealed, func(now time.Duration, from PeerID, ch Channel, msg []byte) {
			if len(msg) > maxMessage {
				t.Fatalf("delivered %d bytes", len(msg))
			}
			if ch == ChannelReliable && len(msg) < 100 {
				b.Send(now, from, ChannelUnreliable, msg) // a reply takes the ack (coalescing)
			}
		})
		tr.take()
		now := time.Duration(0)
		for _, d := range splitDatagrams(in) {
			now += 7 * time.Millisecond
			b.Receive(now, addrA, d)
			checkDeadline(t, b)
			b.Tick(now)
			checkDeadline(t, b)
			if dl, ok := b.NextDeadline(); !ok || dl <= now {
				t.Fatalf("deadline %v at %v", dl, now)
			}
			for _, s := range tr.take() {
				if len(s.data) > MaxDatagram {
					t.Fatalf("sent %d bytes", len(s.data))
				}
			}
		}
		st, _ := b.Stats(peerA)
		if st.Loss.Missing > st.Loss.Expected || st.PeerLoss.Missing > st.PeerLoss.Expected {
			t.Fatalf("impossible totals %+v %+v", st.Loss, st.PeerLoss)
		}
		if b.budget.used < 0 || b.budget.used > b.budget.limit {
			t.Fatalf("reassembly budget %d of %d", b.budget.used, b.budget.limit)
		}
	})
}

// FuzzLossWindow checks the receive window against the obvious model for
// any arrival order, far numbers included (MaxJump, resyncAfter).
func FuzzLossWindow(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 40, 41, 5, 90})
	f.Add([]byte{200, 100, 0, 201, 1})
	f.Add([]byte{64, 65, 66, 0xFE, 0xF4, 67, 68, 69})         // a lone number far ahead
	f.Add([]byte{64, 65, 66, 0xFE, 67, 68, 69, 70, 0xF4, 71}) // a run ahead, believed; then the old region again, held
	f.Add([]byte{0xF9, 0xF4, 64, 65, 66, 67, 68})             // a first arrival far behind the rest
	f.Fuzz(func(t *testing.T, b []byte) {
		// Each byte below 0xF0 is an offset from a running base that
		// creeps upward, so arrivals are early, late or duplicate. A byte
		// from 0xF0 moves the base to a region a multiple of 2500 up or
		// down (0xF4 and 0xFC: back to 0), for it and the bytes after it:
		// numbers the window may hold back or come to believe.
		var seqs []int64
		region := int64(0)
		for i, x := range b {
			off := int64(x) - 64
			if x >= 0xF0 {
				region, off = (int64(x&7)-4)*2500, 0
			}
			seqs = append(seqs, region+int64(i/2)+off)
		}
		checkWindow(t, "fuzz", seqs)
	})
}
