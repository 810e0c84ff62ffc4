package netcore

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The live transport: one *net.UDPConn and pooled fixed-size buffers. In
// steady state neither direction allocates per datagram (the hot-path rule
// of L6 applied to the socket). It is read one of two ways, whichever
// the owner asks for first:
//
//   - ReadUntil: the goroutine that owns the Endpoint reads the socket
//     itself, waiting in it until a datagram arrives, its next deadline
//     passes or Wake is called (the live driver). A datagram then goes
//     from the kernel to Endpoint.Receive in one wake-up of one goroutine:
//     no hand-over, so no second thread woken per datagram (a hand-over
//     costs ~20 µs of turnaround on a LAN and most of the echo's CPU
//     above bare UDP);
//   - Inbox: a reader goroutine, started by the first call, hands
//     datagrams over a channel (drivers that wait on several things in a
//     select).
//
// The path of a received datagram, in order:
//  1. the reader (the reader goroutine, or ReadUntil) reads into pooled Datagram buffers — every datagram
//     waiting, up to 32, in one recvmmsg on 64-bit Linux
//     (udp_batch_linux.go), one per read elsewhere — each larger than
//     MaxDatagram so that an oversize datagram is seen whole (or truncated
//     at the buffer's end) rather than cut silently to a plausible size;
//  2. oversize datagrams are dropped and counted (Q5: nothing of ours
//     is larger, so one that is came from someone else);
//  3. each gets its own arrival time (At): the kernel's receive stamp where
//     the platform gives one (udp_stamp_linux.go), else the reader's clock
//     read right after that datagram — never one reading for a batch (so
//     without kernel stamps a read takes one datagram);
//  4. the rest go into the inbox; when the owner falls behind, the reader
//     waits and the kernel's socket buffer absorbs, and if need be drops,
//     what comes next — one place where datagrams queue, not two;
//  5. the owner feeds Bytes() to Endpoint.Receive, at Arrival, and calls
//     Release.

// readBufferSize is the reader's buffer. Anything above MaxDatagram is
// oversize; 2048 leaves room to see that without reading 64 KiB per buffer.
const readBufferSize = 2048

// inboxDepth is how many received datagrams may wait for the owner. At 30
// frames per second and a few datagrams per frame per peer, 256 covers a
// stall of several frames with dozens of peers before the kernel's buffer
// takes over.
const inboxDepth = 256

// socketBuffer is the kernel receive buffer asked for: room for about a
// thousand small datagrams where the usual default holds a couple of hundred.
const socketBuffer = 1 << 20

// ErrTooLarge is returned by Send for a datagram longer than MaxDatagram.
var ErrTooLarge = fmt.Errorf("netcore: datagram larger than %d bytes (Q5)", MaxDatagram)

// maxKernelWait bounds how long before the reader's own reading a kernel
// stamp is believed. A datagram does not wait that long in a socket buffer
// the reader drains; a stamp further back, or one after the reading, means
// the wall clock was stepped in between, and the reading is used instead.
const maxKernelWait = time.Second

// Datagram is one received datagram in a pooled buffer. It belongs to the
// receiver until Release, after which neither it nor Bytes() may be used.
type Datagram struct {
	From netip.AddrPort
	// At is when the datagram arrived: the kernel's receive stamp where
	// the platform gives one, else the reader's clock right after reading
	// it. It carries a monotonic reading, so At.Sub(start) is on the same
	// clock as time.Since(start).
	At  time.Time
	n   int
	buf [readBufferSize]byte
}

// Arrival is At as time since start, the live driver's now. A Datagram
// built by hand, without a time, arrived now.
func (d *Datagram) Arrival(start time.Time) time.Duration {
	if d.At.IsZero() {
		return time.Since(start)
	}
	return d.At.Sub(start)
}

// arrivedAt turns a kernel stamp k (wall clock) into a time on the
// monotonic clock: the reading taken just after the read, less how long
// before it the kernel stamped the datagram (a difference of two wall-clock
// readings a moment apart, so a wall clock that jumps elsewhere does not
// matter).
func arrivedAt(read, k time.Time) time.Time {
	wait := read.Sub(k) // k has no monotonic reading: wall clock against wall clock
	if wait < 0 || wait > maxKernelWait {
		return read
	}
	return read.Add(-wait)
}

