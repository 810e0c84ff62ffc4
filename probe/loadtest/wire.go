package loadtest

import (
	"encoding/binary"
	"errors"
)

// Message kinds. Every message of a load test starts with its kind and the
// test's id; docs/load-test.md ("On the wire") has each byte by byte.
const (
	kindRequest byte = 0x30 // tester → peer: run a test with this cap
	kindAnswer  byte = 0x31 // peer → tester: accepted (with the granted cap) or refused (why)
	kindLoad    byte = 0x32 // either way: one load datagram, padded
	kindReport  byte = 0x33 // peer → tester: what arrived of the tester's load so far
	kindPace    byte = 0x34 // tester → peer: send load in this phase at this rate, with the peer's nonce
	kindProbe   byte = 0x35 // tester → peer: a round-trip probe
	kindEcho    byte = 0x36 // peer → tester: the probe's echo, with the peer's nonce
	kindStop    byte = 0x37 // either way: the test is over, and why
)

// Sizes. A message travels whole in one unnumbered datagram of the pair's
// link; carrierOverhead is what that datagram adds around the message (the
// header 24, the seal 32, the record header 3 and the unnumbered record's
// id and flags 5), so the largest load datagram is exactly 1400 bytes (Q5).
const (
	carrierOverhead = 64
	maxMessage      = 1400 - carrierOverhead
	// minLoad is the smallest load datagram, message bytes: with the
	// cap it bounds a test in datagrams a second (at 50 Mbit/s at most
	// 5 874), not only in bits. A load datagram or a pace command asking
	// for a smaller one is malformed.
	minLoad    = 1000
	requestLen = 14
	answerLen  = 14
	loadHead   = 18
	reportLen  = 26
	paceLen    = 20
	probeLen   = 17
	stopLen    = 6
	// protoVersion is the version a request carries; a peer refuses one it
	// does not know.
	protoVersion = 1
)

// phase is a step of the test. The loaded phases (upRamp to both) are the
// ones load datagrams, reports and pace commands name on the wire.
type phase uint8

const (
	phaseNone     phase = iota // asked, not answered yet
	phaseIdle                  // 2 s: no load, the idle round trip
	phaseUpRamp                // the tester sends, rate rising
	phaseUpHold                // the tester sends at the hold rate
	phaseDownRamp              // the peer sends, rate rising
	phaseDownHold              // the peer sends at the hold rate
	phaseBoth                  // both send at their hold rates
	phaseDone
	numPhases
)

func (p phase) loaded() bool   { return p >= phaseUpRamp && p <= phaseBoth }
func (p phase) upload() bool   { return p == phaseUpRamp || p == phaseUpHold || p == phaseBoth }
func (p phase) download() bool { return p == phaseDownRamp || p == phaseDownHold || p == phaseBoth }

// stopReason is why a test ended; 0 is a complete test. In an answer, 0
// accepts and the refusals are stopRefused, stopBusy and stopRelayed.
type stopReason uint8

const (
	stopComplete stopReason = iota
	stopRefused
	stopBusy
	stopRelayed
	stopCancelled
	stopPeerLeft
	numReasons
)

// reasonText is each reason as the result's stopped field writes it.
var reasonText = [numReasons]string{"", "peer refused", "busy", "relayed", "cancelled", "peer left"}

// message is any decoded message; which fields mean something depends on
// the kind (the encoders below say which).
type message struct {
	kind    byte
	id      uint32
	phase   phase      // load, report, pace
	version uint8      // request
	reason  stopReason // answer (stopComplete: accepted), stop
	rate    uint64     // bit/s: request the cap, answer the granted cap, pace the rate
	size    uint16     // load: the message's length; pace: the size to send
	seq     uint32     // load: datagram number; probe, echo: probe number
	stamp   uint32     // load, probe, echo: the sender's clock, µs since its test began
	nonce   uint32     // the peer's nonce: its load and echoes carry it, a pace echoes it; 0 in a probe
	elapsed uint32     // report: µs from the phase's first arrival to its latest
	bytes   uint64     // report: message bytes of the phase's load received
	count   uint32     // report: load datagrams of the phase received
	highest uint32     // report: highest datagram number of the phase received
}

// Decode errors. Sentinels, so that rejecting a flood of bad messages
// allocates nothing.
var (
	errShort   = errors.New("loadtest: message too short")
	errKind    = errors.New("loadtest: not a load-test message")
	errLength  = errors.New("loadtest: message length does not fit its kind")
	errPhase   = errors.New("loadtest: phase not allowed in this message")
	errReason  = errors.New("loadtest: unknown reason")
	errRate    = errors.New("loadtest: rate does not fit the answer")
	errVersion = errors.New("loadtest: request without a version")
	errSize    = errors.New("loadtest: datagram size out of range")
	errNonce   = errors.New("loadtest: a probe carries no nonce")
)

