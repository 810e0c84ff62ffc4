package netcore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
)

// Sealing (Q7): with a pre-shared key every datagram is sealed with
// AES-256-GCM (standard library). Each sending endpoint has its own key,
// derived with HKDF-SHA256 from the pre-shared key, the session token, the
// sender's PeerID and a random 64-bit instance chosen when the endpoint is
// built. The nonce is a 64-bit counter that the endpoint increments for
// every datagram it seals, to any peer, so under one key a nonce is never
// used twice; the instance makes a restarted process use a fresh key even
// with the same token and PeerID.
//
// The receiver keeps, per link, the instance it first authenticated and a
// sliding window over counters (replayWindowBits deep) so a datagram
// recorded and sent again is rejected.

const sealInfo = "lagscope/1 datagram key"

// deriveAEAD builds the AEAD for one sender instance; info separates the
// datagram key from the handshake key.
func deriveAEAD(psk []byte, info string, token uint64, sender PeerID, instance uint64) (cipher.AEAD, error) {
	var salt [8]byte
	le.PutUint64(salt[:], token)
	var id [10]byte
	le.PutUint16(id[:], uint16(sender))
	le.PutUint64(id[2:], instance)
	key, err := hkdf.Key(sha256.New, psk, salt[:], info+string(id[:]), 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealer seals this endpoint's outgoing datagrams. Session and handshake
// datagrams have different keys but share one counter, so no nonce is ever
// used twice by this endpoint under any key.
type sealer struct {
	aead     cipher.AEAD // session datagrams
	hsAEAD   cipher.AEAD // handshake datagrams
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

// opener authenticates one peer's datagrams.
type opener struct {
	aead     cipher.AEAD
	instance uint64
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

// open authenticates and decrypts a sealed datagram into dst (which must
// not overlap b) and returns the plaintext body. It does not update the
// replay window.
func (o *opener) open(dst, b []byte, counter uint64) ([]byte, error) {
	le.PutUint64(o.nonce[4:], counter)
	start := HeaderLen + sealPrefixLen
	body, err := o.aead.Open(dst[:0], o.nonce[:], b[start:], b[:start])
	if err != nil {
		return nil, errAuth
	}
	return body, nil
}