// Bytes is the datagram's payload.
func (d *Datagram) Bytes() []byte { return d.buf[:d.n] }

// Release returns the buffer to the pool. Call it exactly once.
func (d *Datagram) Release() { datagramPool.Put(d) }

var datagramPool = sync.Pool{New: func() any { return new(Datagram) }}

// UDPTransport is a Transport over a UDP socket.
type UDPTransport struct {
	conn    *net.UDPConn
	local   netip.AddrPort
	stamped bool // the kernel stamps arrivals (SO_TIMESTAMPNS)
	// from (a wildcard socket) answers each peer from the address its
	// datagrams arrive at (udp_pktinfo.go); nil: the system picks.
	from  *replyFrom
	txOOB []byte
	// errq drains the socket's error queue (IP_RECVERR, udp_trace.go);
	// nil where the platform or socket has none: nothing is traced.
	errq   *errDrain
	hopOOB []byte // SendHopLimit's control messages
	inbox  chan *Datagram
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	// How the socket is read: readerOnce starts the reader goroutine (the
	// first Inbox); direct is ReadUntil's state, made on its first call.
	// Only one of them may be used.
	readerOnce sync.Once
	mode       atomic.Int32 // 0 unread, modeReader, modeDirect
	direct     *directReader

	// epoch is the driver's zero (SetEpoch): Now is time since it.
	epoch atomic.Pointer[time.Time]

	// SendBatch's state, made on first use.
	wmu       sync.Mutex
	w         *batchWriter
	wNone     bool   // the platform or socket has no batch writer
	batchFrom []byte // a batched datagram's control messages, under wmu

	woken atomic.Bool // Wake was called since ReadUntil last looked

	sent, sendErrors, dropped, received, oversize, readErrors, kernelStamped, reads, batches, resent atomic.Uint64
	// readDelay counts, for each kernel-stamped datagram, its wait in the
	// socket from the stamp to the read (UDPStats.ReadDelay).
	readDelay Delays
}

var _ Transport = (*UDPTransport)(nil)

// ListenUDP opens a UDP socket on addr ("host:port"; port 0 picks a free
// one) and starts its reader goroutine.
func ListenUDP(addr string) (*UDPTransport, error) { return listenUDP(addr, false) }

// listenUDP opens the socket; plain leaves out every socket option that
// only some systems have — kernel arrival stamps, PKTINFO, the error
// queue, batched writes — so that the socket behaves as it does on
// Windows, where none of them exists. Tests take that path on Linux.
func listenUDP(addr string, plain bool) (*UDPTransport, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	// A host with dozens of peers takes bursts; let them queue in the
	// kernel. Best effort: the system may cap it.
	conn.SetReadBuffer(socketBuffer)
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	t := &UDPTransport{
		conn:  conn,
		local: netip.AddrPortFrom(local.Addr().Unmap(), local.Port()),
		// Best effort too: without kernel stamps each datagram is timed
		// by the reader's clock.
		stamped: !plain && enableTimestamps(conn),
		inbox:   make(chan *Datagram, inboxDepth),
		done:    make(chan struct{}),
		wNone:   plain,
	}
	if plain {
		return t, nil
	}
	if t.local.Addr().IsUnspecified() && enablePktinfo(conn) {
		t.from = &replyFrom{m: map[netip.AddrPort]netip.Addr{}}
	}
	// Best effort: without an error queue the socket works as before and
	// traces nothing (TraceUnavailable says why).
	t.errq = enableRecvErr(conn)
	return t, nil
}

// LocalAddr is the socket's address. For a socket bound to all interfaces
// its host is the unspecified address; peers reach it at one of the
// machine's own addresses on that port.
func (t *UDPTransport) LocalAddr() netip.AddrPort { return t.local }

// Send writes one datagram. It refuses anything longer than MaxDatagram.
func (t *UDPTransport) Send(to netip.AddrPort, p []byte) error {
	if len(p) > MaxDatagram {
		return ErrTooLarge
	}
	oob := t.txOOB[:0]
	if local, ok := t.replyAddr(to); ok {
		oob = appendFrom(oob, to, local)
		t.txOOB = oob
	}
	return t.sent1(t.write(p, oob, to))
}

