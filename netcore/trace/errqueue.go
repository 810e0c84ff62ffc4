package trace

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"time"
)

// The error queue. With IP_RECVERR (IPv4) or IPV6_RECVERR (IPv6) set, the
// kernel queues every ICMP error a socket's datagrams draw and hands each
// over with recvmsg(MSG_ERRQUEUE): the quoted bytes of the datagram that
// drew it (the UDP payload, as much of it as the router quoted) as the
// message, and a control message carrying struct sock_extended_err and the
// offender's address. ParseErrQueue only reads bytes, so it runs and is
// tested on every platform; the constants below are Linux's values, defined
// here rather than taken from syscall, which has them on Linux only.
//
// Control messages are in the host's byte order with the host's word size
// (cmsg_len is a size_t, and data is aligned to it): the parser reads them
// with binary.NativeEndian and the running program's pointer size, which
// is right for the bytes the kernel it runs on produced. Addresses and
// ports inside a sockaddr are in network byte order.

// Linux control-message levels and types.
const (
	solSocket   = 1  // SOL_SOCKET
	solIP       = 0  // SOL_IP
	solIPv6     = 41 // SOL_IPV6
	ipRecvErr   = 11 // IP_RECVERR
	ipv6RecvErr = 25 // IPV6_RECVERR
	ipTTL       = 2  // IP_TTL: the TTL a message arrived with (IP_RECVTTL)
	ipv6HopLim  = 52 // IPV6_HOPLIMIT: the hop limit it arrived with (IPV6_RECVHOPLIMIT)

	scmTimestampNS     = 35 // SCM_TIMESTAMPNS: struct timespec (long, long)
	scmTimestamping    = 37 // SCM_TIMESTAMPING: three struct timespec
	scmTimestampNSNew  = 64 // SO_TIMESTAMPNS_NEW: struct __kernel_timespec (s64, s64)
	scmTimestampingNew = 65 // SO_TIMESTAMPING_NEW: three __kernel_timespec

	afInet  = 2  // AF_INET
	afInet6 = 10 // AF_INET6 (Linux's value)

	sockExtErrLen = 16 // struct sock_extended_err
	sockaddrInLen = 16 // struct sockaddr_in
	sockaddrIn6   = 28 // struct sockaddr_in6
)

// eeOrigin is where an error-queue message comes from (ee_origin).
type eeOrigin uint8

const (
	originNone  eeOrigin = 0 // SO_EE_ORIGIN_NONE
	originLocal eeOrigin = 1 // SO_EE_ORIGIN_LOCAL: this machine's stack (EMSGSIZE, ENOBUFS)
	originICMP  eeOrigin = 2 // SO_EE_ORIGIN_ICMP: an ICMPv4 message
	originICMP6 eeOrigin = 3 // SO_EE_ORIGIN_ICMP6: an ICMPv6 message
)

// kind is what an ICMP answer says about the datagram that drew it.
type kind uint8

const (
	kindOther           kind = iota // not about a hop: local errors, packet too big, …
	kindTimeExceeded                // the hop limit ran out at the offender: a hop
	kindPortUnreachable             // the offender is the destination host, no listener on the port
	kindUnreachable                 // the offender gave up on the destination (host, net, prohibited)
)

// ICMP types and codes the kinds come from.
const (
	icmpUnreachable  = 3
	icmpPort         = 3
	icmpTimeExceeded = 11
	icmp6Unreachable = 1
	icmp6Port        = 4
	icmp6TimeExceed  = 3
)

// Answer is one error-queue message, parsed.
type Answer struct {
	// Offender is who sent the ICMP message, v4-mapped addresses unmapped;
	// invalid when the kernel named none (a local error).
	Offender   netip.Addr
	Origin     eeOrigin
	Type, Code uint8
	Errno      uint32
	Kind       kind
	// Stamp is the kernel's receive time of the ICMP message, zero when no
	// SO_TIMESTAMPNS or SO_TIMESTAMPING message came with it.
	Stamp time.Time
	// TTL is the IP TTL (IPv6: hop limit) the ICMP message arrived with,
	// 0 when no IP_TTL or IPV6_HOPLIMIT message came with it: 64 less the
	// routers on its way back from a router that starts it at 64.
	TTL uint8
	// Quote says what the quoted payload shows; Probe is the quoted probe
	// when Quote is QuoteProbe. The reader of the quote fills them in.
	Quote Quote
	Probe Probe
}

// Error-queue parse errors, sentinels so that a flood allocates nothing.
var (
	errCmsg     = errors.New("trace: truncated or malformed control message")
	errNoErr    = errors.New("trace: no IP_RECVERR or IPV6_RECVERR control message")
	errExtErr   = errors.New("trace: sock_extended_err too short")
	errOffender = errors.New("trace: offender address truncated or of unknown family")
	errStamp    = errors.New("trace: timestamp control message of the wrong size")
	errTTL      = errors.New("trace: TTL control message of the wrong size or value")
)

// ptrSize is the size of a size_t, the alignment of control messages.
const ptrSize = 4 << (^uintptr(0) >> 63)

var ne = binary.NativeEndian

func cmsgAlign(n int) int { return (n + ptrSize - 1) &^ (ptrSize - 1) }

// cmsgHdrLen is CMSG_LEN(0): cmsg_len, cmsg_level, cmsg_type, aligned.
var cmsgHdrLen = cmsgAlign(ptrSize + 8)

