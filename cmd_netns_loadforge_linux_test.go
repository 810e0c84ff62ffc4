package main

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/live"
)

// The forger's side of the load-test attacks (docs/security.md, "Load
// tests"): mallory is a real watcher of the session (session.NewJoiner run
// by live.Run, as `lagscope watch` runs it) whose socket the test owns and
// whose identity — the X25519 key its endpoint draws — the test chose. So
// the test holds every key mallory holds: its own link's key with the
// host, and, in a keyed session, the session code, from which every
// holder derives anyone's handshake key. With them it writes what a
// modified watcher would send: load-test messages sealed under mallory's
// own key over its own link, datagrams "from" another member sealed under
// every key mallory has, and the same from that member's address
// (IP_TRANSPARENT). A datagram mallory seals as itself takes the place of
// one its session was sending the host, with that one's counter, so the
// host's replay window sees nothing but mallory's own stream.

// Wire constants the forger writes (docs/protocol.md, docs/load-test.md).
const (
	wireKeepAlive                    = 0x22 // the record an unnumbered message travels in
	wireHostID        netcore.PeerID = 1    // the host's PeerID in every session
	datagramKeyInfo                  = "lagscope/2 datagram key"
	handshakeInfo                    = "lagscope/2 handshake key"
	kindTurnGrant                    = 0x2b
	kindLoadRequest                  = 0x30
	kindLoadStop                     = 0x37
	kindLoadData                     = 0x32
	kindLoadPace                     = 0x34
	kindTurnClaim                    = 0x2a
	phaseUploadHold                  = 3
	phaseDownloadHold                = 5
	// loadOnPath is the smallest load datagram on the path (UDP payload):
	// a message of 1000 bytes and the 64 of its carrier. nft's udp length
	// counts the 8 bytes of the UDP header too.
	loadOnPath = 1000 + 64
	// loadCap50 is the default cap, bit/s.
	loadCap50 = 50_000_000
)

// forgeSlot is a datagram the forger sends in place of the next one
// mallory's session sends the host: build gets that one's instance and
// counter.
type forgeSlot struct {
	kind    string
	spoofed bool // from the other member's address, not mallory's
	build   func(inst, ctr uint64) []byte
}

// forgeSocket is mallory's transport (live.Socket): a UDP socket at
// mallory's address, and optionally one that sends from another member's
// address (IP_TRANSPARENT; what the host sends back goes to that member).
type forgeSocket struct {
	main  *netcore.UDPTransport
	spoof *net.UDPConn
	host  netip.AddrPort
	in    chan *netcore.Datagram
	quit  chan struct{}
	wg    sync.WaitGroup

	mu         sync.Mutex
	handshake  [][]byte // token-0 datagrams from the host: its Welcome among them
	fromHost   []heard  // sealed session datagrams from the host
	toHost     int      // sealed session datagrams mallory's session sent the host
	firstAt    time.Time
	lastToHost []byte // the latest of them
	slots      []forgeSlot
	sent       map[string][]time.Time // forged datagrams sent, by kind, and when
}

// heard is a datagram that arrived, and when.
type heard struct {
	at time.Time
	p  []byte
}

// newForgeSocket opens mallory's socket at atkMal in namespace ns, and one
// at spoofAs unless it is the zero address.
func newForgeSocket(t *testing.T, ns string, host, spoofAs netip.AddrPort) *forgeSocket {
	t.Helper()
	f := &forgeSocket{host: host, in: make(chan *netcore.Datagram, 256), quit: make(chan struct{}), sent: map[string][]time.Time{}}
	err := inNetnsDo(ns, func() error {
		var err error
		if f.main, err = netcore.ListenUDP(atkMal.String()); err != nil {
			return err
		}
		if !spoofAs.IsValid() {
			return nil
		}
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_TRANSPARENT, 1)
			}); err != nil {
				return err
			}
			return serr
		}}
		pc, err := lc.ListenPacket(context.Background(), "udp4", spoofAs.String())
		if err != nil {
			return fmt.Errorf("a socket at %v: %w", spoofAs, err)
		}
		f.spoof = pc.(*net.UDPConn)
		return nil
	})
	if err != nil {
		t.Fatalf("mallory's sockets in %s: %v", ns, err)
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for d := range f.main.Inbox() {
			if p := d.Bytes(); d.From == f.host {
				f.mu.Lock()
				switch {
				case sealedSession(p):
					f.fromHost = append(f.fromHost, heard{time.Now(), slices.Clone(p)})
				case len(p) >= netcore.HeaderLen && p[0] == netcore.Magic0 && p[1] == netcore.Magic1 && le64(p[4:]) == 0:
					f.handshake = append(f.handshake, slices.Clone(p))
				}
				f.mu.Unlock()
			}
			select {
			case f.in <- d:
			case <-f.quit:
				d.Release()
			}
		}
	}()
	t.Cleanup(f.close)
	return f
}

