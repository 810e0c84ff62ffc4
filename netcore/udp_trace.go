package netcore

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lagscope/lagscope/netcore/trace"
)

// The socket side of the hop tracer (docs/path.md). A probe leaves on the
// link's own socket, to the peer's address and port, with its hop limit set
// on that one datagram by a control message; routers' ICMP answers come
// back on the socket's error queue (IP_RECVERR, IPV6_RECVERR). With that
// option set, every ICMP error the socket draws — a router's answer, a
// port unreachable from a peer that left, or a forger's — also fails the
// socket's next read or send once. The queue is drained where the kernel
// reports it so, and on two schedules (errDrain.due):
//
//   - a read that fails so drains it in the same wake-up and reads on
//     (udp_batch_linux.go's recvmmsg callback; ReadUntil and the reader
//     elsewhere): the datagrams waiting are still there;
//   - a send that fails so sends the datagram again at once and then
//     drains it (write, and SendBatch's sendmmsg): the error was the
//     queue's news, not the datagram's, which was not sent;
//   - while a probe may await its answer, HopAnswers — the Endpoint's call
//     on each Tick and, while it traces, each Receive — drains it at most
//     every probeDrainEvery, so the tracer's timeout sees every answer;
//   - and every errBackstop at the latest (HopAnswers, reads), so that an
//     entry whose report a race consumed never waits, nor holds room in
//     the receive buffer the queue shares with datagrams, for long.
//
// Nothing drains it after a batch of datagrams when nothing was reported.
// A drain is bounded (maxDrain messages, errBatch to a system call) and
// answers keep the kernel's stamp of the ICMP message, so a late drain
// still gives a true round trip. The parsing is trace's and the quote's
// header netcore's (quoteOf); what is read waits in bounded queues for the
// Endpoint.

// HopTransport is a Transport that can trace the path to a peer: send a
// datagram with a hop limit of its own and read the ICMP answers it draws.
// *UDPTransport is one on Linux; a transport that wraps another passes the
// three on to let its endpoint trace.
type HopTransport interface {
	// SendHopLimit writes one datagram that routers drop, answering with
	// ICMP Time Exceeded, after hops hops. Other datagrams keep the
	// socket's hop limit.
	SendHopLimit(to netip.AddrPort, p []byte, hops int) error
	// HopAnswers appends the ICMP answers read since the last call to dst.
	HopAnswers(dst []HopAnswer) []HopAnswer
	// TraceUnavailable is "" when the transport traces, else why not.
	TraceUnavailable() string
}

// HopAnswer is one ICMP answer read off the error queue.
type HopAnswer struct {
	// To is the destination of the datagram that drew it: which link.
	To netip.AddrPort
	// At is when the answer arrived on the driver's clock (SetEpoch), 0
	// when the transport has no epoch.
	At     time.Duration
	Answer trace.Answer
}

// quoteOf says what a router's quote of one of our datagrams shows: a probe
// travels as the first record of an unsealed control datagram. A numbered
// datagram, a full header that is not ours, or a control datagram whose
// first record is whole and not a probe is other traffic; a quote too
// short to tell, or a sealed control datagram, tells nothing.
func quoteOf(quote []byte) (trace.Probe, trace.Quote) {
	h, err := DecodeHeader(quote)
	switch {
	case err != nil && len(quote) >= HeaderLen:
		return trace.Probe{}, trace.QuoteOther
	case err != nil:
		return trace.Probe{}, trace.QuoteNone
	case h.Channel != ChannelControl:
		return trace.Probe{}, trace.QuoteOther
	case h.Flags != 0:
		return trace.Probe{}, trace.QuoteNone
	}
	return trace.QuoteOf(quote[HeaderLen:])
}

// Linux's control-message values for the hop limit of one datagram, named
// here so that the bytes are built, and tested, on every platform.
const (
	solIP          = 0  // IPPROTO_IP
	solIPv6        = 41 // IPPROTO_IPV6
	cmsgIPTTL      = 2  // IP_TTL
	cmsgIPv6HopLim = 52 // IPV6_HOPLIMIT
)

// cmsgHdrLen is CMSG_LEN(0) and cmsgAlignOf rounds up to CMSG_ALIGN: a
// size_t cmsg_len, then the level and type, data aligned to a size_t.
const cmsgHdrLen = (ptrWord + 8 + ptrWord - 1) &^ (ptrWord - 1)

// ptrWord is the size of a size_t on this platform.
const ptrWord = 4 << (^uintptr(0) >> 63)

func cmsgAlignOf(n int) int { return (n + ptrWord - 1) &^ (ptrWord - 1) }

