//go:build linux

package netcore

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// The error queue on Linux. IP_RECVERR and IPV6_RECVERR are both asked
// for: a dual-stack socket gets ICMPv4 answers for its v4-mapped peers
// under the first, ICMPv6 under the second; an IPv4 socket refuses the
// second. The queue is read with recvmsg(MSG_ERRQUEUE|MSG_DONTWAIT) on a
// msghdr of the drain's own, so reading it allocates nothing.

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
		if syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVERR, 1) == nil {
			ok = true
		}
		if syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_RECVERR, 1) == nil {
			ok = true
		}
	})
	if !ok {
		return nil
	}
	q := &errQueueReader{rc: rc}
	q.ctl = q.recvAll
	d := &errDrain{}
	d.recv = q.recv
	return d
}

// errQueueReader is the system-call side of errDrain.recv: one recvmsg
// per message, made in a RawConn.Control callback bound once.
type errQueueReader struct {
	rc   syscall.RawConn
	ctl  func(fd uintptr)
	hdr  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6
	// The current call's buffers and results.
	buf, oob []byte
	n, oobn  int
	ok       bool
}

func (q *errQueueReader) recv(buf, oob []byte) (int, int, netip.AddrPort, bool) {
	q.buf, q.oob, q.ok = buf, oob, false
	if q.rc.Control(q.ctl) != nil || !q.ok {
		return 0, 0, netip.AddrPort{}, false
	}
	return q.n, q.oobn, sockaddrPort(&q.name), true
}

// recvAll reads one message off the error queue without waiting.
func (q *errQueueReader) recvAll(fd uintptr) {
	q.iov.Base = &q.buf[0]
	q.iov.SetLen(len(q.buf))
	q.hdr = syscall.Msghdr{}
	q.hdr.Name = (*byte)(unsafe.Pointer(&q.name))
	q.hdr.Namelen = uint32(unsafe.Sizeof(q.name))
	q.hdr.Iov = &q.iov
	q.hdr.Iovlen = 1
	q.hdr.Control = &q.oob[0]
	q.hdr.SetControllen(len(q.oob))
	for {
		n, _, errno := syscall.Syscall(syscall.SYS_RECVMSG, fd,
			uintptr(unsafe.Pointer(&q.hdr)), syscall.MSG_ERRQUEUE|syscall.MSG_DONTWAIT)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return // EAGAIN: the queue is empty
		}
		q.n, q.oobn, q.ok = int(n), int(q.hdr.Controllen), true
		return
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

// isICMPErr: a read failed because an ICMP error was queued (with
// IP_RECVERR the socket's next read reports it once). Not a read error:
// the error queue has something, and the socket reads on.
func isICMPErr(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EHOSTUNREACH, syscall.ECONNREFUSED, syscall.EHOSTDOWN, syscall.ENETUNREACH:
		return true
	}
	return false
}

// isDropped: a send the kernel dropped for want of queue space (with
// IP_RECVERR set, a full qdisc says so as ENOBUFS).
func isDropped(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && errno == syscall.ENOBUFS
}
