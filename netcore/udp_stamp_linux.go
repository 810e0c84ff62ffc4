//go:build linux

package netcore

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Arrival times on Linux: the kernel stamps each datagram as it comes in
// (SO_TIMESTAMPNS) and hands the stamp over with it as a control message,
// so a datagram that waited in the socket buffer or behind others in a
// batch still gets the moment it arrived, not the moment it was read.
// The standard library's syscall package has all this needs.

// oobSize holds one SCM_TIMESTAMPNS message (a 16-byte header and a
// 16-byte timespec on 64-bit systems), the IP_PKTINFO and IPV6_PKTINFO
// messages (udp_pktinfo_linux.go: up to 40 bytes each; a dual-stack socket
// gets both for an IPv4 datagram) and the IP_TTL and IPV6_HOPLIMIT ones
// the hop tracer asks for (24 bytes each), with room to spare.
const oobSize = 192

// enableTimestamps asks the kernel to stamp every datagram; false when it
// refuses, and the reader's own clock is used instead.
func enableTimestamps(conn *net.UDPConn) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return false
	}
	return serr == nil
}

// readStamped reads one datagram with its control messages into oob.
func readStamped(conn *net.UDPConn, b, oob []byte) (n, oobn int, from netip.AddrPort, err error) {
	n, oobn, _, from, err = conn.ReadMsgUDPAddrPort(b, oob)
	return n, oobn, from, err
}

// ptrSize is the size of cmsg_len (a size_t).
const ptrSize = 4 << (^uintptr(0) >> 63)

// nextCmsg reads the first control message of oob: its level, type and
// data, and what follows it. It reads the headers by hand: the syscall
// package's parser allocates, and this runs per datagram. ok is false at
// the end or on a malformed header.
func nextCmsg(oob []byte) (level, typ int32, data, rest []byte, ok bool) {
	hdr := syscall.CmsgLen(0)
	if len(oob) < hdr {
		return 0, 0, nil, nil, false
	}
	var l int
	if ptrSize == 8 {
		l = int(binary.NativeEndian.Uint64(oob))
	} else {
		l = int(binary.NativeEndian.Uint32(oob))
	}
	if l < hdr || l > len(oob) {
		return 0, 0, nil, nil, false
	}
	level = int32(binary.NativeEndian.Uint32(oob[ptrSize:]))
	typ = int32(binary.NativeEndian.Uint32(oob[ptrSize+4:]))
	rest = oob[min(syscall.CmsgSpace(l-hdr), len(oob)):]
	return level, typ, oob[hdr:l], rest, true
}

// kernelStamp finds the SCM_TIMESTAMPNS message among the control messages
// and returns its wall-clock time.
func kernelStamp(oob []byte) (time.Time, bool) {
	for {
		level, typ, d, rest, ok := nextCmsg(oob)
		if !ok {
			return time.Time{}, false
		}
		if level == syscall.SOL_SOCKET && typ == syscall.SCM_TIMESTAMPNS {
			switch len(d) {
			case 16: // 64-bit time_t and long
				return time.Unix(int64(binary.NativeEndian.Uint64(d)), int64(binary.NativeEndian.Uint64(d[8:]))), true
			case 8: // 32-bit
				return time.Unix(int64(int32(binary.NativeEndian.Uint32(d))), int64(int32(binary.NativeEndian.Uint32(d[4:])))), true
			}
			return time.Time{}, false
		}
		oob = rest
	}
}
