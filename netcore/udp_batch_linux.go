//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package netcore

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Batched reads on 64-bit Linux: one recvmmsg takes every datagram waiting
// in the socket buffer, up to readBatch, each into its own pooled buffer
// with its own control messages — so each keeps its own kernel arrival
// stamp — and its own source address. One wake-up of the reader
// then moves a burst from dozens of peers instead of one datagram.
//
// It is written against the syscall package (the standard library first;
// golang.org/x/sys/unix only for SYS_SENDMMSG, which syscall lacks on
// amd64): golang.org/x/net/ipv4's ReadBatch/WriteBatch do the same but
// allocate a net.Addr per datagram, and this path is held to zero
// allocations (L6).

// readBatch is how many datagrams one recvmmsg may take.
const readBatch = MaxReadBatch

// mmsghdr is struct mmsghdr on a 64-bit kernel: a msghdr and the length
// the kernel received, padded to 8 bytes.
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
	_   [4]byte
}

// batchReader owns the buffers of one socket's reads.
type batchReader struct {
	rc    syscall.RawConn
	batch int // 1 when the kernel does not stamp: see read
	ds    [readBatch]*Datagram
	hdrs  [readBatch]mmsghdr
	iovs  [readBatch]syscall.Iovec
	names [readBatch]syscall.RawSockaddrInet6
	oobs  [readBatch][oobSize]byte
	oobn  [readBatch]int
	zones map[uint32]string // interface index → name, for link-local peers
	got   int
	err   error
	recv  func(fd uintptr) bool // bound once: a method value per read would allocate
	// queued drains the error queue when a read fails with a queued
	// error; nil: the socket has none.
	queued func(fd uintptr) (int, bool)
}

// maxReports bounds the queued errors one wake-up of a read drains before
// it hands the error to its caller.
const maxReports = 4

func newBatchReader(conn *net.UDPConn, stamped bool, queued func(fd uintptr) (int, bool)) (*batchReader, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &batchReader{rc: rc, batch: readBatch, queued: queued}
	if !stamped {
		// Without kernel stamps a datagram's arrival is the reader's clock
		// right after reading it: a batch would share one reading, the
		// very error per-datagram times exist to avoid.
		r.batch = 1
	}
	for i := range r.ds {
		r.ds[i] = datagramPool.Get().(*Datagram)
	}
	r.recv = r.recvmmsg
	return r, nil
}

// read fills r.ds[:n] (n ≥ 1) from the socket, waiting until something
// arrives. oob(i) and from(i) give each datagram's control messages and
// source.
func (r *batchReader) read() (int, error) {
	for i := range r.batch {
		recvHeader(&r.hdrs[i].hdr, &r.iovs[i], r.ds[i].buf[:], &r.names[i], r.oobs[i][:])
	}
	r.got, r.err = 0, nil
	if err := r.rc.Read(r.recv); err != nil {
		return 0, err
	}
	if r.err != nil {
		return 0, r.err
	}
	for i := range r.got {
		// A datagram longer than the buffer comes cut at its end, still
		// longer than MaxDatagram: seen as oversize (Q5).
		r.ds[i].n = int(r.hdrs[i].n)
		r.oobn[i] = int(r.hdrs[i].hdr.Controllen)
	}
	return r.got, nil
}

// recvmmsg is the RawConn.Read callback: false asks the poller to wait.
// A read that fails with a queued ICMP error (IP_RECVERR) is the kernel's
// report that the error queue holds something (the poller's wake-up for
// it, EPOLLERR, looks like any other): it is drained here, in the same
// wake-up, and the read goes on — the datagrams waiting are still there.
func (r *batchReader) recvmmsg(fd uintptr) bool {
	reports := 0
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_RECVMMSG, fd,
			uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(r.batch), 0, 0, 0)
		switch errno {
		case 0:
			r.got = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		if r.queued != nil && reports < maxReports && isQueuedErrno(errno) {
			reports++
			r.queued(fd)
			continue
		}
		r.err = errno
		return true
	}
}

func (r *batchReader) datagram(i int) *Datagram { return r.ds[i] }

func (r *batchReader) oob(i int) []byte { return r.oobs[i][:r.oobn[i]] }

// from decodes the i-th source address, as ReadMsgUDPAddrPort would.
func (r *batchReader) from(i int) netip.AddrPort {
	sa := &r.names[i]
	ap := sockaddrPort(sa)
	if sa.Family == syscall.AF_INET6 && sa.Scope_id != 0 {
		ap = netip.AddrPortFrom(ap.Addr().WithZone(r.zone(sa.Scope_id)), ap.Port())
	}
	return ap
}

