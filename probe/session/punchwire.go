package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"net/netip"

	"github.com/lagscope/lagscope/netcore"
)

// Datagrams of the session layer itself, beside netcore's: connectivity
// checks (hole punching) and relay frames. netcore's datagrams start with
// "LS"; these start with "LP" (a check or its answer) and "LR" (a netcore
// datagram forwarded by the host), so Session.Receive tells them apart by
// their first two bytes before the endpoint sees them. Byte by byte in
// docs/protocol.md; the kinds are stable (S19).

const (
	punchMagic1 = 'P' // second byte of a check or answer
	relayMagic1 = 'R' // second byte of a relay frame
	punchVer    = 1

	checkKind  byte = 0x01 // "can you hear me at this address?"
	answerKind byte = 0x02 // "yes": sent back to where the check came from
	primeKind  byte = 0x03 // opens this side's NAT mapping; nobody answers it

	checkNominate = 0x01 // flags: the controlling side will use this path

	checkLen = 30 // without the tag
	checkTag = 16 // HMAC-SHA256, truncated, when the session has a key
)

var (
	errCheckShort = errors.New("live: check has the wrong length")
	errCheckField = errors.New("live: check field out of range")
)

// check is one connectivity check or its answer (RFC 8445's Binding
// request and response, cut to what lagscope needs: the session token
// stands in for the ICE credentials, Tx for the transaction ID).
type check struct {
	Answer   bool
	Nominate bool
	Token    uint64
	From, To netcore.PeerID
	Tx       uint64 // a fresh secret of the check's own; an answer carries it back
	Seq      uint32 // grows with every check of a pair: a replayed nomination is stale
}

// checkPurpose names the pair keys (netcore.Endpoint.LinkKey) that
// authenticate checks: one per direction of a pair, so a check from X to Y
// passes only if X made it, and no other member of the session can.
const checkPurpose = "lagscope/2 check key"

// appendCheck appends c, with its tag under key when key is set.
func appendCheck(b []byte, c check, key []byte) []byte {
	start := len(b)
	kind := checkKind
	if c.Answer {
		kind = answerKind
	}
	var f byte
	if c.Nominate {
		f |= checkNominate
	}
	b = append(b, netcore.Magic0, punchMagic1, punchVer, kind, f, 0)
	b = le.AppendUint64(b, c.Token)
	b = le.AppendUint16(b, uint16(c.From))
	b = le.AppendUint16(b, uint16(c.To))
	b = le.AppendUint64(b, c.Tx)
	b = le.AppendUint32(b, c.Seq)
	if key != nil {
		m := hmac.New(sha256.New, key)
		m.Write(b[start:])
		b = append(b, m.Sum(nil)[:checkTag]...)
	}
	return b
}

// decodeCheck reads a check's fields; tagged says the session seals, so
// the check must carry a tag, which checkTagOK then verifies under the
// pair's key for the sender the fields name.
func decodeCheck(p []byte, tagged bool) (check, error) {
	want := checkLen
	if tagged {
		want += checkTag
	}
	if len(p) != want {
		return check{}, errCheckShort
	}
	if p[0] != netcore.Magic0 || p[1] != punchMagic1 || p[2] != punchVer || p[5] != 0 ||
		(p[3] != checkKind && p[3] != answerKind) || p[4]&^checkNominate != 0 {
		return check{}, errCheckField
	}
	c := check{Answer: p[3] == answerKind, Nominate: p[4]&checkNominate != 0, Token: le.Uint64(p[6:]),
		From: netcore.PeerID(le.Uint16(p[14:])), To: netcore.PeerID(le.Uint16(p[16:])),
		Tx: le.Uint64(p[18:]), Seq: le.Uint32(p[26:])}
	if c.Token == 0 || c.From == c.To || c.From == netcore.PeerUnassigned || c.To == netcore.PeerUnassigned {
		return check{}, errCheckField
	}
	return c, nil
}

// checkTagOK reports whether the tagged check p was made under key.
func checkTagOK(p, key []byte) bool {
	if len(p) != checkLen+checkTag || key == nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write(p[:checkLen])
	return hmac.Equal(m.Sum(nil)[:checkTag], p[checkLen:])
}

// A prime is a check's bytes with kind primeKind and no transaction,
// sequence or tag: it leaves with a small hop limit to open this side's NAT
// mapping toward a peer's address (punch.go) and is meant to die on the
// way. One that arrives anyway (a peer close by) is dropped unread,
// without an answer or a count, so it moves nothing. At checkLen bytes, a
// router that quotes more than the UDP header in its Time Exceeded quotes a
// datagram the hop tracer sees is not one of its probes.
func appendPrime(b []byte, token uint64, from, to netcore.PeerID) []byte {
	b = append(b, netcore.Magic0, punchMagic1, punchVer, primeKind, 0, 0)
	b = le.AppendUint64(b, token)
	b = le.AppendUint16(b, uint16(from))
	b = le.AppendUint16(b, uint16(to))
	return append(b, make([]byte, checkLen-18)...)
}

