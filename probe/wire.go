package probe

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lagscope/lagscope/probe/feed"

	"github.com/lagscope/lagscope/rungs"
)

// The command types the engine sends and executes (feed.Cmd*, S19).
const (
	cmdTiming       = feed.CmdTiming
	cmdRemove       = feed.CmdRemove
	cmdGameSpeed    = feed.CmdGameSpeed
	cmdLatencyFudge = feed.CmdLatencyFudge
)

// Packet kinds carried on the netcore data channels: the first byte of
// every message on a private link. Stable IDs (S19); docs/protocol.md
// lists them with the session's (probe/session uses 0x20 and up).
const (
	kindFrame  uint8 = 1 // a frame packet (docs/architecture.md, "The lockstep as built")
	kindStatus uint8 = 2 // a frame packet without commands repeated while stalled
	// kindTelemetry is a player's telemetry, a snapshot update with the
	// ack of the other direction's stream (Q1–Q4; telemetry.go).
	kindTelemetry uint8 = 3
	// kindTelemetryAck is an observer's ack of a player's telemetry: an
	// observer sends nothing else the ack could ride on.
	kindTelemetryAck uint8 = 4
)

// framePacket is what each player sends once per send period. Through is the
// highest frame for which the sender has now sent every command it will ever
// send; RelCount is how many reliable frame packets the sender had sent
// including this one, so a receiver that got this packet unreliably knows
// whether it also holds everything sent reliably before it.
type framePacket struct {
	Kind     uint8
	Frame    int32 // the send frame it was sent on
	Through  int32
	RelCount uint32
	CkFrame  int32 // the last frame the sender executed, and its running checksum
	Ck       uint32
	Commands []feed.Command
	// Holds is, in status packets only, the sender's completeness for each
	// other player: the master needs it to pick a removed player's last frame.
	Holds []hold
}

type hold struct {
	Player  uint16
	Through int32
}

const framePacketHeader = 1 + 4 + 4 + 4 + 4 + 4 + 2
const commandHeader = 4 + 4 + 1 + 2

var errShort = errors.New("probe: packet too short")

func (p *framePacket) appendTo(b []byte) []byte {
	b = append(b, p.Kind)
	b = binary.LittleEndian.AppendUint32(b, uint32(p.Frame))
	b = binary.LittleEndian.AppendUint32(b, uint32(p.Through))
	b = binary.LittleEndian.AppendUint32(b, p.RelCount)
	b = binary.LittleEndian.AppendUint32(b, uint32(p.CkFrame))
	b = binary.LittleEndian.AppendUint32(b, p.Ck)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(p.Commands)))
	for _, c := range p.Commands {
		b = binary.LittleEndian.AppendUint32(b, uint32(c.Tag))
		b = binary.LittleEndian.AppendUint32(b, c.Seq)
		b = append(b, c.Type)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(c.Payload)))
		b = append(b, c.Payload...)
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(p.Holds)))
	for _, h := range p.Holds {
		b = binary.LittleEndian.AppendUint16(b, h.Player)
		b = binary.LittleEndian.AppendUint32(b, uint32(h.Through))
	}
	return b
}

// decodeFramePacket parses a frame packet. Command payloads are copied, so the
// result does not alias b.
func decodeFramePacket(b []byte) (framePacket, error) { return decodeFramePacketInto(b, nil) }

// decodeFramePacketInto is decodeFramePacket with the holds appended to
// holds[:0]: a stalled machine's status packet holds every player, and at
// 64 players a fresh slice per packet would be a fifth of a demo's
// allocated bytes. The result's Holds alias holds' array then.
func decodeFramePacketInto(b []byte, holds []hold) (framePacket, error) {
	var p framePacket
	if len(b) < framePacketHeader {
		return p, errShort
	}
	p.Kind = b[0]
	if p.Kind != kindFrame && p.Kind != kindStatus {
		return p, fmt.Errorf("probe: unknown packet kind %d", p.Kind)
	}
	p.Frame = int32(binary.LittleEndian.Uint32(b[1:]))
	p.Through = int32(binary.LittleEndian.Uint32(b[5:]))
	p.RelCount = binary.LittleEndian.Uint32(b[9:])
	p.CkFrame = int32(binary.LittleEndian.Uint32(b[13:]))
	p.Ck = binary.LittleEndian.Uint32(b[17:])
	n := int(binary.LittleEndian.Uint16(b[21:]))
	if p.Frame < 0 || p.Through < 0 {
		return p, errors.New("probe: negative frame")
	}
	rest := b[framePacketHeader:]
	if n > len(rest)/commandHeader {
		return p, errShort
	}
	if n > 0 {
		p.Commands = make([]feed.Command, 0, n)
	}
	for i := 0; i < n; i++ {
		if len(rest) < commandHeader {
			return p, errShort
		}
		c := feed.Command{
			Tag:  int32(binary.LittleEndian.Uint32(rest)),
			Seq:  binary.LittleEndian.Uint32(rest[4:]),
			Type: rest[8],
		}
		l := int(binary.LittleEndian.Uint16(rest[9:]))
		rest = rest[commandHeader:]
		if len(rest) < l {
			return p, errShort
		}
		if c.Tag < 0 {
			return p, errors.New("probe: negative command frame")
		}
		c.Payload = append([]byte(nil), rest[:l]...)
		rest = rest[l:]
		p.Commands = append(p.Commands, c)
	}
	if len(rest) < 2 {
		return p, errShort
	}
	nh := int(binary.LittleEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) != nh*6 {
		return p, errors.New("probe: holds do not match their count")
	}
	if nh > 0 {
		p.Holds = holds[:0]
		for i := range nh {
			p.Holds = append(p.Holds, hold{Player: binary.LittleEndian.Uint16(rest[i*6:]), Through: int32(binary.LittleEndian.Uint32(rest[i*6+2:]))})
		}
	}
	return p, nil
}

