//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package netcore

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// Batched reads on 64-bit Linux: one recvmmsg takes every datagram waiting
// in the socket buffer, up to readBatch, each into its own pooled buffer
// with its own control messages — so each keeps its own kernel arrival
// stamp — and its own source address (issue 16). One wake-up of the reader
// then moves a burst from dozens of peers instead of one datagram.
//
// It is written against the syscall package (the standard library first):
// golang.org/x/net/ipv4's ReadBatch does the same but allocates a net.Addr
// for every datagram, and this path is held to zero allocations (L6).

// readBatch is how many datagrams one recvmmsg may take.
const readBatch = 32

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
}

func newBatchReader(conn *net.UDPConn, stamped bool) (*batchReader, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &batchReader{rc: rc, batch: readBatch}
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
		d := r.ds[i]
		r.iovs[i].Base = &d.buf[0]
		r.iovs[i].SetLen(len(d.buf))
		h := &r.hdrs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Namelen = uint32(unsafe.Sizeof(r.names[i]))
		h.Iov = &r.iovs[i]
		h.Iovlen = 1
		h.Control = &r.oobs[i][0]
		h.SetControllen(oobSize)
		h.Flags = 0
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
func (r *batchReader) recvmmsg(fd uintptr) bool {
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
		r.err = errno
		return true
	}
}

func (r *batchReader) datagram(i int) *Datagram { return r.ds[i] }

func (r *batchReader) oob(i int) []byte { return r.oobs[i][:r.oobn[i]] }

// from decodes the i-th source address, as ReadMsgUDPAddrPort would.
func (r *batchReader) from(i int) netip.AddrPort {
	sa := &r.names[i]
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	switch sa.Family {
	case syscall.AF_INET:
		s4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), port)
	case syscall.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			a = a.WithZone(r.zone(sa.Scope_id))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
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