// sealedSession: p is a sealed session datagram (token not 0).
func sealedSession(p []byte) bool {
	return len(p) >= netcore.HeaderLen+netcore.SealOverhead && p[0] == netcore.Magic0 && p[1] == netcore.Magic1 &&
		p[3]&1 != 0 && le64(p[4:]) != 0
}

func (f *forgeSocket) Send(to netip.AddrPort, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if to != f.host || !sealedSession(p) {
		return f.main.Send(to, p)
	}
	if f.toHost == 0 {
		f.firstAt = time.Now()
	}
	f.toHost++
	f.lastToHost = append(f.lastToHost[:0], p...)
	if len(f.slots) == 0 {
		return f.main.Send(to, p)
	}
	s := f.slots[0]
	f.slots = f.slots[1:]
	d := s.build(le64(p[netcore.HeaderLen:]), le64(p[netcore.HeaderLen+8:]))
	f.sent[s.kind] = append(f.sent[s.kind], time.Now())
	if s.spoofed {
		_, err := f.spoof.WriteToUDPAddrPort(d, to)
		return err
	}
	return f.main.Send(to, d)
}

func (f *forgeSocket) LocalAddr() netip.AddrPort       { return f.main.LocalAddr() }
func (f *forgeSocket) Inbox() <-chan *netcore.Datagram { return f.in }

// queue adds n slots of one kind.
func (f *forgeSocket) queue(kind string, spoofed bool, n int, build func(inst, ctr uint64) []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.slots = append(f.slots, forgeSlot{kind: kind, spoofed: spoofed, build: build})
	}
}

// drained waits until every queued slot went out, for at most limit.
func (f *forgeSocket) drained(t *testing.T, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		f.mu.Lock()
		left := len(f.slots)
		f.mu.Unlock()
		if left == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d forged datagrams still waiting for a slot after %v", left, limit)
		}
	}
}

// fromSpoofed sends p to the host from the other member's address.
func (f *forgeSocket) fromSpoofed(kind string, p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[kind] = append(f.sent[kind], time.Now())
	_, _ = f.spoof.WriteToUDPAddrPort(p, f.host)
}

// count is how many forged datagrams of kind went out, and the first and
// last time.
func (f *forgeSocket) count(kind string) (int, time.Time, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ts := f.sent[kind]
	if len(ts) == 0 {
		return 0, time.Time{}, time.Time{}
	}
	return len(ts), ts[0], ts[len(ts)-1]
}

// rate is how many sealed datagrams a second mallory's session sends the
// host: the slots the forger gets.
func (f *forgeSocket) rate() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.toHost < 2 {
		return 0
	}
	return float64(f.toHost-1) / time.Since(f.firstAt).Seconds()
}

func (f *forgeSocket) close() {
	select {
	case <-f.quit:
		return
	default:
	}
	close(f.quit)
	f.main.Close()
	if f.spoof != nil {
		f.spoof.Close()
	}
	f.wg.Wait()
	for {
		select {
		case d := <-f.in:
			d.Release()
		default:
			return
		}
	}
}

// malKeys is what mallory holds once it has joined: the session's token,
// its own PeerID, the keys of its link with the host each way, and the
// code.
type malKeys struct {
	token             uint64
	self              netcore.PeerID
	hostKey, fromHost []byte
	psk               []byte
}

// nullTransport sends nothing: the forger's endpoints only derive keys.
type nullTransport struct{}

func (nullTransport) Send(netip.AddrPort, []byte) error { return nil }
func (nullTransport) LocalAddr() netip.AddrPort         { return netip.AddrPort{} }

