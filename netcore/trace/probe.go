package trace

import (
	"encoding/binary"
	"errors"
)

// RecProbe is the probe record's type: 0x25, the next free value of
// netcore's link-control group (RecAck 0x20 … RecCarriedAck 0x24), since a
// probe, like a keep-alive, is unnumbered link control that no loss total
// counts. It is framed as every netcore record is (type, then a
// little-endian u16 length), so a receiver that does not know it skips it.
const RecProbe uint8 = 0x25

// Probe record layout: type u8, length u16 (= probeBody), number u32,
// ttl u8, flags u8. Little-endian, as the rest of the wire.
const (
	probeBody = 6
	// ProbeLen is the size of an encoded probe record.
	ProbeLen = 3 + probeBody
	// flagAnswer marks the peer's answer to a probe; the other flag bits
	// are reserved and must be zero.
	flagAnswer = 0x01
)

// Probe is one probe record: sent with hop limit TTL, or, with Answer set,
// the peer's answer to the probe of that number, TTL echoed.
type Probe struct {
	Num    uint32
	TTL    uint8
	Answer bool
}

// Reply is the answer the peer sends back for p.
func (p Probe) Reply() Probe {
	p.Answer = true
	return p
}

// Probe decode errors. They are sentinels so that rejecting a flood of
// bad records allocates nothing.
var (
	errProbeShort    = errors.New("trace: probe record too short")
	errProbeType     = errors.New("trace: not a probe record")
	errProbeLength   = errors.New("trace: probe record length is not 6")
	errProbeTTL      = errors.New("trace: probe record with ttl 0")
	errProbeReserved = errors.New("trace: probe record with reserved flag bits set")
)

// AppendProbe appends p's record to dst. It allocates only when dst has no
// room for ProbeLen more bytes.
func AppendProbe(dst []byte, p Probe) []byte {
	var flags byte
	if p.Answer {
		flags = flagAnswer
	}
	dst = append(dst, RecProbe, probeBody, 0)
	dst = binary.LittleEndian.AppendUint32(dst, p.Num)
	return append(dst, p.TTL, flags)
}

// DecodeProbe decodes the probe record at the start of b; bytes after it
// (the records that follow in a datagram) are ignored.
func DecodeProbe(b []byte) (Probe, error) {
	switch {
	case len(b) < 3:
		return Probe{}, errProbeShort
	case b[0] != RecProbe:
		return Probe{}, errProbeType
	case binary.LittleEndian.Uint16(b[1:]) != probeBody:
		return Probe{}, errProbeLength
	case len(b) < ProbeLen:
		return Probe{}, errProbeShort
	case b[7] == 0:
		return Probe{}, errProbeTTL
	case b[8]&^flagAnswer != 0:
		return Probe{}, errProbeReserved
	}
	return Probe{Num: binary.LittleEndian.Uint32(b[3:]), TTL: b[7], Answer: b[8]&flagAnswer != 0}, nil
}

// Quote says what the quoted bytes of an ICMP answer show about the
// datagram that drew it.
type Quote uint8

const (
	// QuoteNone: too few bytes to tell (a router that quotes only the IP
	// header and 8 bytes leaves none of the payload), or a sealed control
	// datagram, whose records cannot be read.
	QuoteNone Quote = iota
	// QuoteProbe: one of our probes; its record is readable.
	QuoteProbe
	// QuoteOther: one of the socket's other datagrams (game traffic).
	QuoteOther
)

// QuoteOf says what a quoted datagram body shows, the netcore header
// already read by the caller (netcore: the tracer knows the records, not
// the header): a probe travels as the first record of an unsealed control
// datagram. A whole first record that is not a probe is QuoteOther; a
// record cut short is QuoteNone.
func QuoteOf(body []byte) (Probe, Quote) {
	if p, err := DecodeProbe(body); err == nil && !p.Answer {
		return p, QuoteProbe
	}
	if len(body) >= ProbeLen {
		return Probe{}, QuoteOther
	}
	return Probe{}, QuoteNone
}