// zone names an interface the way the net package does for a link-local
// peer, remembered so that it costs one lookup per interface.
func (r *batchReader) zone(index uint32) string {
	if z, ok := r.zones[index]; ok {
		return z
	}
	z := ""
	if ifc, err := net.InterfaceByIndex(int(index)); err == nil {
		z = ifc.Name
	}
	if r.zones == nil {
		r.zones = make(map[uint32]string)
	}
	r.zones[index] = z
	return z
}

// take hands the i-th datagram over and puts a fresh buffer in its place.
func (r *batchReader) take(i int) *Datagram {
	d := r.ds[i]
	r.ds[i] = datagramPool.Get().(*Datagram)
	return d
}

// close returns the buffers not handed over.
func (r *batchReader) close() {
	for i, d := range r.ds {
		datagramPool.Put(d)
		r.ds[i] = nil
	}
}

// batchWriter is sendmmsg's state: one call writes a batch of datagrams.
type batchWriter struct {
	rc    syscall.RawConn
	v6    bool // the socket is AF_INET6 (dual-stack): IPv4 goes v4-mapped
	n     int  // datagrams in hdrs
	done  int  // of them, written or failed so far
	errs  int
	drops int // of the failed, dropped for want of queue space (ENOBUFS)
	// tries counts the sends of hdrs[done] that queued errors failed;
	// resent all such failures in this write; failed: one did since the
	// last drain. errno is the last failure's, closed says the socket
	// itself failed.
	tries, resent int
	failed        bool
	errno         syscall.Errno
	closed        bool
	// queued drains the error queue (udp_trace.go); nil: none.
	queued func(fd uintptr) (int, bool)
	hdrs   [readBatch]mmsghdr
	iovs   [readBatch]syscall.Iovec
	names  [readBatch]syscall.RawSockaddrInet6
	// oobs is each header's own control buffer: the source address to
	// answer from (udp_pktinfo.go), so that one datagram's does not
	// become another's.
	oobs [readBatch][txOOBSize]byte
	send func(fd uintptr) bool
}

// txOOBSize holds an IPV6_PKTINFO message (20 bytes after a 16-byte
// header) and an IP_TTL or IPV6_HOPLIMIT one (udp_trace.go).
const txOOBSize = 64

func newBatchWriter(conn *net.UDPConn, queued func(fd uintptr) (int, bool)) *batchWriter {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil
	}
	w := &batchWriter{rc: rc, queued: queued}
	var sa syscall.Sockaddr
	rc.Control(func(fd uintptr) { sa, err = syscall.Getsockname(int(fd)) })
	switch sa.(type) {
	case *syscall.SockaddrInet4:
	case *syscall.SockaddrInet6:
		w.v6 = true
	default:
		return nil
	}
	w.send = w.sendmmsg
	return w
}

// put fills slot i for a datagram to to, with control messages oob (at
// most txOOBSize bytes); false when the socket's family cannot reach to
// (the caller sends that one alone, for its error).
func (w *batchWriter) put(i int, to netip.AddrPort, p, oob []byte) bool {
	if len(p) == 0 {
		return false
	}
	a := to.Addr()
	sa := &w.names[i]
	*sa = syscall.RawSockaddrInet6{}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
	var namelen uintptr
	switch {
	case !w.v6 && a.Is4():
		s4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		s4.Family = syscall.AF_INET
		s4.Addr = a.As4()
		namelen = syscall.SizeofSockaddrInet4
	case w.v6 && a.Zone() == "":
		sa.Family = syscall.AF_INET6
		sa.Addr = a.As16() // an IPv4 address comes out v4-mapped
		namelen = syscall.SizeofSockaddrInet6
	default:
		return false
	}
	w.iovs[i].Base = &p[0]
	w.iovs[i].SetLen(len(p))
	h := &w.hdrs[i].hdr
	*h = syscall.Msghdr{}
	h.Name = (*byte)(unsafe.Pointer(sa))
	h.Namelen = uint32(namelen)
	h.Iov = &w.iovs[i]
	h.Iovlen = 1
	if n := copy(w.oobs[i][:], oob); n > 0 {
		h.Control = &w.oobs[i][0]
		h.SetControllen(n)
	}
	return true
}

// write sends hdrs[:n]; a datagram the kernel refuses is counted in errs
// and skipped, as Send's error would be.
func (w *batchWriter) write() (sent, errs int) {
	w.done, w.errs, w.drops, w.tries, w.resent, w.failed, w.errno, w.closed = 0, 0, 0, 0, 0, false, 0, false
	for w.done < w.n {
		if err := w.rc.Write(w.send); err != nil {
			// The socket itself failed (closed): the rest are lost.
			w.errs += w.n - w.done
			w.closed = true
			break
		}
	}
	return w.n - w.errs, w.errs
}

