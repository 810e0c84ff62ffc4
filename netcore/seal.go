package netcore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
)

// Sealing (Q7). A sealing endpoint seals every session datagram with
// AES-256-GCM under a key of its pair: each machine draws an X25519 key
// pair when its endpoint is built (its identity), the session hands every
// member the others' public keys (in the handshake and the roster), and the
// two ends of a link derive the link's keys with HKDF-SHA256 from their
// X25519 shared secret, mixed with the pre-shared key when the session has
// one. So a datagram "from" X to Y opens only with the key X and Y share:
// a member that holds the session code proves membership, but cannot speak
// as another member, and a stranger to an open session (no code) cannot
// speak as anyone once the pair has its keys. Each direction has a key of
// its own.
//
// The nonce is a 64-bit counter that the endpoint increments for every
// datagram it seals, to any peer: under one key a nonce is never used
// twice. The datagram carries a random 64-bit instance beside the counter;
// a receiver locks a link onto the first instance that authenticated and
// keeps a sliding window over counters (replayWindowBits deep), so a
// datagram recorded and sent again is rejected.
//
// Handshake datagrams (before a joiner has a place and keys) are sealed
// only in a keyed session, under a key derived from the pre-shared key
// alone: every code holder can make one, which the session's cookies and
// nonces answer for.

// PublicKey is a machine's X25519 public key, 32 bytes: what the others
// need to derive the keys of their links to it.
type PublicKey [32]byte

const (
	sealInfo          = "lagscope/2 datagram key"
	sealHandshakeInfo = "lagscope/2 handshake key"
)

var errPeerKey = errors.New("netcore: the peer's public key is missing, malformed, or not the one its link was opened with")

// newAEAD is AES-256-GCM under a 32-byte key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// deriveHandshakeAEAD builds the handshake AEAD of one sender instance
// from the pre-shared key.
func deriveHandshakeAEAD(psk []byte, sender PeerID, instance uint64) (cipher.AEAD, error) {
	var id [10]byte
	le.PutUint16(id[:], uint16(sender))
	le.PutUint64(id[2:], instance)
	key, err := hkdf.Key(sha256.New, psk, make([]byte, 8), sealHandshakeInfo+string(id[:]), 32)
	if err != nil {
		return nil, err
	}
	return newAEAD(key)
}

// pairSecret is what both ends of a link derive every key of the link
// from: HKDF-SHA256's pseudorandom key of their X25519 shared secret and
// the pre-shared key (salt: the session token), and both public keys.
type pairSecret struct {
	prk            []byte
	self, peer     PeerID
	selfPK, peerPK PublicKey
}

func newPairSecret(priv *ecdh.PrivateKey, self, peer PeerID, peerPK PublicKey, psk []byte, token uint64) (*pairSecret, error) {
	pub, err := ecdh.X25519().NewPublicKey(peerPK[:])
	if err != nil {
		return nil, errPeerKey
	}
	shared, err := priv.ECDH(pub)
	if err != nil {
		return nil, errPeerKey // a low-order point: no secret at all
	}
	var salt [8]byte
	le.PutUint64(salt[:], token)
	prk, err := hkdf.Extract(sha256.New, append(shared, psk...), salt[:])
	if err != nil {
		return nil, err
	}
	ps := &pairSecret{prk: prk, self: self, peer: peer, peerPK: peerPK}
	copy(ps.selfPK[:], priv.PublicKey().Bytes())
	return ps, nil
}

// key derives the 32-byte key of one purpose for the direction from
// sender to the other end: both ends derive the same key for a direction.
func (ps *pairSecret) key(purpose string, fromSelf bool) ([]byte, error) {
	from, to, fromPK, toPK := ps.self, ps.peer, ps.selfPK, ps.peerPK
	if !fromSelf {
		from, to, fromPK, toPK = to, from, toPK, fromPK
	}
	var info [4 + 64]byte
	le.PutUint16(info[0:], uint16(from))
	le.PutUint16(info[2:], uint16(to))
	copy(info[4:], fromPK[:])
	copy(info[36:], toPK[:])
	return hkdf.Expand(sha256.New, ps.prk, purpose+string(info[:]), 32)
}