// appendHopLimit appends the control message that sets the hop limit of
// one datagram to to, chosen by the destination: IP_TTL for an IPv4 peer,
// which a dual-stack socket reaches as v4-mapped (the kernel sends those as
// IPv4 and ignores IPV6_HOPLIMIT on them), IPV6_HOPLIMIT for an IPv6 peer.
func appendHopLimit(b []byte, to netip.AddrPort, hops int) []byte {
	level, typ := int32(solIPv6), int32(cmsgIPv6HopLim)
	if to.Addr().Unmap().Is4() {
		level, typ = solIP, cmsgIPTTL
	}
	start := len(b)
	b = append(b, make([]byte, cmsgAlignOf(cmsgHdrLen+4))...)
	h := b[start:]
	if ptrWord == 8 {
		binary.NativeEndian.PutUint64(h, uint64(cmsgHdrLen+4))
	} else {
		binary.NativeEndian.PutUint32(h, uint32(cmsgHdrLen+4))
	}
	binary.NativeEndian.PutUint32(h[ptrWord:], uint32(level))
	binary.NativeEndian.PutUint32(h[ptrWord+4:], uint32(typ))
	binary.NativeEndian.PutUint32(h[cmsgHdrLen:], uint32(int32(hops)))
	return b
}

// answerQueueLen bounds each queue of answers waiting for the Endpoint: at
// the tracer's 20 probes a second that is seconds of answers; when one is
// full (nobody takes them: no trace runs, or a flood) the oldest goes.
const answerQueueLen = 256

// answerQueue hands answers from the draining goroutine to the Endpoint's.
type answerQueue struct {
	waiting atomic.Int32 // len(q), read without the lock
	mu      sync.Mutex
	q       [answerQueueLen]HopAnswer
	head, n int
}

func (q *answerQueue) push(a HopAnswer) {
	q.mu.Lock()
	if q.n == answerQueueLen {
		q.head = (q.head + 1) % answerQueueLen
		q.n--
	}
	q.q[(q.head+q.n)%answerQueueLen] = a
	q.n++
	q.waiting.Store(int32(q.n))
	q.mu.Unlock()
}

// take appends the waiting answers to dst, oldest first.
func (q *answerQueue) take(dst []HopAnswer) []HopAnswer {
	if q.waiting.Load() == 0 {
		return dst
	}
	q.mu.Lock()
	for ; q.n > 0; q.n-- {
		dst = append(dst, q.q[q.head])
		q.head = (q.head + 1) % answerQueueLen
	}
	q.waiting.Store(0)
	q.mu.Unlock()
	return dst
}

// The drain's bounds and schedules.
const (
	// maxDrain bounds one drain: a queue refilled as fast as it is read (a
	// flood of ICMP) must not keep the reader from the datagrams. What is
	// left is reported again: the kernel sets the socket's error anew
	// when it hands over an entry with another behind it.
	maxDrain = 128
	// errBatch is how many messages one system call reads.
	errBatch = 16
	// maxSendTries bounds the sends of one datagram that queued errors
	// fail: each failure is one report, consumed by it, so the next send
	// goes unless another error came in between — a microsecond's window.
	maxSendTries = 8
	// errBackstop is the longest an entry waits unread when nothing
	// reported it (its report was consumed by a race between a read, a
	// send and a drain).
	errBackstop = 200 * time.Millisecond
	// probeDrainEvery: while a probe may await its answer, HopAnswers
	// drains at most this often.
	probeDrainEvery = 10 * time.Millisecond
	// probeAwait is how long after a probe leaves it may still await its
	// answer: the tracer's timeout, with a margin.
	probeAwait = 3 * time.Second
	// answerMaxWait bounds how long before a drain a kernel stamp on an
	// answer is believed (errBackstop and more; a stamp further back means
	// the wall clock was stepped).
	answerMaxWait = 5 * time.Second
)

// quoteLen is how much of a quote is read: a probe's header and record.
// The rest of a longer quote is cut off by the kernel (MSG_TRUNC).
const quoteLen = HeaderLen + trace.ProbeLen

// errOOBSize holds an IP_RECVERR message (sock_extended_err and a
// sockaddr_in6 after a 16-byte header), a timestamp and a PKTINFO message.
const errOOBSize = 256

// errMsg is one error-queue message as read: the quoted bytes, the control
// messages and the destination of the datagram that drew it.
type errMsg struct {
	buf     [quoteLen]byte
	oob     [errOOBSize]byte
	n, oobn int
	to      netip.AddrPort
}