// isPrime reports whether p is a prime, of any length.
func isPrime(p []byte) bool {
	return len(p) >= 4 && p[0] == netcore.Magic0 && p[1] == punchMagic1 && p[2] == punchVer && p[3] == primeKind
}

// A relay frame is a netcore datagram whose constant bytes carry the
// destination instead: byte 1 ('S') becomes 'R', byte 2 (the protocol
// version) and byte 15 (reserved, zero) hold the destination's PeerID, low
// byte first. It costs no byte, so a datagram of MaxDatagram stays one
// (Q5); the receiver puts the constant bytes back and hands the endpoint
// the very datagram its peer sealed.

// relayDest reads a relay frame's destination, token and sender.
func relayDest(p []byte) (to netcore.PeerID, token uint64, from netcore.PeerID, ok bool) {
	if len(p) < netcore.HeaderLen || p[0] != netcore.Magic0 || p[1] != relayMagic1 {
		return 0, 0, 0, false
	}
	return netcore.PeerID(uint16(p[2]) | uint16(p[15])<<8), le.Uint64(p[4:]), netcore.PeerID(le.Uint16(p[12:])), true
}

// toRelayFrame rewrites a netcore datagram (in place) into a relay frame
// for to; fromRelayFrame undoes it.
func toRelayFrame(p []byte, to netcore.PeerID) {
	p[1], p[2], p[15] = relayMagic1, byte(to), byte(to>>8)
}

func fromRelayFrame(p []byte) {
	p[1], p[2], p[15] = netcore.Magic1, netcore.Version, 0
}

// Relay addresses: a relayed link's address is a made-up IPv6 address in
// the zone "relay" whose low bytes are the peer's ID. No socket delivers
// from a zone of that name, so it never meets a real address; the
// session's transport sends what the endpoint addresses there to the host
// as a relay frame.
const relayZone = "relay"

func relayAddr(id netcore.PeerID) netip.AddrPort {
	a := [16]byte{0xfd, 'l', 'a', 'g', 'r', 'e', 'l', 'y'}
	a[14], a[15] = byte(id>>8), byte(id)
	return netip.AddrPortFrom(netip.AddrFrom16(a).WithZone(relayZone), 0)
}

func relayPeer(a netip.AddrPort) (netcore.PeerID, bool) {
	ad := a.Addr()
	if ad.Zone() != relayZone {
		return 0, false
	}
	b := ad.As16()
	return netcore.PeerID(uint16(b[14])<<8 | uint16(b[15])), true
}

// isRelayed reports whether addr is a relayed link's address.
func isRelayed(addr netip.AddrPort) bool { _, ok := relayPeer(addr); return ok }

// addrs messages: a member's local addresses (to the host), and the host's
// table of every address it knows for each other member.
const (
	kindAddrs byte = 0x25 // member → host, global channel: my local addresses
	kindPeers byte = 0x26 // host → member, global channel: addresses to try for the others
	kindPaths byte = 0x27 // host → member, global channel: the pairs it relays
	kindPairs byte = 0x28 // member → host, global channel: its pairs not connected yet
	maxLocals      = 8    // local addresses a member reports
	maxCands       = 16   // candidates a pair tries (the host's, then peer-reflexive)
)

func appendAddr(b []byte, a netip.AddrPort) []byte {
	ad := a.Addr().Unmap()
	if ad.Is4() {
		v := ad.As4()
		b = append(b, 4)
		b = append(b, v[:]...)
	} else {
		v := ad.As16()
		b = append(b, 16)
		b = append(b, v[:]...)
	}
	return le.AppendUint16(b, a.Port())
}

func decodeAddr(p []byte) (netip.AddrPort, []byte, error) {
	if len(p) < 1 {
		return netip.AddrPort{}, nil, errLobbyShort
	}
	n := int(p[0])
	if n != 4 && n != 16 {
		return netip.AddrPort{}, nil, errLobbyField
	}
	if len(p) < 1+n+2 {
		return netip.AddrPort{}, nil, errLobbyShort
	}
	var a netip.Addr
	if n == 4 {
		a = netip.AddrFrom4([4]byte(p[1:5]))
	} else {
		a = netip.AddrFrom16([16]byte(p[1:17])).Unmap()
	}
	port := le.Uint16(p[1+n:])
	if port == 0 || a.IsUnspecified() || a.IsMulticast() {
		return netip.AddrPort{}, nil, errLobbyField
	}
	return netip.AddrPortFrom(a, port), p[1+n+2:], nil
}

func appendAddrs(b []byte, kind byte, addrs []netip.AddrPort) []byte {
	addrs = addrs[:min(len(addrs), maxLocals)]
	b = append(b, kind, byte(len(addrs)))
	for _, a := range addrs {
		b = appendAddr(b, a)
	}
	return b
}