// write sends one datagram. With IP_RECVERR a queued ICMP error fails the
// socket's next send once, whatever the send's destination, and the
// datagram is not sent: the error is the error queue's news, not this
// datagram's. The failure consumed the report, so the datagram is sent
// again at once — before anything else, since every microsecond spent
// lets another forged error in to fail it again — and the queue is then
// drained, there, where the kernel reported it. A second failure in a row
// with nothing queued is the datagram's own (no route, say); at most
// maxSendTries reports fail one datagram.
func (t *UDPTransport) write(p, oob []byte, to netip.AddrPort) error {
	if t.errq != nil {
		// Where queued errors fail sends, through sendmmsg: the same
		// rule, without the net package's allocations (writeRaw).
		if err, ok := t.writeRaw(p, oob, to); ok {
			return err
		}
	}
	for try := 1; ; try++ {
		var err error
		if len(oob) > 0 {
			_, _, err = t.conn.WriteMsgUDPAddrPort(p, oob, to)
		} else {
			_, err = t.conn.WriteToUDPAddrPort(p, to)
		}
		if err == nil || t.errq == nil || !isICMPErr(err) {
			if try > 1 {
				t.errq.drain(time.Now(), t.epoch.Load())
			}
			return err
		}
		if try == 2 {
			if n, contended := t.errq.drain(time.Now(), t.epoch.Load()); n == 0 && !contended {
				return err
			}
		}
		if try == maxSendTries {
			t.errq.drain(time.Now(), t.epoch.Load())
			return err
		}
		t.resent.Add(1)
	}
}

// SetEpoch sets the zero of Now: the driver's start, so that Now reads
// the same clock as the now the driver passes the Endpoint.
func (t *UDPTransport) SetEpoch(start time.Time) { t.epoch.Store(&start) }

// Now is the time since SetEpoch's start (netcore.Clock): the Endpoint
// reads it just before a write that opens a round trip. Before SetEpoch it
// is 0, and the Endpoint keeps the now it was called with.
func (t *UDPTransport) Now() time.Duration {
	if e := t.epoch.Load(); e != nil {
		return time.Since(*e)
	}
	return 0
}

// Inbox delivers received datagrams to the owning goroutine; the first
// call starts the reader goroutine. It is closed once the transport is
// closed and the reader has stopped. A socket read with ReadUntil has no
// reader: its Inbox stays empty.
func (t *UDPTransport) Inbox() <-chan *Datagram {
	t.readerOnce.Do(func() {
		if !t.mode.CompareAndSwap(0, modeReader) {
			return
		}
		t.wg.Add(1)
		go t.read()
	})
	return t.inbox
}

// Close closes the socket and waits for the reader goroutine to exit.
// Datagrams already in the inbox can still be drained.
func (t *UDPTransport) Close() error {
	err := net.ErrClosed
	t.once.Do(func() {
		close(t.done)
		err = t.conn.Close()
		t.wg.Wait()
	})
	return err
}

// UDPStats counts what the socket did. Oversize and read errors are
// datagrams that never reached an Endpoint.
type UDPStats struct {
	Sent, SendErrors uint64
	// Dropped counts datagrams the kernel dropped on sending for want of
	// queue space (ENOBUFS): lost like any other, not send errors.
	Dropped    uint64
	Received   uint64 // handed to the inbox
	Oversize   uint64 // longer than MaxDatagram, dropped (Q5)
	ReadErrors uint64
	// KernelStamped counts datagrams received whose arrival time is the
	// kernel's stamp; the others were timed by the reader's clock.
	KernelStamped uint64
	// Reads counts the reader's reads of the socket: fewer than Received
	// when reads take batches (recvmmsg on Linux).
	Reads uint64
	// Batches counts SendBatch's system calls that wrote several
	// datagrams at once (sendmmsg on Linux).
	Batches uint64
	// Resent counts sends a queued ICMP error failed (IP_RECVERR), each
	// followed by a drain of the error queue and the same datagram sent
	// again at once (udp_trace.go).
	Resent uint64
	// ErrQueueRead counts the error queue's messages read, ErrQueueDrains
	// the drains that read them; ErrQueueForged the answers dropped for
	// quoting a probe number none of the socket's probes had.
	ErrQueueRead, ErrQueueDrains, ErrQueueForged uint64
	// ReadDelay counts how long each kernel-stamped datagram waited in
	// the socket, from the kernel's arrival stamp to the read that took
	// it: the process's own share of every round trip it answers, which
	// grows while the process is busy (its own frame's work and sends)
	// or waits for a CPU.
	ReadDelay DelayCounts
}