// errDrain reads the socket's error queue. One drain runs at a time; a
// drain asked for while another runs leaves it to that one, which goes
// round again.
type errDrain struct {
	mu    sync.Mutex
	again atomic.Bool // a drain was asked for since the running one began
	// control runs f with the socket's descriptor (RawConn.Control); recv
	// reads up to len(msgs) messages off the queue on fd without waiting
	// and returns how many, fewer when it emptied the queue. They are the
	// seams the tests fake.
	control func(f func(fd uintptr)) error
	recv    func(fd uintptr, msgs []errMsg) int
	ctl     func(fd uintptr) // d.readAll, bound once: Control allocates nothing
	cur     drainCall        // the running drain's, under mu
	msgs    [errBatch]errMsg
	probes  probeLog
	// numbered holds answers quoting one of our probes, bare the rest:
	// a flood of header-only forgeries never pushes a numbered answer out.
	numbered, bare answerQueue
	// base is the zero of last and lastProbe, a monotonic reading.
	base            time.Time
	last, lastProbe atomic.Int64 // when a drain last began, a probe last left; ns since base
	probing         atomic.Bool  // a probe has left
	// read counts error-queue messages read, garbled those that did not
	// parse, forged those quoting a probe number none of ours had (all
	// dropped), drains the drains run.
	read, garbled, forged, drains atomic.Uint64
}

// drainCall is one drain's clock, epoch and count.
type drainCall struct {
	now   time.Time
	epoch *time.Time
	n     int
}

func newErrDrain(control func(func(fd uintptr)) error, recv func(fd uintptr, msgs []errMsg) int) *errDrain {
	d := &errDrain{control: control, recv: recv, base: time.Now()}
	d.ctl = d.readAll
	return d
}

// drain reads the queue through control, now being the clock. It returns
// how many messages it read and whether another drain held the queue, to
// which it left the work.
func (d *errDrain) drain(now time.Time, epoch *time.Time) (n int, contended bool) {
	return d.run(0, false, now, epoch)
}

// drainFD is drain from inside a RawConn callback, with its descriptor.
func (d *errDrain) drainFD(fd uintptr, now time.Time, epoch *time.Time) (n int, contended bool) {
	return d.run(fd, true, now, epoch)
}

func (d *errDrain) run(fd uintptr, haveFD bool, now time.Time, epoch *time.Time) (n int, contended bool) {
	d.again.Store(true)
	for n < maxDrain && d.again.Load() {
		if !d.mu.TryLock() {
			// The drain running now sees again once it is done.
			return n, true
		}
		d.again.Store(false)
		d.last.Store(int64(now.Sub(d.base)))
		d.drains.Add(1)
		d.cur = drainCall{now: now, epoch: epoch, n: n}
		if haveFD {
			d.readAll(fd)
		} else if d.control(d.ctl) != nil {
			d.mu.Unlock()
			return n, false // the socket is closed
		}
		n = d.cur.n
		d.mu.Unlock()
	}
	return n, false
}

// readAll reads the queue until it is empty or the drain's bound.
func (d *errDrain) readAll(fd uintptr) {
	c := &d.cur
	for c.n < maxDrain {
		want := min(errBatch, maxDrain-c.n)
		k := d.recv(fd, d.msgs[:want])
		for i := range k {
			d.take(&d.msgs[i], c.now, c.epoch)
		}
		c.n += k
		if k < want {
			return // emptied
		}
	}
}

// take parses one message and queues the answer for the Endpoint.
// Answers drawn by game traffic, and quotes of probes this socket never
// sent, are dropped.
func (d *errDrain) take(m *errMsg, now time.Time, epoch *time.Time) {
	d.read.Add(1)
	a, err := trace.ParseErrQueue(m.oob[:m.oobn])
	if err != nil {
		d.garbled.Add(1)
		return
	}
	a.Probe, a.Quote = quoteOf(m.buf[:min(m.n, len(m.buf))])
	to := netip.AddrPortFrom(m.to.Addr().Unmap(), m.to.Port())
	switch a.Quote {
	case trace.QuoteOther:
		return // drawn by game traffic (a peer that left): no probe's answer
	case trace.QuoteProbe:
		if !d.probes.sent(to, a.Probe) {
			d.forged.Add(1)
			return
		}
	}
	ha := HopAnswer{To: to, Answer: a}
	if epoch != nil {
		ha.At = answerAt(now, a.Stamp).Sub(*epoch)
	}
	if a.Quote == trace.QuoteProbe {
		d.numbered.push(ha)
	} else {
		d.bare.push(ha)
	}
}

// answerAt is when an answer arrived: the kernel's stamp k (wall clock)
// moved onto now's monotonic reading, or now when there is none or it is
// not believable.
func answerAt(now, k time.Time) time.Time {
	if k.IsZero() {
		return now
	}
	wait := now.Sub(k) // k has no monotonic reading: wall clock against wall clock
	if wait < 0 || wait > answerMaxWait {
		return now
	}
	return now.Add(-wait)
}