func decodeAddrs(p []byte) ([]netip.AddrPort, error) {
	if len(p) < 2 {
		return nil, errLobbyShort
	}
	if p[0] != kindAddrs {
		return nil, errLobbyKind
	}
	n := int(p[1])
	if n > maxLocals {
		return nil, errLobbyField
	}
	rest := p[2:]
	out := make([]netip.AddrPort, 0, n)
	for range n {
		a, r, err := decodeAddr(rest)
		if err != nil {
			return nil, err
		}
		out, rest = append(out, a), r
	}
	if len(rest) != 0 {
		return nil, errLobbyLong
	}
	return out, nil
}

// peerAddrs is one entry of the host's table: the addresses to try for one
// member, the one the host sees first.
type peerAddrs struct {
	ID    netcore.PeerID
	Addrs []netip.AddrPort
}

func appendPeers(b []byte, list []peerAddrs) []byte {
	b = append(b, kindPeers)
	b = le.AppendUint16(b, uint16(len(list)))
	for _, e := range list {
		addrs := e.Addrs[:min(len(e.Addrs), maxLocals+1)]
		b = le.AppendUint16(b, uint16(e.ID))
		b = append(b, byte(len(addrs)))
		for _, a := range addrs {
			b = appendAddr(b, a)
		}
	}
	return b
}

func decodePeers(p []byte) ([]peerAddrs, error) {
	if len(p) < 3 {
		return nil, errLobbyShort
	}
	if p[0] != kindPeers {
		return nil, errLobbyKind
	}
	n := int(le.Uint16(p[1:]))
	rest := p[3:]
	// Each entry takes at least 3 bytes: refuse a count the bytes cannot
	// hold before allocating for it.
	if n > maxMembers || n > len(rest)/3 {
		return nil, errLobbyField
	}
	out := make([]peerAddrs, 0, n)
	for range n {
		if len(rest) < 3 {
			return nil, errLobbyShort
		}
		e := peerAddrs{ID: netcore.PeerID(le.Uint16(rest))}
		k := int(rest[2])
		rest = rest[3:]
		if e.ID == netcore.PeerUnassigned || k > maxLocals+1 {
			return nil, errLobbyField
		}
		for range k {
			a, r, err := decodeAddr(rest)
			if err != nil {
				return nil, err
			}
			e.Addrs, rest = append(e.Addrs, a), r
		}
		out = append(out, e)
	}
	if len(rest) != 0 {
		return nil, errLobbyLong
	}
	return out, nil
}

// appendPaths: the host's list of relayed pairs, so every machine can say
// which telemetry lines were measured through the host.
func appendPaths(b []byte, pairs []pairKey) []byte {
	b = append(b, kindPaths)
	b = le.AppendUint16(b, uint16(len(pairs)))
	for _, p := range pairs {
		b = le.AppendUint16(b, uint16(p.a))
		b = le.AppendUint16(b, uint16(p.b))
	}
	return b
}

func decodePaths(p []byte) ([]pairKey, error) {
	if len(p) < 3 {
		return nil, errLobbyShort
	}
	if p[0] != kindPaths {
		return nil, errLobbyKind
	}
	n := int(le.Uint16(p[1:]))
	if n > maxMembers*maxMembers/2 || len(p) != 3+4*n {
		return nil, errLobbyField
	}
	out := make([]pairKey, 0, n)
	for i := range n {
		k := pairKey{netcore.PeerID(le.Uint16(p[3+4*i:])), netcore.PeerID(le.Uint16(p[5+4*i:]))}
		if k.a >= k.b {
			return nil, errLobbyField
		}
		out = append(out, k)
	}
	return out, nil
}

// pairReport is a member's word on one of its pairs that carries no
// traffic yet: what it tries (a Path).
type pairReport struct {
	Peer   netcore.PeerID
	Trying path
}

func appendPairs(b []byte, list []pairReport) []byte {
	b = append(b, kindPairs)
	b = le.AppendUint16(b, uint16(len(list)))
	for _, r := range list {
		b = le.AppendUint16(b, uint16(r.Peer))
		b = append(b, byte(r.Trying))
	}
	return b
}

func decodePairs(p []byte) ([]pairReport, error) {
	if len(p) < 3 {
		return nil, errLobbyShort
	}
	if p[0] != kindPairs {
		return nil, errLobbyKind
	}
	n := int(le.Uint16(p[1:]))
	if n > maxMembers || len(p) != 3+3*n {
		return nil, errLobbyField
	}
	out := make([]pairReport, 0, n)
	for i := range n {
		r := pairReport{Peer: netcore.PeerID(le.Uint16(p[3+3*i:])), Trying: path(p[5+3*i])}
		if r.Trying > pathRelayed || r.Peer == netcore.PeerUnassigned {
			return nil, errLobbyField
		}
		out = append(out, r)
	}
	return out, nil
}