// Stats reads the counters; safe from any goroutine.
func (t *UDPTransport) Stats() UDPStats {
	s := UDPStats{
		Sent:       t.sent.Load(),
		SendErrors: t.sendErrors.Load(),
		Dropped:    t.dropped.Load(),
		Received:   t.received.Load(),
		Oversize:   t.oversize.Load(),
		ReadErrors: t.readErrors.Load(),

		KernelStamped: t.kernelStamped.Load(),
		Reads:         t.reads.Load(),
		Batches:       t.batches.Load(),
		Resent:        t.resent.Load(),
		ReadDelay:     t.readDelay.Counts(),
	}
	if d := t.errq; d != nil {
		s.ErrQueueRead, s.ErrQueueDrains, s.ErrQueueForged = d.read.Load(), d.drains.Load(), d.forged.Load()
	}
	return s
}

// read is the reader goroutine: the only one that reads the socket and the
// only sender on the inbox. Each read takes every datagram waiting, up to a
// batch, where the platform can (udp_batch_linux.go), and each datagram
// keeps its own arrival time.
func (t *UDPTransport) read() {
	defer t.wg.Done()
	defer close(t.inbox)
	r, err := newBatchReader(t.conn, t.stamped, t.queuedRead())
	if err != nil {
		return
	}
	defer r.close()
	for {
		n, err := r.read()
		read := time.Now() // one per batch; a batch is >1 only with kernel stamps
		t.reads.Add(1)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// A Wake meant for ReadUntil: the reader has no deadline.
				t.conn.SetReadDeadline(time.Time{})
				continue
			}
			if isICMPErr(err) {
				// An ICMP error queued (IP_RECVERR), reported where the
				// read could not drain it: not a read error.
				t.drainErrors(read)
				continue
			}
			// Transient (e.g. an ICMP error surfaced by the OS): the
			// datagram is lost like any other and the link's retries
			// cover it.
			t.readErrors.Add(1)
			continue
		}
		for i := range n {
			if !t.accept(r, i, read) {
				continue
			}
			select {
			case t.inbox <- r.take(i):
			case <-t.done:
				return
			}
		}
		t.backstop(read)
	}
}

// accept fills in the i-th datagram of a read: its source, its own
// arrival time, the address it came to. It is false for an oversize
// datagram, dropped and counted (Q5).
func (t *UDPTransport) accept(r *batchReader, i int, read time.Time) bool {
	d := r.datagram(i)
	if d.n > MaxDatagram {
		t.oversize.Add(1)
		return false
	}
	// A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d; peers
	// are known by their plain IPv4 address everywhere else.
	from := r.from(i)
	d.From = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	d.At = read
	if k, ok := kernelStamp(r.oob(i)); ok && t.stamped {
		d.At = arrivedAt(read, k)
		t.kernelStamped.Add(1)
		if w := read.Sub(d.At); w > 0 { // 0: a stamp arrivedAt did not trust
			t.readDelay.Add(w)
		}
	}
	if t.from != nil {
		if local, ok := arrivedTo(r.oob(i)); ok {
			t.from.note(d.From, local)
		}
	}
	t.received.Add(1) // before the hand-over, so the owner never sees a datagram it has not counted
	return true
}

// MaxReadBatch is the most datagrams one read takes: a ReadUntil dst
// with this much room never grows.
const MaxReadBatch = 32

const (
	modeReader = 1 + iota
	modeDirect
)