// nextCmsg splits the first control message off oob. ok is false at the
// end; err is set on a malformed header.
func nextCmsg(oob []byte) (level, typ int32, data, rest []byte, ok bool, err error) {
	if len(oob) == 0 {
		return 0, 0, nil, nil, false, nil
	}
	if len(oob) < cmsgHdrLen {
		return 0, 0, nil, nil, false, errCmsg
	}
	var l uint64
	if ptrSize == 8 {
		l = ne.Uint64(oob)
	} else {
		l = uint64(ne.Uint32(oob))
	}
	if l < uint64(cmsgHdrLen) || l > uint64(len(oob)) {
		return 0, 0, nil, nil, false, errCmsg
	}
	n := int(l)
	level = int32(ne.Uint32(oob[ptrSize:]))
	typ = int32(ne.Uint32(oob[ptrSize+4:]))
	rest = oob[min(cmsgAlign(n), len(oob)):]
	return level, typ, oob[cmsgHdrLen:n], rest, true, nil
}

// ParseErrQueue parses the control messages of one error-queue message.
// Control messages it does not know (IP_PKTINFO and the like) are
// skipped; IP_TTL and IPV6_HOPLIMIT give the TTL the message arrived with. It returns an error, never panics, on truncated or garbled
// input, and when no IP_RECVERR or IPV6_RECVERR message is present. The
// quoted bytes are the caller's to read (Quote and Probe stay zero):
// they start with netcore's header, which netcore reads.
func ParseErrQueue(oob []byte) (Answer, error) {
	var a Answer
	found := false
	for {
		level, typ, data, rest, ok, err := nextCmsg(oob)
		if err != nil {
			return Answer{}, err
		}
		if !ok {
			break
		}
		oob = rest
		switch {
		case (level == solIP && typ == ipRecvErr) || (level == solIPv6 && typ == ipv6RecvErr):
			if found {
				continue // one error per message; a second is ignored
			}
			if err := parseExtErr(data, &a); err != nil {
				return Answer{}, err
			}
			found = true
		case level == solSocket:
			if err := parseStamp(typ, data, &a); err != nil {
				return Answer{}, err
			}
		case (level == solIP && typ == ipTTL) || (level == solIPv6 && typ == ipv6HopLim):
			// An int, in the host's byte order: 1 to 255.
			if len(data) < 4 {
				return Answer{}, errTTL
			}
			v := int32(ne.Uint32(data))
			if v < 1 || v > 255 {
				return Answer{}, errTTL
			}
			a.TTL = uint8(v)
		}
	}
	if !found {
		return Answer{}, errNoErr
	}
	return a, nil
}

// parseExtErr reads struct sock_extended_err and the offender after it.
func parseExtErr(d []byte, a *Answer) error {
	if len(d) < sockExtErrLen {
		return errExtErr
	}
	a.Errno = ne.Uint32(d)
	a.Origin = eeOrigin(d[4])
	a.Type, a.Code = d[5], d[6]
	off, err := parseSockaddr(d[sockExtErrLen:])
	if err != nil {
		return err
	}
	a.Offender = off
	a.Kind = kindOf(a.Origin, a.Type, a.Code)
	return nil
}

// parseSockaddr reads a sockaddr_in or sockaddr_in6; none (no bytes, or
// family AF_UNSPEC) is the invalid address.
func parseSockaddr(d []byte) (netip.Addr, error) {
	if len(d) < 2 {
		return netip.Addr{}, nil
	}
	switch ne.Uint16(d) {
	case 0:
		return netip.Addr{}, nil
	case afInet:
		if len(d) < sockaddrInLen {
			return netip.Addr{}, errOffender
		}
		return netip.AddrFrom4([4]byte(d[4:8])), nil
	case afInet6:
		if len(d) < sockaddrIn6 {
			return netip.Addr{}, errOffender
		}
		return netip.AddrFrom16([16]byte(d[8:24])).Unmap(), nil
	}
	return netip.Addr{}, errOffender
}

func kindOf(o eeOrigin, typ, code uint8) kind {
	switch {
	case o == originICMP && typ == icmpTimeExceeded, o == originICMP6 && typ == icmp6TimeExceed:
		return kindTimeExceeded
	case o == originICMP && typ == icmpUnreachable && code == icmpPort,
		o == originICMP6 && typ == icmp6Unreachable && code == icmp6Port:
		return kindPortUnreachable
	case o == originICMP && typ == icmpUnreachable, o == originICMP6 && typ == icmp6Unreachable:
		return kindUnreachable
	}
	return kindOther
}

// parseStamp reads a kernel receive stamp. SCM_TIMESTAMPING carries three
// stamps: software, a deprecated one, hardware; the first that is set wins.
func parseStamp(typ int32, d []byte, a *Answer) error {
	var word, count int
	switch typ {
	case scmTimestampNS:
		word, count = ptrSize, 1
	case scmTimestamping:
		word, count = ptrSize, 3
	case scmTimestampNSNew:
		word, count = 8, 1
	case scmTimestampingNew:
		word, count = 8, 3
	default:
		return nil
	}
	if len(d) < 2*word*count {
		return errStamp
	}
	for i := range count {
		sec, nsec := readWord(d[2*word*i:], word), readWord(d[2*word*i+word:], word)
		if sec != 0 || nsec != 0 {
			a.Stamp = time.Unix(sec, nsec)
			return nil
		}
	}
	return nil
}

func readWord(d []byte, word int) int64 {
	if word == 8 {
		return int64(ne.Uint64(d))
	}
	return int64(int32(ne.Uint32(d)))
}
