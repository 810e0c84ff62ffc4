package netcore

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

func TestWrongTokenOrSenderIsDroppedAndCounted(t *testing.T) {
	a, b := newPair(t, nil)
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	good := a.tr.take()[0].data
	forge := func(mod func(*Header)) []byte {
		h, _ := DecodeHeader(good)
		mod(&h)
		d := bytes.Clone(good)
		PutHeader(d, h)
		return d
	}
	b.ep.Receive(0, addrA, forge(func(h *Header) { h.Token++ }))
	b.ep.Receive(0, addrA, forge(func(h *Header) { h.Sender = 9 }))
	b.ep.Receive(0, addrC, good) // right sender ID, wrong address
	b.ep.Receive(0, addrA, good[:HeaderLen-1])
	b.ep.Receive(0, addrA, make([]byte, MaxDatagram+1))
	want := RejectCounts{Token: 1, Sender: 2, Malformed: 1, Oversize: 1}
	if r := b.ep.Rejected(); r != want {
		t.Errorf("rejected %+v, want %+v", r, want)
	}
	if len(b.got) != 0 || len(b.tr.sent) != 0 {
		t.Errorf("a rejected datagram was delivered (%d) or answered (%d)", len(b.got), len(b.tr.sent))
	}
	if st, _ := b.ep.Stats(peerA); st.Loss != (Loss{}) {
		t.Errorf("a rejected datagram touched the loss window: %+v", st.Loss)
	}
	b.ep.Receive(0, addrA, good)
	if len(b.got) != 1 {
		t.Errorf("the genuine datagram was not delivered")
	}
}

func keyed(key string) func(PeerID, *Config) {
	return func(_ PeerID, c *Config) { c.Key = []byte(key) }
}

func TestSealedSessionCarriesEverything_Q7(t *testing.T) {
	a, b := newPair(t, keyed("correct horse"))
	secret := []byte("the plan: rush B")
	for _, ch := range []Channel{ChannelReliable, ChannelUnreliable, ChannelGlobal} {
		a.ep.Send(0, peerB, ch, secret)
	}
	for _, d := range a.tr.sent {
		if bytes.Contains(d.data, secret) {
			t.Fatalf("plaintext on the wire: %q", d.data)
		}
		if h, err := DecodeHeader(d.data); err != nil || h.Flags&flagSealed == 0 {
			t.Fatalf("datagram not marked sealed: %+v %v", h, err)
		}
	}
	pass(a, b, ms(20))
	pass(b, a, ms(40))
	if len(b.got) != 3 {
		t.Fatalf("delivered %d of 3", len(b.got))
	}
	if st, _ := a.ep.Stats(peerB); st.InFlight != 0 || st.SRTT != ms(40) {
		t.Errorf("acks did not come back sealed and accepted: %+v", st)
	}
	if r := a.ep.Rejected(); r != (RejectCounts{}) {
		t.Errorf("rejects %+v", r)
	}
}