// errReaderRunning: ReadUntil on a socket whose Inbox has been asked for.
var errReaderRunning = errors.New("netcore: the socket has a reader goroutine (Inbox); ReadUntil cannot read it too")

// directReader is ReadUntil's state, touched only by the owner (and
// woken, from anywhere).
type directReader struct {
	r     *batchReader
	err   error     // newBatchReader's, for good
	until time.Time // the read deadline set on the socket
	set   bool      // until is the socket's deadline (a Wake or timeout clears it)
}

// aLongTimeAgo is a deadline in the past: setting it makes a waiting read
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// ReadUntil reads the datagrams waiting on the socket into dst and returns
// it, waiting until at least one arrives, until passes, or Wake is called;
// then dst may be empty. It may also return empty before until, when an
// earlier call's until, still in force, passes first (the caller works
// its next deadline out again and calls again). Each datagram has its own
// arrival time (as Inbox's do) and the caller Releases each. The error is net.ErrClosed
// once the socket is closed, errReaderRunning after Inbox; a transient
// read error (an ICMP error the OS surfaced) is counted and returns an
// empty dst. Only the owning goroutine may call it; the first call
// decides that the socket has no reader goroutine.
func (t *UDPTransport) ReadUntil(until time.Time, dst []*Datagram) ([]*Datagram, error) {
	if t.direct == nil {
		if !t.mode.CompareAndSwap(0, modeDirect) && t.mode.Load() != modeDirect {
			return dst, errReaderRunning
		}
		t.readerOnce.Do(func() {}) // a later Inbox starts no reader
		t.direct = &directReader{}
		t.direct.r, t.direct.err = newBatchReader(t.conn, t.stamped, t.queuedRead())
	}
	dr := t.direct
	if dr.err != nil {
		return dst, net.ErrClosed
	}
	if t.woken.Swap(false) {
		// A Wake since the last read: its deadline in the past may
		// still be on the socket, or land in a moment.
		dr.set = false
		return dst, nil
	}
	if !dr.set || until.Before(dr.until) {
		// A later until keeps the deadline already set: moving a socket's
		// deadline is a runtime timer's move, and one moved earlier than
		// the poller's sleep wakes the poller's thread (an eventfd write
		// and a wake-up of another CPU). The owner's next deadline moves
		// on with nearly every datagram (a resend timer restarted by each
		// send), so keeping the earlier one saves that on the hot path; it
		// costs one early, empty return when it passes, after which the
		// next call sets its own.
		if err := t.conn.SetReadDeadline(until); err != nil {
			return dst, net.ErrClosed
		}
		dr.until, dr.set = until, true
	}
	if t.woken.Load() {
		// Woken between the check above and the deadline just set,
		// which may have replaced Wake's: return, the next call takes it.
		dr.set = false
		return dst, nil
	}
	n, err := dr.r.read()
	read := time.Now() // one per batch; a batch is >1 only with kernel stamps
	t.reads.Add(1)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			dr.set = false // until passed, or Wake moved it
			return dst, nil
		case errors.Is(err, net.ErrClosed):
			return dst, err
		case isICMPErr(err):
			t.drainErrors(read) // an ICMP error queued: not a read error
			return dst, nil
		}
		t.readErrors.Add(1)
		return dst, nil
	}
	for i := range n {
		if t.accept(dr.r, i, read) {
			dst = append(dst, dr.r.take(i))
		}
	}
	t.backstop(read)
	return dst, nil
}

// Wake makes a ReadUntil waiting now return at once, or the next one if
// none is waiting: how another goroutine gets the owner's attention (a
// control, a stop). Safe from any goroutine.
func (t *UDPTransport) Wake() {
	if t.mode.Load() == modeReader {
		return // nobody waits in ReadUntil
	}
	t.woken.Store(true)
	t.conn.SetReadDeadline(aLongTimeAgo)
}

// replyAddr is the local address to answer to from, when this socket
// listens on every address and a datagram from to has arrived.
func (t *UDPTransport) replyAddr(to netip.AddrPort) (netip.Addr, bool) {
	if t.from == nil {
		return netip.Addr{}, false
	}
	return t.from.lookup(netip.AddrPortFrom(to.Addr().Unmap(), to.Port()))
}