// aeads are a link's datagram keys, one each way.
func (ps *pairSecret) aeads() (send, recv cipher.AEAD, err error) {
	for i, fromSelf := range []bool{true, false} {
		k, err := ps.key(sealInfo, fromSelf)
		if err != nil {
			return nil, nil, err
		}
		a, err := newAEAD(k)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			send = a
		} else {
			recv = a
		}
	}
	return send, recv, nil
}

// sealer seals this endpoint's outgoing datagrams. Every key it seals
// under — each link's, the handshake's — shares one counter, so this
// endpoint never uses a nonce twice under any key.
type sealer struct {
	hsAEAD   cipher.AEAD // handshake datagrams; nil in a session without a pre-shared key
	instance uint64
	counter  uint64   // last counter used; the first datagram uses 1
	nonce    [12]byte // kept here so Seal's interface call does not move it to the heap
}

// seal seals the datagram in b with aead: b[:HeaderLen] is the header
// (with flagSealed set), b[HeaderLen+sealPrefixLen:] the plaintext body. It
// returns the sealed datagram, which reuses b's memory; b must have room
// for the tag.
func (s *sealer) seal(aead cipher.AEAD, b []byte) []byte {
	s.counter++
	le.PutUint64(b[HeaderLen:], s.instance)
	le.PutUint64(b[HeaderLen+8:], s.counter)
	le.PutUint64(s.nonce[4:], s.counter)
	start := HeaderLen + sealPrefixLen
	out := aead.Seal(b[start:start], s.nonce[:], b[start:], b[:start])
	return b[:start+len(out)]
}

// opener authenticates one peer's datagrams on a link: its key is the
// pair's, its instance the first that authenticated (locked).
type opener struct {
	aead     cipher.AEAD
	instance uint64
	locked   bool
	nonce    [12]byte
	window   replayWindow
}

// replayWindowBits is how far behind the newest counter a datagram may
// arrive and still be accepted. The counter is shared by all of a sender's
// links, so one link sees gaps; 1024 leaves room for reordering on a
// session of many players.
const replayWindowBits = 1024

type replayWindow struct {
	highest uint64
	bits    [replayWindowBits / 64]uint64
}

// fresh reports whether counter c has not been seen and is not too old.
// Counter 0 is never sent.
func (w *replayWindow) fresh(c uint64) bool {
	switch {
	case c == 0:
		return false
	case c > w.highest:
		return true
	case w.highest-c >= replayWindowBits:
		return false
	}
	i := c % replayWindowBits
	return w.bits[i/64]&(1<<(i%64)) == 0
}

// mark records counter c as seen; call it only after c authenticated and
// fresh(c) held.
func (w *replayWindow) mark(c uint64) {
	if c > w.highest {
		if c-w.highest >= replayWindowBits {
			w.bits = [replayWindowBits / 64]uint64{}
		} else {
			for x := w.highest + 1; x < c; x++ {
				i := x % replayWindowBits
				w.bits[i/64] &^= 1 << (i % 64)
			}
		}
		w.highest = c
	}
	i := c % replayWindowBits
	w.bits[i/64] |= 1 << (i % 64)
}

// sealedParts splits a sealed datagram: the sender instance, the counter,
// and the ciphertext with its tag.
func sealedParts(b []byte) (instance, counter uint64, ct []byte, err error) {
	if len(b) < HeaderLen+SealOverhead {
		return 0, 0, nil, errShort
	}
	return le.Uint64(b[HeaderLen:]), le.Uint64(b[HeaderLen+8:]), b[HeaderLen+sealPrefixLen:], nil
}

// openWith authenticates and decrypts a sealed datagram under aead into
// dst (which must not overlap b) and returns the plaintext body.
func openWith(aead cipher.AEAD, nonce *[12]byte, dst, b []byte, counter uint64) ([]byte, error) {
	le.PutUint64(nonce[4:], counter)
	start := HeaderLen + sealPrefixLen
	body, err := aead.Open(dst[:0], nonce[:], b[start:], b[:start])
	if err != nil {
		return nil, errAuth
	}
	return body, nil
}
