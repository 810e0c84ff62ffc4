package session

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// The session's own load-test messages (docs/load-test.md, "Taking
// turns"): a tester asks the host for the session's turn toward one peer;
// the host tells that peer, which says it is ready; the host then grants
// the turn to the tester, and either end gives it back when the test is
// over. A finished test's figures go to every member, so that each
// machine's diagnosis can name a line that bloats. The test's own
// messages are probe/loadtest's (0x30–0x37). All travel unnumbered.
const (
	kindLoadClaim  byte = 0x2a // member → host: ask for the turn, give it back, or (the peer) be ready
	kindLoadGrant  byte = 0x2b // host → member: the turn granted or refused (the tester), or announced (the peer)
	kindLoadResult byte = 0x2c // tester → every member: what its line added under load
)

// Lengths of the fixed-size load messages. A claim and a grant have the
// same shape and length, so that no answer is larger than its claim.
const (
	loadTurnLen   = 10
	loadResultLen = 10
)

// Claim flags (member → host).
const (
	turnAsk     byte = 0 // the tester asks for the turn
	turnRelease byte = 1 // the tester or the peer gives it back: the test is over, or never started
	turnReady   byte = 2 // the peer has the host's notice and takes the test's request
	numClaims        = 3
)

// Grant flags (host → member).
const (
	grantBusy   byte = 0 // to the tester: not now
	grantOK     byte = 1 // to the tester: the turn is its own, the peer is ready
	grantNotice byte = 2 // to the peer: the tester holds the turn for this test toward it
	numGrants        = 3
)

// loadTurnMsg is a claim or a grant: one test's turn, naming the test, its
// tester and its peer.
type loadTurnMsg struct {
	ID     uint32
	Tester netcore.PeerID
	Peer   netcore.PeerID
	Flag   byte
}

// loadFigures is a finished test's added round trip per direction, the
// sender's line; a direction not measured is negative.
type loadFigures struct {
	Up, Down time.Duration
}

var (
	errLoadWire = errors.New("load message: wrong length or kind")
	errLoadFlag = errors.New("load message: unknown flag")
	// errLoadTwice: a second claim from one member at one instant (in one
	// datagram).
	errLoadTwice = errors.New("load message: a second claim in one datagram")
)

func appendLoadTurn(b []byte, kind byte, t loadTurnMsg) []byte {
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint32(b, t.ID)
	b = binary.LittleEndian.AppendUint16(b, uint16(t.Tester))
	b = binary.LittleEndian.AppendUint16(b, uint16(t.Peer))
	return append(b, t.Flag)
}

// decodeLoadTurn reads a claim or a grant (kind says which).
func decodeLoadTurn(b []byte, kind byte) (loadTurnMsg, error) {
	if len(b) != loadTurnLen || b[0] != kind {
		return loadTurnMsg{}, errLoadWire
	}
	t := loadTurnMsg{ID: binary.LittleEndian.Uint32(b[1:]), Tester: netcore.PeerID(binary.LittleEndian.Uint16(b[5:])),
		Peer: netcore.PeerID(binary.LittleEndian.Uint16(b[7:])), Flag: b[9]}
	if (kind == kindLoadClaim && t.Flag >= numClaims) || (kind == kindLoadGrant && t.Flag >= numGrants) {
		return loadTurnMsg{}, errLoadFlag
	}
	return t, nil
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
