package trace

import (
	"net/netip"
	"time"
)

// Control messages built as the running kernel lays them out: native byte
// order, cmsg_len a size_t, data aligned to it.

func cmsg(level, typ int32, data []byte) []byte {
	n := cmsgHdrLen + len(data)
	b := make([]byte, cmsgAlign(n))
	if ptrSize == 8 {
		ne.PutUint64(b, uint64(n))
	} else {
		ne.PutUint32(b, uint32(n))
	}
	ne.PutUint32(b[ptrSize:], uint32(level))
	ne.PutUint32(b[ptrSize+4:], uint32(typ))
	copy(b[cmsgHdrLen:], data)
	return b
}

// extErr is struct sock_extended_err followed by the offender as an
// AF_INET socket (v6 false) or an AF_INET6 one reports it.
func extErr(errno uint32, origin eeOrigin, typ, code uint8, off netip.Addr, v6 bool) []byte {
	b := make([]byte, sockExtErrLen)
	ne.PutUint32(b, errno)
	b[4], b[5], b[6] = byte(origin), typ, code
	switch {
	case !off.IsValid() && v6:
		return append(b, make([]byte, sockaddrIn6)...)
	case !off.IsValid():
		return append(b, make([]byte, sockaddrInLen)...)
	case v6:
		sa := make([]byte, sockaddrIn6)
		ne.PutUint16(sa, afInet6)
		a16 := off.As16()
		copy(sa[8:], a16[:])
		return append(b, sa...)
	}
	sa := make([]byte, sockaddrInLen)
	ne.PutUint16(sa, afInet)
	a4 := off.As4()
	copy(sa[4:], a4[:])
	return append(b, sa...)
}

func recvErr(errno uint32, origin eeOrigin, typ, code uint8, off netip.Addr) []byte {
	return cmsg(solIP, ipRecvErr, extErr(errno, origin, typ, code, off, false))
}

func recvErr6(errno uint32, origin eeOrigin, typ, code uint8, off netip.Addr) []byte {
	return cmsg(solIPv6, ipv6RecvErr, extErr(errno, origin, typ, code, off, true))
}

// timespec is a struct timespec of the given word size (the old stamps use
// long, the _NEW ones 64 bits).
func timespec(t time.Time, word int) []byte {
	b := make([]byte, 2*word)
	if word == 8 {
		ne.PutUint64(b, uint64(t.Unix()))
		ne.PutUint64(b[8:], uint64(t.Nanosecond()))
	} else {
		ne.PutUint32(b, uint32(t.Unix()))
		ne.PutUint32(b[4:], uint32(t.Nanosecond()))
	}
	return b
}

func stampNS(t time.Time) []byte { return cmsg(solSocket, scmTimestampNS, timespec(t, ptrSize)) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// quotedBody is a probe's datagram as a router quotes it, after netcore's
// header (which netcore reads): the probe record first.
func quotedBody(p Probe) []byte { return AppendProbe(nil, p) }

// parseQuoted parses an error-queue message as netcore does: the control
// messages, then what the quoted body shows (nil: nothing quoted).
func parseQuoted(oob, body []byte) (Answer, error) {
	a, err := ParseErrQueue(oob)
	if err == nil && body != nil {
		a.Probe, a.Quote = QuoteOf(body)
	}
	return a, err
}

const (
	linkA Link = 1
	linkB Link = 2
)

var (
	peerA = netip.MustParseAddr("203.0.113.7")
	peerB = netip.MustParseAddr("198.51.100.9")
	r1    = netip.MustParseAddr("192.168.1.1")
	r2    = netip.MustParseAddr("100.64.0.1")
	r3    = netip.MustParseAddr("10.20.0.1")
	pub1  = netip.MustParseAddr("81.2.69.1")
	pub2  = netip.MustParseAddr("81.2.69.2")
	pub3  = netip.MustParseAddr("62.1.1.1")
	pub4  = netip.MustParseAddr("62.1.1.2")
)

func msec(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// timeExceeded is a router's answer to a probe, quoting it or not.
func timeExceeded(from netip.Addr, quote []byte) Answer {
	a, err := parseQuoted(recvErr(113, originICMP, icmpTimeExceeded, 0, from), quote)
	if err != nil {
		panic(err)
	}
	return a
}

// portUnreachable is a host's answer that nothing listens on the port,
// quoting the datagram or not.
func portUnreachable(from netip.Addr, quote []byte) Answer {
	a, err := parseQuoted(recvErr(111, originICMP, icmpUnreachable, icmpPort, from), quote)
	if err != nil {
		panic(err)
	}
	return a
}