// keys derives mallory's key toward the host as its session did: the
// host's Welcome (sealed under the host's handshake key in a keyed
// session, which every code holder derives; plain in an open one) gives
// mallory's PeerID, the token and the host's public key; seed is what
// mallory's endpoint drew first (its instance and its X25519 private key).
// It checks the key on the latest datagram mallory's session sealed for
// the host.
func (f *forgeSocket) keys(t *testing.T, seed, psk []byte) malKeys {
	t.Helper()
	var w *netcore.Welcome
	dec, err := netcore.NewEndpoint(netcore.Config{Key: psk, Seal: true, Rand: rand.Reader,
		Handshake: func(_ time.Duration, _ netip.AddrPort, _ netcore.PeerID, m netcore.HandshakeMsg) {
			if x, ok := m.(netcore.Welcome); ok && w == nil {
				w = &x
			}
		}}, nullTransport{}, func(time.Duration, netcore.PeerID, netcore.Channel, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	hs := slices.Clone(f.handshake)
	last := slices.Clone(f.lastToHost)
	f.mu.Unlock()
	for _, p := range hs {
		dec.Receive(0, f.host, p)
	}
	if w == nil {
		t.Fatalf("no Welcome among the host's %d handshake datagrams to mallory", len(hs))
	}
	forge, err := netcore.NewEndpoint(netcore.Config{Key: psk, Seal: true, Rand: bytes.NewReader(seed)}, nullTransport{},
		func(time.Duration, netcore.PeerID, netcore.Channel, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := forge.Rebind(w.Peer, w.Token); err != nil {
		t.Fatal(err)
	}
	if err := forge.AddLink(0, wireHostID, f.host, w.Key); err != nil {
		t.Fatal(err)
	}
	k, ok := forge.LinkKey(wireHostID, datagramKeyInfo, true)
	back, ok2 := forge.LinkKey(wireHostID, datagramKeyInfo, false)
	if !ok || !ok2 {
		t.Fatal("no keys of the link with the host")
	}
	if len(last) == 0 || netcore.PeerID(binary.LittleEndian.Uint16(last[12:])) != w.Peer {
		t.Fatalf("mallory's session sent the host no datagram as PeerID %d", w.Peer)
	}
	if _, err := openDatagram(k, last); err != nil {
		t.Fatalf("the forger's key does not open mallory's own datagram to the host: %v", err)
	}
	return malKeys{token: w.Token, self: w.Peer, hostKey: k, fromHost: back, psk: psk}
}

// hostMessages opens what the host sent mallory from since on and
// counts the unnumbered messages of the load test and its turn
// (docs/load-test.md, "On the wire") by kind, and the grants by flag. It
// fails the test on a datagram that does not open: every one of them is
// sealed under the host's key toward mallory.
func (f *forgeSocket) hostMessages(t *testing.T, k malKeys, since time.Time) (kinds map[byte]int, grants map[byte]int, datagrams int) {
	t.Helper()
	f.mu.Lock()
	got := slices.Clone(f.fromHost)
	f.mu.Unlock()
	kinds, grants = map[byte]int{}, map[byte]int{}
	for _, h := range got {
		if h.at.Before(since) {
			continue
		}
		datagrams++
		body, err := openDatagram(k.fromHost, h.p)
		if err != nil {
			t.Fatalf("a datagram from the host does not open under mallory's key: %v", err)
		}
		for len(body) > 0 {
			typ, p, rest, err := netcore.NextRecord(body)
			if err != nil {
				t.Fatalf("a datagram from the host: %v", err)
			}
			body = rest
			if typ != wireKeepAlive || len(p) < 6 {
				continue
			}
			msg := p[5:]
			if msg[0] >= kindTurnClaim && msg[0] <= kindLoadStop {
				kinds[msg[0]]++
				if msg[0] == kindTurnGrant && len(msg) == 10 {
					grants[msg[9]]++
				}
			}
		}
	}
	return kinds, grants, datagrams
}

// sealDatagram writes a sealed datagram (docs/protocol.md, "Sealing"):
// header, instance, counter, body sealed under key with the counter as
// nonce and the first 40 bytes as additional data.
func sealDatagram(key []byte, h netcore.Header, inst, ctr uint64, body []byte) []byte {
	h.Flags = 1
	b := make([]byte, netcore.HeaderLen+16)
	netcore.PutHeader(b, h)
	binary.LittleEndian.PutUint64(b[netcore.HeaderLen:], inst)
	binary.LittleEndian.PutUint64(b[netcore.HeaderLen+8:], ctr)
	var nonce [12]byte
	binary.LittleEndian.PutUint64(nonce[4:], ctr)
	blk, _ := aes.NewCipher(key)
	a, _ := cipher.NewGCM(blk)
	return append(b, a.Seal(nil, nonce[:], body, b)...)
}

// openDatagram opens a sealed datagram under key.
func openDatagram(key, d []byte) ([]byte, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	copy(nonce[4:], d[netcore.HeaderLen+8:netcore.HeaderLen+16])
	return a.Open(nil, nonce[:], d[netcore.HeaderLen+16:], d[:netcore.HeaderLen+16])
}

// plainDatagram writes an unsealed datagram: what an open session sent
// before every link had keys of its pair.
func plainDatagram(h netcore.Header, body []byte) []byte {
	h.Flags = 0
	b := make([]byte, netcore.HeaderLen, netcore.HeaderLen+len(body))
	netcore.PutHeader(b, h)
	return append(b, body...)
}

// handshakeKey is the handshake key every holder of the code derives for
// a sender and an instance: the one key a code holder can compute for
// another member.
func handshakeKey(t *testing.T, psk []byte, sender netcore.PeerID, inst uint64) []byte {
	var id [10]byte
	binary.LittleEndian.PutUint16(id[:], uint16(sender))
	binary.LittleEndian.PutUint64(id[2:], inst)
	k, err := hkdf.Key(sha256.New, psk, make([]byte, 8), handshakeInfo+string(id[:]), 32)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keepAlives is a control datagram's body carrying each message
// unnumbered, as Endpoint.SendUnnumbered does: a KeepAlive record (id,
// flags 0: no reply wanted) per message.
func keepAlives(msgs ...[]byte) []byte {
	var b []byte
	for i, m := range msgs {
		b = append(b, wireKeepAlive)
		b = binary.LittleEndian.AppendUint16(b, uint16(5+len(m)))
		b = binary.LittleEndian.AppendUint32(b, uint32(0x7000_0000+i))
		b = append(b, 0)
		b = append(b, m...)
	}
	return b
}

func randomID() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) | 1
}

// loadRequest is a request for test id at the 50 Mbit/s cap, 14 bytes.
func loadRequest(id uint32) []byte {
	b := []byte{kindLoadRequest}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, 1)
	return binary.LittleEndian.AppendUint64(b, loadCap50)
}

// tinyLoad is a 14-byte "load" datagram of test id: kind, id, phase,
// datagram number, stamp — a load datagram without its padding.
func tinyLoad(id, seq uint32) []byte {
	b := []byte{kindLoadData}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, phaseUploadHold)
	b = binary.LittleEndian.AppendUint32(b, seq)
	return binary.LittleEndian.AppendUint32(b, seq*100)
}

// loadPace is a pace command for test id: the download hold at the cap,
// datagrams of size bytes, with a nonce.
func loadPace(id, nonce uint32, size uint16) []byte {
	b := []byte{kindLoadPace}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, phaseDownloadHold)
	b = binary.LittleEndian.AppendUint64(b, loadCap50)
	b = binary.LittleEndian.AppendUint16(b, size)
	return binary.LittleEndian.AppendUint32(b, nonce)
}