// fixedLen is the exact length of each fixed-size kind; load is at least
// minLoad and at most maxMessage.
func fixedLen(kind byte) int {
	switch kind {
	case kindRequest:
		return requestLen
	case kindAnswer:
		return answerLen
	case kindReport:
		return reportLen
	case kindPace:
		return paceLen
	case kindProbe, kindEcho:
		return probeLen
	case kindStop:
		return stopLen
	}
	return 0
}

var le = binary.LittleEndian

// decode reads one message. It never panics and allocates nothing; a
// message with a known kind but the wrong shape is an error, since a
// message that changes shape gets a new kind.
func decode(b []byte) (message, error) {
	if len(b) < 5 {
		return message{}, errShort
	}
	m := message{kind: b[0], id: le.Uint32(b[1:])}
	if m.kind == kindLoad {
		if len(b) < minLoad {
			return message{}, errSize
		}
		if len(b) > maxMessage {
			return message{}, errLength
		}
		m.phase, m.seq, m.stamp, m.size = phase(b[5]), le.Uint32(b[6:]), le.Uint32(b[10:]), uint16(len(b))
		m.nonce = le.Uint32(b[14:])
		if !m.phase.loaded() {
			return message{}, errPhase
		}
		return m, nil
	}
	n := fixedLen(m.kind)
	if n == 0 {
		return message{}, errKind
	}
	if len(b) != n {
		return message{}, errLength
	}
	return decodeFixed(m, b)
}

// decodeFixed reads the body of a fixed-size kind, b of its exact length.
func decodeFixed(m message, b []byte) (message, error) {
	switch m.kind {
	case kindRequest:
		m.version, m.rate = b[5], le.Uint64(b[6:])
		if m.version == 0 {
			return message{}, errVersion
		}
		if m.rate == 0 {
			return message{}, errRate
		}
	case kindAnswer:
		m.reason, m.rate = stopReason(b[5]), le.Uint64(b[6:])
		switch {
		case m.reason > stopRelayed:
			return message{}, errReason
		case (m.reason == stopComplete) != (m.rate > 0):
			return message{}, errRate
		}
	case kindReport:
		m.phase, m.elapsed, m.bytes = phase(b[5]), le.Uint32(b[6:]), le.Uint64(b[10:])
		m.count, m.highest = le.Uint32(b[18:]), le.Uint32(b[22:])
		if !m.phase.upload() {
			return message{}, errPhase
		}
	case kindPace:
		m.phase, m.rate, m.size, m.nonce = phase(b[5]), le.Uint64(b[6:]), le.Uint16(b[14:]), le.Uint32(b[16:])
		if !m.phase.download() {
			return message{}, errPhase
		}
		if m.size < minLoad || m.size > maxMessage {
			return message{}, errSize
		}
	case kindProbe, kindEcho:
		m.seq, m.stamp, m.nonce = le.Uint32(b[5:]), le.Uint32(b[9:]), le.Uint32(b[13:])
		if m.kind == kindProbe && m.nonce != 0 {
			return message{}, errNonce
		}
	case kindStop:
		m.reason = stopReason(b[5])
		if m.reason >= numReasons {
			return message{}, errReason
		}
	}
	return m, nil
}

// zeros pads load datagrams.
var zeros [maxMessage]byte

// appendMessage appends m's bytes to dst: a load datagram padded with
// zeros to m.size (at least minLoad, at most maxMessage). It allocates
// only when dst has too little room.
func appendMessage(dst []byte, m message) []byte {
	dst = append(dst, m.kind)
	dst = le.AppendUint32(dst, m.id)
	switch m.kind {
	case kindRequest:
		dst = append(dst, m.version)
		dst = le.AppendUint64(dst, m.rate)
	case kindAnswer:
		dst = append(dst, byte(m.reason))
		dst = le.AppendUint64(dst, m.rate)
	case kindLoad:
		dst = append(dst, byte(m.phase))
		dst = le.AppendUint32(dst, m.seq)
		dst = le.AppendUint32(dst, m.stamp)
		dst = le.AppendUint32(dst, m.nonce)
		size := min(max(int(m.size), minLoad), maxMessage)
		dst = append(dst, zeros[:size-loadHead]...)
	case kindReport:
		dst = append(dst, byte(m.phase))
		dst = le.AppendUint32(dst, m.elapsed)
		dst = le.AppendUint64(dst, m.bytes)
		dst = le.AppendUint32(dst, m.count)
		dst = le.AppendUint32(dst, m.highest)
	case kindPace:
		dst = append(dst, byte(m.phase))
		dst = le.AppendUint64(dst, m.rate)
		dst = le.AppendUint16(dst, m.size)
		dst = le.AppendUint32(dst, m.nonce)
	case kindProbe, kindEcho:
		dst = le.AppendUint32(dst, m.seq)
		dst = le.AppendUint32(dst, m.stamp)
		dst = le.AppendUint32(dst, m.nonce)
	case kindStop:
		dst = append(dst, byte(m.reason))
	}
	return dst
}
