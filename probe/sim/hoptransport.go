package sim

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/netcore/trace"
)

// The simulated socket a tracing run's machines send through: a simnet
// node that is a netcore.HopTransport. Probes leave with their hop limit
// (simnet.Node.SendHopLimit: the routers of the scenario's access links);
// the routers' answers come back as a Linux socket hands them over — an
// error-queue control message (sock_extended_err and the offender) and
// the quoted bytes — and go through the same parser and quote reader as
// a live socket's, so the endpoint's tracer, its matcher, scheduler and
// analysis, run unchanged: one code path, two wirings.

// hopNode is a node that traces. Game datagrams go through Send and keep
// the network's ordinary crossing.
type hopNode struct {
	*simnet.Node
	icmp    []simnet.ICMPAnswer
	oob     []byte
	onProbe func(at time.Duration, to netip.AddrPort, hops int) // tests: every probe sent
	now     func() time.Duration
}

// SendHopLimit sends one probe with its own hop limit.
func (h *hopNode) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	if h.onProbe != nil {
		h.onProbe(h.now(), to, hops)
	}
	return h.Node.SendHopLimit(to, p, hops)
}

// HopAnswers appends the routers' answers that arrived since the last call.
func (h *hopNode) HopAnswers(dst []netcore.HopAnswer) []netcore.HopAnswer {
	h.icmp = h.Node.TakeICMP(h.icmp[:0])
	for _, m := range h.icmp {
		h.oob = errQueueMessage(h.oob[:0], m.From, m.TTL)
		a, err := trace.ParseErrQueue(h.oob)
		if err != nil {
			continue
		}
		a.Probe, a.Quote = quoted(m.Quote)
		if a.Quote == trace.QuoteOther {
			continue // not a probe's: no router answers game datagrams here
		}
		dst = append(dst, netcore.HopAnswer{To: m.To, At: m.At, Answer: a})
	}
	return dst
}

// TraceUnavailable: the simulated socket always traces.
func (h *hopNode) TraceUnavailable() string { return "" }

// Linux's values for an ICMP Time Exceeded on the error queue.
const (
	levelIP, typeRecvErr     = 0, 11  // SOL_IP, IP_RECVERR
	levelIPv6, typeRecvErr6  = 41, 25 // SOL_IPV6, IPV6_RECVERR
	typeTTL, typeHopLimit    = 2, 52  // IP_TTL, IPV6_HOPLIMIT: the TTL it arrived with
	originICMP, originICMP6  = 2, 3   // SO_EE_ORIGIN_ICMP, SO_EE_ORIGIN_ICMP6
	icmpTimeExceeded, icmp6T = 11, 3  // ICMP and ICMPv6 Time Exceeded
	ehostunreach             = 113    // the errno Linux gives it
	afInet, afInet6          = 2, 10
)

// ptrWord is a size_t here: control messages are aligned to it.
const ptrWord = 4 << (^uintptr(0) >> 63)

// errQueueMessage appends to b the control messages the kernel queues for
// an ICMP Time Exceeded from off that arrived with TTL ttl: IP_RECVERR
// (IPV6_RECVERR for an IPv6 offender) carrying struct sock_extended_err,
// then the offender's sockaddr, then IP_TTL (IPV6_HOPLIMIT), in the
// host's byte order and alignment.
func errQueueMessage(b []byte, off netip.Addr, ttl uint8) []byte {
	level, typ, origin, icmpType, family, sa := levelIP, typeRecvErr, originICMP, icmpTimeExceeded, afInet, 16
	if !off.Is4() {
		level, typ, origin, icmpType, family, sa = levelIPv6, typeRecvErr6, originICMP6, icmp6T, afInet6, 28
	}
	hdr := (ptrWord + 8 + ptrWord - 1) &^ (ptrWord - 1)
	n := hdr + 16 + sa
	start := len(b)
	b = append(b, make([]byte, (n+ptrWord-1)&^(ptrWord-1))...)
	m := b[start:]
	ne := binary.NativeEndian
	if ptrWord == 8 {
		ne.PutUint64(m, uint64(n))
	} else {
		ne.PutUint32(m, uint32(n))
	}
	ne.PutUint32(m[ptrWord:], uint32(level))
	ne.PutUint32(m[ptrWord+4:], uint32(typ))
	e := m[hdr:]
	ne.PutUint32(e, ehostunreach)
	e[4], e[5], e[6] = byte(origin), byte(icmpType), 0
	s := e[16:]
	ne.PutUint16(s, uint16(family))
	if off.Is4() {
		a := off.As4()
		copy(s[4:8], a[:])
	} else {
		a := off.As16()
		copy(s[8:24], a[:])
	}
	if ttl == 0 {
		return b
	}
	typ = typeTTL
	if !off.Is4() {
		typ = typeHopLimit
	}
	start = len(b)
	b = append(b, make([]byte, (hdr+4+ptrWord-1)&^(ptrWord-1))...)
	m = b[start:]
	if ptrWord == 8 {
		ne.PutUint64(m, uint64(hdr+4))
	} else {
		ne.PutUint32(m, uint32(hdr+4))
	}
	ne.PutUint32(m[ptrWord:], uint32(level))
	ne.PutUint32(m[ptrWord+4:], uint32(typ))
	ne.PutUint32(m[hdr:], uint32(ttl))
	return b
}

// quoted says what a router's quote shows, as the live socket's reader
// does: a probe travels as the first record of an unsealed control
// datagram; a numbered datagram is other traffic.
func quoted(q []byte) (trace.Probe, trace.Quote) {
	h, err := netcore.DecodeHeader(q)
	switch {
	case err != nil && len(q) >= netcore.HeaderLen, err == nil && h.Channel != netcore.ChannelControl:
		return trace.Probe{}, trace.QuoteOther
	case err != nil, h.Flags != 0:
		return trace.Probe{}, trace.QuoteNone
	}
	return trace.QuoteOf(q[netcore.HeaderLen:])
}