func TestSealedSessionRejectsTamperingReplayAndStrangers_Q7(t *testing.T) {
	a, b := newPair(t, keyed("k1"))
	a.ep.Send(0, peerB, ChannelUnreliable, []byte("one"))
	a.ep.Send(0, peerB, ChannelUnreliable, []byte("two"))
	ds := a.tr.take()
	d0, d1 := ds[0].data, ds[1].data

	tampered := bytes.Clone(d0)
	tampered[len(tampered)-20] ^= 1
	b.ep.Receive(0, addrA, tampered)
	headerTampered := bytes.Clone(d0)
	headerTampered[16] ^= 1 // the datagram number is authenticated too
	b.ep.Receive(0, addrA, headerTampered)
	if r := b.ep.Rejected(); r.Auth != 2 || len(b.got) != 0 {
		t.Fatalf("tampered datagrams: %+v, delivered %d", r, len(b.got))
	}
	b.ep.Receive(0, addrA, d1)
	b.ep.Receive(0, addrA, d0) // older counter, still inside the window: fine
	b.ep.Receive(0, addrA, d1) // replay
	b.ep.Receive(0, addrA, d0) // replay
	if r := b.ep.Rejected(); r.Replay != 2 {
		t.Errorf("replays: %+v, want 2", r)
	}
	if len(b.got) != 1 || string(b.got[0].msg) != "two" {
		t.Errorf("delivered %+v, want only the newest state once", b.got)
	}

	// A plain datagram to a sealed session, and a sealed one under another key.
	p, _ := newPair(t, nil)
	p.ep.Send(0, peerB, ChannelUnreliable, []byte("plain"))
	b.ep.Receive(0, addrA, p.tr.take()[0].data)
	w, _ := newPair(t, keyed("wrong"))
	w.ep.Send(0, peerB, ChannelUnreliable, []byte("wrong key"))
	wd := w.tr.take()[0].data
	if r := b.ep.Rejected(); r.Auth != 3 {
		t.Errorf("plain datagram: %+v", r)
	}
	// b has locked onto a's instance: another instance is refused without
	// even trying the key.
	b.ep.Receive(0, addrA, wd)
	if r := b.ep.Rejected(); r.Replay != 3 {
		t.Errorf("other instance: %+v", r)
	}
	// A fresh receiver that has not met the peer yet tries the key.
	_, fresh := newPair(t, keyed("k1"))
	fresh.ep.Receive(0, addrA, wd)
	if r := fresh.ep.Rejected(); r.Auth != 1 {
		t.Errorf("wrong key: %+v", r)
	}
	// And a plain endpoint refuses sealed datagrams.
	_, plain := newPair(t, nil)
	plain.ep.Receive(0, addrA, d0)
	if r := plain.ep.Rejected(); r.Auth != 1 {
		t.Errorf("sealed to plain: %+v", r)
	}
}

func TestNoncesNeverRepeat_Q7(t *testing.T) {
	a, b := newPair(t, keyed("k"))
	c, _ := newPair(t, keyed("k"))
	if err := a.ep.AddLink(0, 3, addrC, c.ep.PublicKey()); err != nil {
		t.Fatal(err)
	}
	seen := map[[16]byte]bool{}
	check := func() {
		for _, d := range a.tr.take() {
			var n [16]byte // instance + counter
			copy(n[:], d.data[HeaderLen:HeaderLen+sealPrefixLen])
			if seen[n] {
				t.Fatalf("nonce %x used twice", n)
			}
			seen[n] = true
		}
	}
	for i := range 300 {
		now := time.Duration(i) * 10 * time.Millisecond
		a.ep.Send(now, peerB, ChannelReliable, []byte{byte(i)})
		a.ep.Send(now, 3, ChannelUnreliable, []byte{byte(i)})
		a.ep.SendHandshake(addrC, Challenge{Nonce: uint64(i)})
		a.ep.Tick(now) // resends and reports
		check()
	}
	if len(seen) < 900 {
		t.Errorf("only %d datagrams", len(seen))
	}
	// Two endpoints with the same identity, key and token (a restart) use
	// different instances, so different keys.
	a2, _ := newPair(t, keyed("k"))
	if a.ep.sealer.instance == a2.ep.sealer.instance {
		t.Error("two endpoints drew the same instance")
	}
	_ = b
}

