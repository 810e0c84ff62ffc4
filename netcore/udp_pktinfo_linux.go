//go:build linux

package netcore

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
)

// enablePktinfo asks the kernel to say, with every datagram, the local
// address it arrived at: IP_PKTINFO for IPv4 (on a dual-stack socket too)
// and IPV6_RECVPKTINFO for IPv6. It reports whether either took.
func enablePktinfo(conn *net.UDPConn) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		ok = setBoth(fd, syscall.IP_PKTINFO, syscall.IPV6_RECVPKTINFO)
	})
	return ok
}

// setBoth turns on the IPv4 option v4 and the IPv6 option v6 of the
// socket fd, trying both: a dual-stack socket takes both, an IPv4 socket
// refuses the second. It reports whether either took.
func setBoth(fd uintptr, v4, v6 int) bool {
	ok4 := syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, v4, 1) == nil
	ok6 := syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, v6, 1) == nil
	return ok4 || ok6
}

// arrivedTo finds the local address among the control messages.
func arrivedTo(oob []byte) (netip.Addr, bool) {
	for {
		level, typ, d, rest, ok := nextCmsg(oob)
		if !ok {
			return netip.Addr{}, false
		}
		switch {
		case level == syscall.IPPROTO_IP && typ == syscall.IP_PKTINFO && len(d) >= 12:
			// struct in_pktinfo: ifindex, spec_dst, addr (the header's
			// destination).
			return netip.AddrFrom4([4]byte(d[8:12])), true
		case level == syscall.IPPROTO_IPV6 && typ == syscall.IPV6_PKTINFO && len(d) >= 16:
			// struct in6_pktinfo: addr, ifindex.
			return netip.AddrFrom16([16]byte(d[:16])).Unmap(), true
		}
		oob = rest
	}
}

// appendFrom appends the control message that sends a datagram to `to`
// from local.
func appendFrom(b []byte, to netip.AddrPort, local netip.Addr) []byte {
	put := func(level, typ int32, n int) []byte {
		start := len(b)
		b = append(b, make([]byte, syscall.CmsgSpace(n))...)
		h := b[start:]
		if ptrSize == 8 {
			binary.NativeEndian.PutUint64(h, uint64(syscall.CmsgLen(n)))
		} else {
			binary.NativeEndian.PutUint32(h, uint32(syscall.CmsgLen(n)))
		}
		binary.NativeEndian.PutUint32(h[ptrSize:], uint32(level))
		binary.NativeEndian.PutUint32(h[ptrSize+4:], uint32(typ))
		return h[syscall.CmsgLen(0):]
	}
	if to.Addr().Unmap().Is4() && local.Is4() {
		d := put(syscall.IPPROTO_IP, syscall.IP_PKTINFO, 12)
		a := local.As4()
		copy(d[4:8], a[:]) // spec_dst: the source to use
		return b
	}
	d := put(syscall.IPPROTO_IPV6, syscall.IPV6_PKTINFO, 20)
	a := local.As16()
	copy(d[:16], a[:])
	return b
}