// sendmmsg is the RawConn.Write callback: false asks the poller to wait.
func (w *batchWriter) sendmmsg(fd uintptr) bool {
	for w.done < w.n {
		n, _, errno := syscall.Syscall6(unix.SYS_SENDMMSG, fd,
			uintptr(unsafe.Pointer(&w.hdrs[w.done])), uintptr(w.n-w.done), 0, 0, 0)
		switch {
		case errno == 0:
			if n > 0 {
				w.tries = 0
			}
			w.done += int(n)
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			return false
		case isQueuedErrno(errno) && w.queued != nil && w.retry(fd):
			// A queued ICMP error (IP_RECVERR) failed the send of
			// hdrs[done], which was not sent: it goes again at once
			// (UDPTransport.write's rule).
		case errno == syscall.ENOBUFS:
			// Dropped for want of queue space: skip it, a loss.
			w.done++
			w.errs++
			w.drops++
			w.errno = errno
		default:
			// The first datagram of the rest failed: skip it.
			w.done++
			w.errs++
			w.tries = 0
			w.errno = errno
		}
	}
	if w.failed {
		w.failed = false
		w.queued(fd) // the reports the batch took: read what they left
	}
	return true
}

// retry says whether to send hdrs[done] again after a queued error failed
// it: not after maxSendTries, nor after a second failure in a row with
// nothing queued (the datagram's own).
func (w *batchWriter) retry(fd uintptr) bool {
	w.tries++
	w.failed = true
	if w.tries == 2 {
		if n, contended := w.queued(fd); n == 0 && !contended {
			w.tries, w.failed = 0, false
			return false
		}
	}
	if w.tries >= maxSendTries {
		w.tries = 0
		return false
	}
	w.resent++
	return true
}

// writeRaw writes one datagram with its control messages through the
// batch writer's sendmmsg, under write's rule for queued ICMP errors (the
// datagram a queued error failed goes again at once, the queue drained
// there): a router's answer to a probe fails the socket's next send, and
// the net package's error values for that failure would allocate. The
// error it returns is the failure's errno (net.ErrClosed for a closed
// socket); ok is false when the writer cannot take the datagram, which the
// caller then sends the ordinary way.
func (t *UDPTransport) writeRaw(p, oob []byte, to netip.AddrPort) (err error, ok bool) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	w := t.writer()
	if w == nil || len(oob) > txOOBSize || !w.put(0, to, p, oob) {
		return nil, false
	}
	w.n = 1
	_, errs := w.write()
	t.resent.Add(uint64(w.resent))
	switch {
	case errs == 0:
		return nil, true
	case w.closed:
		return net.ErrClosed, true
	}
	return w.errno, true
}

// writer is the socket's batch writer, made at its first use; nil where
// the socket cannot have one. The caller holds wmu.
func (t *UDPTransport) writer() *batchWriter {
	if t.w == nil && !t.wNone {
		t.w = newBatchWriter(t.conn, t.queuedRead())
		t.wNone = t.w == nil
	}
	return t.w
}

// SendBatch writes the datagrams ps[i] to to[i], as many per system call
// as the platform allows (sendmmsg here), and returns how many failed. A
// datagram longer than MaxDatagram fails (Q5), as with Send. The
// impairment socket's Flush uses it: the datagrams that come due together
// leave together. Safe for concurrent use.
func (t *UDPTransport) SendBatch(to []netip.AddrPort, ps [][]byte) (failed int) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	w := t.writer()
	for i := 0; i < len(ps); {
		if w != nil {
			w.n = 0
			for ; i < len(ps) && w.n < readBatch; i++ {
				if len(ps[i]) > MaxDatagram || !w.put(w.n, to[i], ps[i], t.batchOOB(to[i])) {
					break
				}
				w.n++
			}
			if w.n > 0 {
				sent, errs := w.write()
				t.sent.Add(uint64(sent))
				t.sendErrors.Add(uint64(errs - w.drops))
				t.dropped.Add(uint64(w.drops))
				t.resent.Add(uint64(w.resent))
				failed += errs - w.drops
				t.batches.Add(1)
				continue
			}
		}
		// One the batch cannot take: alone, for its own error.
		if t.Send(to[i], ps[i]) != nil {
			failed++
		}
		i++
	}
	return failed
}

// batchOOB is the control messages of a batched datagram to to: the source
// to answer from, as Send would use, or none.
func (t *UDPTransport) batchOOB(to netip.AddrPort) []byte {
	local, ok := t.replyAddr(to)
	if !ok {
		return nil
	}
	t.batchFrom = appendFrom(t.batchFrom[:0], to, local)
	return t.batchFrom
}