// due says whether a drain is due at now when nothing reported one: every
// errBackstop, and every probeDrainEvery while a probe may await its
// answer.
func (d *errDrain) due(now time.Time) bool {
	at := int64(now.Sub(d.base))
	gap := at - d.last.Load()
	if gap >= int64(errBackstop) {
		return true
	}
	return gap >= int64(probeDrainEvery) && d.probing.Load() && at-d.lastProbe.Load() < int64(probeAwait)
}

// probeLogLen is how many probes the log remembers: more than the tracer
// sends within probeAwait at its 20 a second.
const probeLogLen = 64

// probeLog remembers the probes the socket sent lately, so that an answer
// quoting a probe number none of them had — a forger's guess — is dropped
// before it can push a true answer out of the queue.
type probeLog struct {
	mu   sync.Mutex
	p    [probeLogLen]sentProbe
	next int
}

type sentProbe struct {
	to  netip.AddrPort
	num uint32
	ttl uint8
}

func (l *probeLog) add(to netip.AddrPort, p trace.Probe) {
	l.mu.Lock()
	l.p[l.next] = sentProbe{to: to, num: p.Num, ttl: p.TTL}
	l.next = (l.next + 1) % probeLogLen
	l.mu.Unlock()
}

func (l *probeLog) sent(to netip.AddrPort, p trace.Probe) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.p {
		if s.num == p.Num && s.ttl == p.TTL && s.to == to {
			return true
		}
	}
	return false
}

// SendHopLimit writes one datagram with its own hop limit (HopTransport),
// from the address the peer's datagrams arrive at as Send does. A probe
// record's number is remembered for the drain (probeLog).
func (t *UDPTransport) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	if len(p) > MaxDatagram {
		return ErrTooLarge
	}
	if t.errq == nil {
		return errNoTrace
	}
	if probe, q := quoteOf(p); q == trace.QuoteProbe {
		t.errq.probes.add(netip.AddrPortFrom(to.Addr().Unmap(), to.Port()), probe)
		t.errq.lastProbe.Store(int64(time.Since(t.errq.base)))
		t.errq.probing.Store(true)
	}
	t.hopOOB = t.hopOOB[:0]
	if local, ok := t.replyAddr(to); ok {
		t.hopOOB = appendFrom(t.hopOOB, to, local)
	}
	t.hopOOB = appendHopLimit(t.hopOOB, to, hops)
	return t.sent1(t.write(p, t.hopOOB, to))
}

// sent1 counts one datagram's send: an ENOBUFS is a datagram the kernel
// dropped (a full queue), lost like any other and not an error of the link.
func (t *UDPTransport) sent1(err error) error {
	switch {
	case err == nil:
		t.sent.Add(1)
	case isDropped(err):
		t.dropped.Add(1)
		return nil
	default:
		t.sendErrors.Add(1)
	}
	return err
}

// HopAnswers appends the ICMP answers read since the last call, those
// quoting a probe first; it drains the queue first when a drain is due
// (errDrain.due).
func (t *UDPTransport) HopAnswers(dst []HopAnswer) []HopAnswer {
	d := t.errq
	if d == nil {
		return dst
	}
	if now := time.Now(); d.due(now) {
		d.drain(now, t.epoch.Load())
	}
	dst = d.numbered.take(dst)
	return d.bare.take(dst)
}

// TraceUnavailable is "" when the socket traces, else why not.
func (t *UDPTransport) TraceUnavailable() string {
	if t.errq == nil {
		return noTraceWhy
	}
	return ""
}

// drainErrors drains the error queue, if the socket has one: a read
// reported an entry.
func (t *UDPTransport) drainErrors(now time.Time) {
	if t.errq != nil {
		t.errq.drain(now, t.epoch.Load())
	}
}

// backstop drains the error queue when a drain is due though nothing
// reported one (errDrain.due); now is the reader's clock after a read.
func (t *UDPTransport) backstop(now time.Time) {
	if t.errq != nil && t.errq.due(now) {
		t.errq.drain(now, t.epoch.Load())
	}
}

// queuedRead is the drain a read or a batched send runs, with the socket's
// descriptor, when it fails with a queued error (udp_batch_linux.go); nil
// without an error queue.
func (t *UDPTransport) queuedRead() func(fd uintptr) (int, bool) {
	if t.errq == nil {
		return nil
	}
	return func(fd uintptr) (int, bool) { return t.errq.drainFD(fd, time.Now(), t.epoch.Load()) }
}
