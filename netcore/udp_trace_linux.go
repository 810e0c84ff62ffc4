//go:build linux

package netcore

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The error queue on Linux. IP_RECVERR and IPV6_RECVERR are both asked
// for: a dual-stack socket gets ICMPv4 answers for its v4-mapped peers
// under the first, ICMPv6 under the second; an IPv4 socket refuses the
// second. The queue is read with recvmmsg(MSG_ERRQUEUE|MSG_DONTWAIT),
// several messages to a system call, on headers of the drain's own, so
// reading it allocates nothing.

const noTraceWhy = "the kernel refused IP_RECVERR on this socket: no ICMP answers to read"

var errNoTrace = errors.New("netcore: the socket reads no ICMP answers (" + noTraceWhy + ")")

// enableRecvErr sets IP_RECVERR and IPV6_RECVERR on the socket and returns
// the drain of its error queue; nil when neither took.
func enableRecvErr(conn *net.UDPConn) *errDrain {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		ok = setBoth(fd, syscall.IP_RECVERR, syscall.IPV6_RECVERR)
		// The TTL an answer arrived with tells how far back its router
		// is (trace.Answer.TTL): the matcher tells apart by it answers
		// that quote no probe. A socket that refuses simply gives none.
		_ = setBoth(fd, syscall.IP_RECVTTL, syscall.IPV6_RECVHOPLIMIT)
	})
	if !ok {
		return nil
	}
	q := &errQueueReader{}
	return newErrDrain(rc.Control, q.recv)
}

// errMmsghdr is struct mmsghdr: a msghdr and the length received. Go pads
// it as C does, on 32-bit and 64-bit kernels alike.
type errMmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
}

// errQueueReader is the system-call side of errDrain.recv; the drain's
// lock guards it.
type errQueueReader struct {
	hdrs  [errBatch]errMmsghdr
	iovs  [errBatch]syscall.Iovec
	names [errBatch]syscall.RawSockaddrInet6
}

// recvHeader sets h up to receive one message: its bytes into buf
// (through iov), its source into name and its control messages into oob.
func recvHeader(h *syscall.Msghdr, iov *syscall.Iovec, buf []byte, name *syscall.RawSockaddrInet6, oob []byte) {
	iov.Base = &buf[0]
	iov.SetLen(len(buf))
	*h = syscall.Msghdr{}
	h.Name = (*byte)(unsafe.Pointer(name))
	h.Namelen = uint32(unsafe.Sizeof(*name))
	h.Iov = iov
	h.Iovlen = 1
	h.Control = &oob[0]
	h.SetControllen(len(oob))
}

// recv reads up to len(msgs) messages off the error queue without waiting.
func (q *errQueueReader) recv(fd uintptr, msgs []errMsg) int {
	for i := range msgs {
		m := &msgs[i]
		recvHeader(&q.hdrs[i].hdr, &q.iovs[i], m.buf[:], &q.names[i], m.oob[:])
	}
	for {
		n, _, errno := syscall.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&q.hdrs[0])), uintptr(len(msgs)),
			syscall.MSG_ERRQUEUE|syscall.MSG_DONTWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0 // EAGAIN: the queue is empty
		}
		for i := range int(n) {
			m := &msgs[i]
			m.n, m.oobn, m.to = int(q.hdrs[i].n), int(q.hdrs[i].hdr.Controllen), sockaddrPort(&q.names[i])
		}
		return int(n)
	}
}

// sockaddrPort decodes a sockaddr_in or sockaddr_in6 (v4-mapped kept: the
// drain unmaps).
func sockaddrPort(sa *syscall.RawSockaddrInet6) netip.AddrPort {
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	switch sa.Family {
	case syscall.AF_INET:
		s4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), port)
	case syscall.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port)
	}
	return netip.AddrPort{}
}

// isQueuedErrno: an errno a queued ICMP error makes a read or send fail
// with (IP_RECVERR sets the socket's error to it, and the next read or
// send reports it once): what the kernel converts ICMPv4 and ICMPv6
// errors to — unreachables of every code, time exceeded, parameter
// problems, fragmentation needed and packet too big. A read fails with
// none of them of its own; a send may (no route, a datagram too big), so a
// send tries again only while the drain finds entries (write).
func isQueuedErrno(e syscall.Errno) bool {
	switch e {
	case syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ENOPROTOOPT, syscall.ECONNREFUSED,
		syscall.EMSGSIZE, syscall.EOPNOTSUPP, syscall.EHOSTDOWN, syscall.ENONET, syscall.EPROTO, syscall.EACCES:
		return true
	}
	return false
}

// isICMPErr: an operation failed with a queued-error errno (isQueuedErrno).
func isICMPErr(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && isQueuedErrno(errno)
}

// isDropped: a send the kernel dropped for want of queue space (with
// IP_RECVERR set, a full qdisc says so as ENOBUFS).
func isDropped(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && errno == syscall.ENOBUFS
}