func TestHandshakeRecordsReachTheSessionLayer(t *testing.T) {
	for _, key := range []string{"", "psk"} {
		type got struct {
			from   netip.AddrPort
			sender PeerID
			m      HandshakeMsg
		}
		var hostGot, joinGot []got
		mk := func(self PeerID, session uint64, addr netip.AddrPort, sink *[]got) (*Endpoint, *capture) {
			tr := &capture{addr: addr}
			cfg := Config{Self: self, Session: session, Key: []byte(key),
				Handshake: func(_ time.Duration, from netip.AddrPort, sender PeerID, m HandshakeMsg) {
					*sink = append(*sink, got{from, sender, m})
				}}
			ep, err := NewEndpoint(cfg, tr, func(time.Duration, PeerID, Channel, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			return ep, tr
		}
		host, htr := mk(1, token, addrA, &hostGot)
		joiner, jtr := mk(PeerUnassigned, 0, addrB, &joinGot)
		if err := joiner.AddLink(0, 1, addrA, PublicKey{}); err != errNoSession {
			t.Errorf("a joiner without a session opened a link: %v", err)
		}
		joiner.SendHandshake(addrA, Hello{Nonce: 11, Role: RolePlayer, Name: "bob"})
		for _, d := range jtr.take() {
			host.Receive(0, addrB, d.data)
		}
		host.SendHandshake(addrB, Challenge{Nonce: 11, Cookie: [CookieLen]byte{9}})
		host.SendHandshake(addrB, Welcome{Nonce: 11, Peer: 2, Token: token})
		for _, d := range htr.take() {
			joiner.Receive(0, addrA, d.data)
		}
		if len(hostGot) != 1 || hostGot[0].sender != PeerUnassigned || hostGot[0].from != addrB ||
			hostGot[0].m != (Hello{Nonce: 11, Role: RolePlayer, Name: "bob"}) {
			t.Errorf("key %q: host got %+v", key, hostGot)
		}
		if len(joinGot) != 2 || joinGot[1].m != (Welcome{Nonce: 11, Peer: 2, Token: token}) {
			t.Errorf("key %q: joiner got %+v", key, joinGot)
		}
		// Welcomed: the joiner takes its ID and the token, and the link works.
		if err := joiner.Rebind(2, token); err != nil {
			t.Fatal(err)
		}
		if err := joiner.AddLink(0, 1, addrA, host.PublicKey()); err != nil {
			t.Fatal(err)
		}
		if err := host.AddLink(0, 2, addrB, joiner.PublicKey()); err != nil {
			t.Fatal(err)
		}
		joiner.Send(0, 1, ChannelReliable, []byte("hi"))
		for _, d := range jtr.take() {
			host.Receive(0, addrB, d.data)
		}
		if r := host.Rejected(); r != (RejectCounts{}) {
			t.Errorf("key %q: host rejected %+v", key, r)
		}
		if err := joiner.Rebind(3, token); err != errLinksOpen {
			t.Errorf("rebind with open links: %v", err)
		}
	}
	// Without a hook, token-0 datagrams are strangers.
	_, b := newPair(t, nil)
	b.ep.Receive(0, addrC, raw(Header{Sender: PeerUnassigned}, must(AppendHello(nil, Hello{Role: RolePlayer}))))
	if r := b.ep.Rejected(); r.Token != 1 {
		t.Errorf("handshake without a hook: %+v", r)
	}
}

// A keyed endpoint lets one plain datagram through to the session: a
// Hello alone, as a KeylessHello (Auth still counts it: it is never
// admitted). Anything else plain, or a Hello with company, is dropped.
// Its answer, SendKeylessRefuse, is plain and smaller than the Hello.
func TestKeyedEndpointHandsOnAKeylessHello(t *testing.T) {
	var got []HandshakeMsg
	tr := &capture{addr: addrA}
	host, err := NewEndpoint(Config{Self: 1, Session: token, Key: []byte("psk"),
		Handshake: func(_ time.Duration, _ netip.AddrPort, _ PeerID, m HandshakeMsg) { got = append(got, m) }},
		tr, func(time.Duration, PeerID, Channel, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	hello := Hello{Nonce: 5, Role: RolePlayer, Name: "eve\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}
	plainHello := raw(Header{Sender: PeerUnassigned}, must(AppendHello(nil, hello)))
	host.Receive(0, addrB, plainHello)
	if len(got) != 1 || got[0] != KeylessHello(hello) {
		t.Fatalf("got %+v, want one KeylessHello", got)
	}
	two := append(must(AppendHello(nil, hello)), must(AppendHello(nil, hello))...)
	host.Receive(0, addrB, raw(Header{Sender: PeerUnassigned}, two))
	host.Receive(0, addrB, raw(Header{Sender: PeerUnassigned}, must(AppendResponse(nil, Response{Nonce: 5, Role: RolePlayer, Name: "eve"}))))
	if len(got) != 1 {
		t.Fatalf("got %+v: only a lone Hello may pass", got)
	}
	if r := host.Rejected(); r.Auth != 3 {
		t.Errorf("rejected %+v, want all three plain datagrams under auth", r)
	}
	if err := host.SendKeylessRefuse(addrB, Refuse{Nonce: 5, Reason: RefuseNeedKey}); err != nil {
		t.Fatal(err)
	}
	sent := tr.take()
	if len(sent) != 1 {
		t.Fatalf("%d datagrams sent", len(sent))
	}
	d := sent[0].data
	h, err := DecodeHeader(d)
	if err != nil || h.Flags&flagSealed != 0 || len(d) >= len(plainHello) {
		t.Fatalf("refusal %+v (%v), %d bytes for a %d-byte Hello", h, err, len(d), len(plainHello))
	}
	// An endpoint without a key reads it.
	var joinGot []HandshakeMsg
	joiner, _ := NewEndpoint(Config{Self: PeerUnassigned, Handshake: func(_ time.Duration, _ netip.AddrPort, _ PeerID, m HandshakeMsg) {
		joinGot = append(joinGot, m)
	}}, &capture{addr: addrB}, func(time.Duration, PeerID, Channel, []byte) {})
	joiner.Receive(0, addrA, d)
	if len(joinGot) != 1 || joinGot[0] != (Refuse{Nonce: 5, Reason: RefuseNeedKey}) {
		t.Fatalf("the joiner read %+v", joinGot)
	}
}

// A member of the session — it holds the code, or in an open session it
// is simply linked — cannot seal a datagram that another member's link
// takes as that member's: each link's keys come from its own pair's X25519
// secret, so forging "from" A to B needs A's or B's private key.
func TestMemberCannotSpeakAsAnother_Q7(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(PeerID, *Config)
	}{
		{"keyed", keyed("the session code")},
		{"open", func(_ PeerID, c *Config) { c.Seal = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := newPair(t, c.mod)
			// W is a third member, linked to B as itself (ID 3)...
			wCfg := Config{Self: 3, Session: token}
			c.mod(3, &wCfg)
			wtr := &capture{addr: addrC}
			w, err := NewEndpoint(wCfg, wtr, func(time.Duration, PeerID, Channel, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.ep.AddLink(0, 3, addrC, w.PublicKey()); err != nil {
				t.Fatal(err)
			}
			// ...that builds an endpoint claiming to be A, with the same
			// code and token, knowing both public keys, and seals to B.
			fCfg := Config{Self: peerA, Session: token}
			c.mod(peerA, &fCfg)
			ftr := &capture{addr: addrA}
			forger, err := NewEndpoint(fCfg, ftr, func(time.Duration, PeerID, Channel, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			if err := forger.AddLink(0, peerB, addrB, b.ep.PublicKey()); err != nil {
				t.Fatal(err)
			}
			for _, ch := range []Channel{ChannelReliable, ChannelUnreliable, ChannelGlobal} {
				forger.Send(0, peerB, ch, []byte("load test: send alice 50 Mbit/s"))
			}
			forger.SendUnnumbered(0, peerB, []byte("ask"), true)
			for _, d := range ftr.take() {
				b.ep.Receive(0, addrA, d.data) // spoofed from A's own address
			}
			if len(b.got) != 0 {
				t.Fatalf("B took a forged datagram as A's: %q", b.got[0].msg)
			}
			if r := b.ep.Rejected(); r.Auth != 4 {
				t.Errorf("forgeries not counted as auth: %+v", r)
			}
			// A's own datagrams still open, and W's as W's.
			a.ep.Send(0, peerB, ChannelReliable, []byte("from a"))
			pass(a, b, 0)
			w.AddLink(0, peerB, addrB, b.ep.PublicKey())
			w.Send(0, peerB, ChannelReliable, []byte("from w"))
			for _, d := range wtr.take() {
				b.ep.Receive(0, addrC, d.data)
			}
			if len(b.got) != 2 || b.got[0].from != peerA || b.got[1].from != 3 {
				t.Errorf("B got %+v", b.got)
			}
		})
	}
}

// A public key with no secret in it (zero, or of low order) opens no link.
func TestLinkRefusesAKeyWithoutASecret_Q7(t *testing.T) {
	a, _ := newPair(t, keyed("k"))
	lowOrder := PublicKey{1} // the point 1 has order 4 on Curve25519
	for _, k := range []PublicKey{{}, lowOrder} {
		if err := a.ep.AddLink(0, 3, addrC, k); err != errPeerKey {
			t.Errorf("key %x: %v, want errPeerKey", k, err)
		}
	}
	// An open link keeps the key it was opened with.
	if err := a.ep.AddLink(0, peerB, addrC, PublicKey{9}); err != errPeerKey {
		t.Errorf("a link took another key: %v", err)
	}
}