// Network event payloads (S19), little-endian, fixed size.

// reportPayload is NETWORK_REPORT (S5): times in microseconds; RTT is
// 0xFFFFFFFF when the report leaves it out (S6).
type reportPayload struct {
	RTTMicros     uint32
	WaitMicros    uint32
	ProcessMicros uint32
}

const noRTT = ^uint32(0)

func (r reportPayload) bytes() []byte {
	b := make([]byte, 0, 12)
	b = binary.LittleEndian.AppendUint32(b, r.RTTMicros)
	b = binary.LittleEndian.AppendUint32(b, r.WaitMicros)
	return binary.LittleEndian.AppendUint32(b, r.ProcessMicros)
}

func decodeReport(b []byte) (reportPayload, error) {
	if len(b) != 12 {
		return reportPayload{}, errors.New("probe: report payload must be 12 bytes")
	}
	return reportPayload{
		RTTMicros:     binary.LittleEndian.Uint32(b),
		WaitMicros:    binary.LittleEndian.Uint32(b[4:]),
		ProcessMicros: binary.LittleEndian.Uint32(b[8:]),
	}, nil
}

// timingLen is the size of a timing event's payload.
const timingLen = 11

// timingPayload is a timing event (S12, S15).
type timingPayload struct {
	Decided    int32 // the evaluation frame
	SendPeriod uint16
	LookAhead  uint16
	FPS        uint16
	Reason     uint8
}

// target is the timing the event asks for.
func (t timingPayload) target() rungs.Timing {
	return rungs.Timing{SendPeriod: int(t.SendPeriod), LookAhead: int(t.LookAhead)}
}

func (t timingPayload) bytes() []byte {
	b := make([]byte, 0, timingLen)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Decided))
	b = binary.LittleEndian.AppendUint16(b, t.SendPeriod)
	b = binary.LittleEndian.AppendUint16(b, t.LookAhead)
	b = binary.LittleEndian.AppendUint16(b, t.FPS)
	return append(b, t.Reason)
}

// decodeTiming reads a timing event and refuses one that no conforming
// master sends: a target that is not a valid timing (rungs.Timing.Valid: a
// send period of 1..10 and a look-ahead of whole send periods from its
// rung's up to 250) or a frame rate outside 1..1000.
func decodeTiming(b []byte) (timingPayload, error) {
	if len(b) != timingLen {
		return timingPayload{}, errors.New("probe: timing payload must be 11 bytes")
	}
	t := timingPayload{
		Decided:    int32(binary.LittleEndian.Uint32(b)),
		SendPeriod: binary.LittleEndian.Uint16(b[4:]),
		LookAhead:  binary.LittleEndian.Uint16(b[6:]),
		FPS:        binary.LittleEndian.Uint16(b[8:]),
		Reason:     b[10],
	}
	if !t.target().Valid() || t.FPS < 1 || t.FPS > maxFPS {
		return t, errors.New("probe: timing out of range")
	}
	return t, nil
}

// removePayload is a removal (S7, S16). Last is the highest frame of the
// removed player's commands that every machine executes; its commands tagged
// after Last are discarded everywhere, so a vanished player's partial
// deliveries cannot desync the others.
type removePayload struct {
	Player uint16
	Last   int32
}

func (r removePayload) bytes() []byte {
	b := make([]byte, 0, 6)
	b = binary.LittleEndian.AppendUint16(b, r.Player)
	return binary.LittleEndian.AppendUint32(b, uint32(r.Last))
}

func decodeRemove(b []byte) (removePayload, error) {
	if len(b) != 6 {
		return removePayload{}, errors.New("probe: removal payload must be 6 bytes")
	}
	return removePayload{Player: binary.LittleEndian.Uint16(b), Last: int32(binary.LittleEndian.Uint32(b[2:]))}, nil
}

func decodeSpeed(b []byte) (int, error) {
	if len(b) != 2 {
		return 0, errors.New("probe: game speed payload must be 2 bytes")
	}
	v := int(binary.LittleEndian.Uint16(b))
	if v < 1 || v > 1000 {
		return 0, errors.New("probe: game speed out of range")
	}
	return v, nil
}

func speedBytes(fps int) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(fps)) }
