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
// back on the socket's error queue (IP_RECVERR, IPV6_RECVERR), which the
// goroutine that reads the socket drains after every read and whenever a
// read fails with an ICMP error. The parsing is trace's and the quote's
// header netcore's (quoteOf); what is read waits in a bounded queue for the
// Endpoint, which takes it on its next Tick.

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

// answerQueueLen bounds the answers waiting for the Endpoint: at the
// tracer's 20 probes a second that is seconds of answers, with room for
// ICMP errors the tracer cannot tell from its own; when it is full (nobody
// takes them: no trace runs) the oldest goes.
const answerQueueLen = 256

// answerQueue hands answers from the reading goroutine to the Endpoint's.
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

// maxDrain bounds one drain: a queue refilled as fast as it is read (a
// flood of ICMP) must not keep the reader from the datagrams.
const maxDrain = 256

// quoteLen is how much of a quote is read: a probe's header and record.
// The rest of a longer quote is cut off by the kernel (MSG_TRUNC).
const quoteLen = HeaderLen + trace.ProbeLen

// errDrain reads the socket's error queue. recv is the seam: one message
// into buf and oob, its destination, false when the queue is empty.
type errDrain struct {
	recv    func(buf, oob []byte) (n, oobn int, to netip.AddrPort, ok bool)
	buf     [quoteLen]byte
	oob     [errOOBSize]byte
	answers answerQueue
	// read counts error-queue messages read; garbled those that did not
	// parse (not ICMP answers: dropped).
	read, garbled atomic.Uint64
}

// errOOBSize holds an IP_RECVERR message (sock_extended_err and a
// sockaddr_in6 after a 16-byte header), a timestamp and a PKTINFO message.
const errOOBSize = 256

// drain reads the error queue until it is empty, or maxDrain messages.
// read is the reader's clock just after the read that preceded it, the
// time of an answer the kernel did not stamp; epoch is the driver's zero
// (nil: answers have no At).
func (d *errDrain) drain(read time.Time, epoch *time.Time) int {
	for i := range maxDrain {
		n, oobn, to, ok := d.recv(d.buf[:], d.oob[:])
		if !ok {
			return i
		}
		d.read.Add(1)
		a, err := trace.ParseErrQueue(d.oob[:oobn])
		if err != nil {
			d.garbled.Add(1)
			continue
		}
		a.Probe, a.Quote = quoteOf(d.buf[:min(n, len(d.buf))])
		if a.Quote == trace.QuoteOther {
			continue // drawn by game traffic (a peer that left): no probe's answer
		}
		ha := HopAnswer{To: netip.AddrPortFrom(to.Addr().Unmap(), to.Port()), Answer: a}
		if epoch != nil {
			at := read
			if !a.Stamp.IsZero() {
				at = arrivedAt(read, a.Stamp)
			}
			ha.At = at.Sub(*epoch)
		}
		d.answers.push(ha)
	}
	return maxDrain
}

// SendHopLimit writes one datagram with its own hop limit (HopTransport),
// from the address the peer's datagrams arrive at as Send does.
func (t *UDPTransport) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	if len(p) > MaxDatagram {
		return ErrTooLarge
	}
	if t.errq == nil {
		return errNoTrace
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

// HopAnswers appends the ICMP answers read since the last call.
func (t *UDPTransport) HopAnswers(dst []HopAnswer) []HopAnswer {
	if t.errq == nil {
		return dst
	}
	return t.errq.answers.take(dst)
}

// TraceUnavailable is "" when the socket traces, else why not.
func (t *UDPTransport) TraceUnavailable() string {
	if t.errq == nil {
		return noTraceWhy
	}
	return ""
}

// drainErrors drains the error queue, if the socket has one, after a read.
func (t *UDPTransport) drainErrors(read time.Time) {
	if t.errq != nil {
		t.errq.drain(read, t.epoch.Load())
	}
}