// turnClaim is a claim of the session's turn (flag 0: an ask).
func turnClaim(id uint32, tester, peer netcore.PeerID) []byte {
	b := []byte{kindTurnClaim}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.LittleEndian.AppendUint16(b, uint16(tester))
	b = binary.LittleEndian.AppendUint16(b, uint16(peer))
	return append(b, 0)
}

// senderOnWire is a member's PeerID, sealing instance and latest counter,
// read from its own datagrams to the host on its interface for a second.
func senderOnWire(t *testing.T, ns string, from, host netip.AddrPort) (netcore.PeerID, uint64, uint64) {
	t.Helper()
	tap := tapInterface(t, ns, "wan", from.Port())
	time.Sleep(time.Second)
	var id netcore.PeerID
	var inst, ctr uint64
	n := 0
	for _, p := range tap.packets() {
		if !p.out || p.src != from || p.dst != host || !sealedSession(p.payload) {
			continue
		}
		id = netcore.PeerID(binary.LittleEndian.Uint16(p.payload[12:]))
		inst, ctr = le64(p.payload[24:]), max(ctr, le64(p.payload[32:]))
		n++
	}
	if n == 0 {
		t.Fatalf("no sealed datagram from %v to the host on the wire in a second", from)
	}
	return id, inst, ctr
}

var _ live.Socket = (*forgeSocket)(nil)
