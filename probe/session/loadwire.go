package session

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/rungs"
)

// The session's own load-test messages (docs/load-test.md, "Taking
// turns" and "Everyone is told"): a tester asks the host for the
// session's turn toward one peer; the host tells that peer, which says it
// is ready; the host then grants the turn to the tester, tells every
// member the test begins, and either end gives the turn back when the test
// is over. The tester tells every member the test has ended, each seated
// player answers with the frames it waited on during the test (the cost
// where it falls), and the tester hands every member the result, so every
// machine publishes the same `load` line and its diagnosis knows the
// line. The test's own messages are probe/loadtest's (0x30–0x37). The
// turn's travel unnumbered; the notes, waits and results on the reliable
// channel: each machine must hear them once, and a lost one would leave a
// machine counting waits, or without the line, until its bound.
const (
	kindLoadClaim   byte = 0x2a // member → host: ask for the turn, give it back, or (the peer) be ready
	kindLoadGrant   byte = 0x2b // host → member: the turn granted or refused (the tester), or announced (the peer)
	kindLoadRetired byte = 0x2c // once a finished test's figures; never sent, refused when received
	kindLoadNote    byte = 0x2d // host → every member: a test begins; tester → every member: it has ended
	kindLoadWaits   byte = 0x2e // seated player → tester: the frames it waited on during the test
	kindLoadResult  byte = 0x2f // tester → every member: the test's result
)

// Lengths of the fixed-size load messages. A claim and a grant have the
// same shape and length, so that no answer is larger than its claim; a
// note has it too.
const (
	loadTurnLen   = 10
	loadResultLen = 9 + loadtest.ResultLen
	loadWaitsHead = 15
	// maxWaitFrames bounds the frames a waits message spans: a test is
	// counted for at most loadSeenFor, 30 000 frames at the fastest
	// frame rate (1000 fps).
	maxWaitFrames = 1 << 15
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

// Note flags.
const (
	noteBegins byte = 0 // (the host) the test begins: the tester holds the turn toward the peer
	noteEnds   byte = 1 // (the tester) the test has ended: send me your waits
	numNotes        = 2
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
// tester's line; a direction not measured is negative.
type loadFigures struct {
	Up, Down time.Duration
}

// loadWaitsMsg is what one seated player waited for during a test: the
// longest single wait, and the frames it waited before, as First and a
// bitmap of the frames from it (bit i of byte i/8, lowest first: frame
// First+i). The bitmap's first and last bits are set: it spans exactly
// the frames from the first waited to the last. No frames: First 0, no
// bitmap.
type loadWaitsMsg struct {
	ID      uint32
	Longest time.Duration
	First   uint32
	N       int // frames the bitmap spans
	Bits    []byte
}

// loadResultMsg is a finished test's result, with who tested whom.
type loadResultMsg struct {
	ID     uint32
	Tester netcore.PeerID
	Peer   netcore.PeerID
	Result loadtest.Result
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
	if (kind == kindLoadClaim && t.Flag >= numClaims) || (kind == kindLoadGrant && t.Flag >= numGrants) ||
		(kind == kindLoadNote && t.Flag >= numNotes) {
		return loadTurnMsg{}, errLoadFlag
	}
	return t, nil
}

// waitsOf is the waits message of frames (ascending, each once) and the
// longest wait: the bitmap spans the first to the last of them, at most
// maxWaitFrames (later frames are left out).
func waitsOf(id uint32, frames []int, longest time.Duration) loadWaitsMsg {
	w := loadWaitsMsg{ID: id, Longest: longest}
	if len(frames) == 0 || frames[0] < 0 {
		return w
	}
	first := frames[0]
	last := first
	for _, f := range frames {
		if f-first < maxWaitFrames {
			last = f
		}
	}
	w.First, w.N = uint32(first), last-first+1
	w.Bits = make([]byte, (w.N+7)/8)
	for _, f := range frames {
		if i := f - first; i < w.N {
			w.Bits[i/8] |= 1 << (i % 8)
		}
	}
	return w
}

// frames lists the frames w's bitmap names, ascending.
func (w loadWaitsMsg) frames() []int {
	var out []int
	for i := range w.N {
		if w.Bits[i/8]&(1<<(i%8)) != 0 {
			out = append(out, int(w.First)+i)
		}
	}
	return out
}

func appendLoadWaits(b []byte, w loadWaitsMsg) []byte {
	b = append(b, kindLoadWaits)
	b = binary.LittleEndian.AppendUint32(b, w.ID)
	b = binary.LittleEndian.AppendUint32(b, uint32(min(max(w.Longest/time.Microsecond, 0), math.MaxUint32)))
	b = binary.LittleEndian.AppendUint32(b, w.First)
	b = binary.LittleEndian.AppendUint16(b, uint16(w.N))
	return append(b, w.Bits...)
}

// decodeLoadWaits reads a waits message: its bitmap exactly as long as
// its span, the span at most maxWaitFrames, its first and last bits set
// and the bits past the span clear; no frames, no bitmap and a first
// frame of 0.
func decodeLoadWaits(b []byte) (loadWaitsMsg, error) {
	if len(b) < loadWaitsHead || b[0] != kindLoadWaits {
		return loadWaitsMsg{}, errLoadWire
	}
	le := binary.LittleEndian
	w := loadWaitsMsg{ID: le.Uint32(b[1:]), Longest: time.Duration(le.Uint32(b[5:])) * time.Microsecond,
		First: le.Uint32(b[9:]), N: int(le.Uint16(b[13:]))}
	bits := b[loadWaitsHead:]
	if w.N > maxWaitFrames || len(bits) != (w.N+7)/8 {
		return loadWaitsMsg{}, errLoadWire
	}
	if w.N == 0 {
		if w.First != 0 {
			return loadWaitsMsg{}, errLoadFlag
		}
		return w, nil
	}
	if uint64(w.First)+uint64(w.N) > math.MaxInt32 || bits[0]&1 == 0 || bits[(w.N-1)/8]&(1<<((w.N-1)%8)) == 0 ||
		(w.N%8 != 0 && bits[len(bits)-1]>>(w.N%8) != 0) {
		return loadWaitsMsg{}, errLoadFlag
	}
	w.Bits = bits
	return w, nil
}

func appendLoadResult(b []byte, r loadResultMsg) []byte {
	b = append(b, kindLoadResult)
	b = binary.LittleEndian.AppendUint32(b, r.ID)
	b = binary.LittleEndian.AppendUint16(b, uint16(r.Tester))
	b = binary.LittleEndian.AppendUint16(b, uint16(r.Peer))
	return loadtest.AppendResult(b, r.Result)
}

func decodeLoadResult(b []byte) (loadResultMsg, error) {
	if len(b) != loadResultLen || b[0] != kindLoadResult {
		return loadResultMsg{}, errLoadWire
	}
	le := binary.LittleEndian
	r := loadResultMsg{ID: le.Uint32(b[1:]), Tester: netcore.PeerID(le.Uint16(b[5:])), Peer: netcore.PeerID(le.Uint16(b[7:]))}
	res, err := loadtest.DecodeResult(b[9:])
	if err != nil {
		return loadResultMsg{}, err
	}
	if c := res.Cost; c != nil && (c.RungFrom > rungs.Rungs || c.RungTo > rungs.Rungs) {
		return loadResultMsg{}, errLoadFlag
	}
	r.Result = res
	return r, nil
}
