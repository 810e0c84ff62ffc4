package session

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// The session's own load-test messages (docs/load-test.md, "Taking
// turns"): a tester asks the host for the session's turn, the host grants
// or refuses it, and a finished test's figures go to every member, so that
// each machine's diagnosis can name a line that bloats. The test's own
// messages are probe/loadtest's (0x30–0x37). All travel unnumbered.
const (
	kindLoadClaim  byte = 0x2a // member → host: take (or give back) the session's turn for test id toward peer
	kindLoadGrant  byte = 0x2b // host → member: the turn for test id is yours, or busy
	kindLoadResult byte = 0x2c // tester → every member: what its line added under load
)

// Lengths of the fixed-size load messages.
const (
	loadClaimLen  = 8
	loadGrantLen  = 6
	loadResultLen = 10
)

// loadClaim is a turn asked for (Release false) or given back.
type loadClaim struct {
	ID      uint32
	Peer    uint16 // the other end's PeerID
	Release bool
}

// loadGrant is the host's answer to a claim.
type loadGrant struct {
	ID uint32
	OK bool
}

// loadFigures is a finished test's added round trip per direction, the
// sender's line; a direction not measured is negative.
type loadFigures struct {
	Up, Down time.Duration
}

var (
	errLoadWire = errors.New("load message: wrong length or kind")
	errLoadFlag = errors.New("load message: unknown flag")
)

func appendLoadClaim(b []byte, c loadClaim) []byte {
	b = append(b, kindLoadClaim)
	b = binary.LittleEndian.AppendUint32(b, c.ID)
	b = binary.LittleEndian.AppendUint16(b, c.Peer)
	if c.Release {
		return append(b, 1)
	}
	return append(b, 0)
}

func decodeLoadClaim(b []byte) (loadClaim, error) {
	if len(b) != loadClaimLen || b[0] != kindLoadClaim {
		return loadClaim{}, errLoadWire
	}
	if b[7] > 1 {
		return loadClaim{}, errLoadFlag
	}
	return loadClaim{ID: binary.LittleEndian.Uint32(b[1:]), Peer: binary.LittleEndian.Uint16(b[5:]), Release: b[7] == 1}, nil
}

func appendLoadGrant(b []byte, g loadGrant) []byte {
	b = append(b, kindLoadGrant)
	b = binary.LittleEndian.AppendUint32(b, g.ID)
	if g.OK {
		return append(b, 1)
	}
	return append(b, 0)
}

func decodeLoadGrant(b []byte) (loadGrant, error) {
	if len(b) != loadGrantLen || b[0] != kindLoadGrant {
		return loadGrant{}, errLoadWire
	}
	if b[5] > 1 {
		return loadGrant{}, errLoadFlag
	}
	return loadGrant{ID: binary.LittleEndian.Uint32(b[1:]), OK: b[5] == 1}, nil
}

// noFigure marks a direction not measured on the wire.
const noFigure = math.MaxUint32

func appendLoadResult(b []byte, f loadFigures) []byte {
	b = append(b, kindLoadResult, 0)
	for _, d := range []time.Duration{f.Up, f.Down} {
		us := uint32(noFigure)
		if d >= 0 {
			us = uint32(min(d/time.Microsecond, noFigure-1))
		}
		b = binary.LittleEndian.AppendUint32(b, us)
	}
	return b
}

func decodeLoadResult(b []byte) (loadFigures, error) {
	if len(b) != loadResultLen || b[0] != kindLoadResult {
		return loadFigures{}, errLoadWire
	}
	if b[1] != 0 {
		return loadFigures{}, errLoadFlag
	}
	var out [2]time.Duration
	for i := range out {
		us := binary.LittleEndian.Uint32(b[2+4*i:])
		out[i] = -1
		if us != noFigure {
			out[i] = time.Duration(us) * time.Microsecond
		}
	}
	return loadFigures{Up: out[0], Down: out[1]}, nil
}
