package netcore

import (
	"crypto/cipher"
	"math"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/internal/minheap"
	"github.com/lagscope/lagscope/internal/tokenbucket"
)

// sendWindow is how many datagrams an acked channel (reliable, global) may
// have in flight on one link. Messages beyond it wait in a backlog, in
// order; nothing is dropped (T11). The receiver's reorder buffer has the
// same depth, so a conforming sender never sends past it.
const sendWindow = 256

// maxBacklog bounds the bytes of messages waiting for room in one
// channel's send window. Send refuses (errBacklog) rather than grow without
// limit towards a peer that has stopped answering; what was accepted is
// still never dropped.
const maxBacklog = 16 << 20

// outPacket is one datagram in flight on an acked channel.
type outPacket struct {
	inUse     bool
	packet    uint32
	msg       uint32 // the message this packet carries (a piece of)
	retries   uint32
	epoch     uint32        // measurement epoch at first send (T5)
	firstSent time.Duration // round trips are measured from here (T4)
	firstRTO  time.Duration // retry timeout in force at first send (T8, T12)
	wait      time.Duration // current gap between retries (T8)
	nextRetry time.Duration
	body      []byte // plaintext body; its memory is reused by later packets in the slot
}

// pendingMsg is a message accepted by Send that is waiting for room in
// the send window.
type pendingMsg struct {
	msgID uint32
	data  []byte
	off   int // bytes already cut into fragments
}

// maxSpare is how many datagram bodies a queue keeps for reuse once their
// packets are acked (or delivered, for early arrivals). A link holds the
// bodies of what is in flight plus these, not one per slot it ever used:
// with 64 players a machine has 63 links and the machines 4032 between
// them, and bodies kept in all 256 slots of every queue would grow the
// heap for as long as the slots were being visited.
const maxSpare = 32

// outQueue is the sending half of an acked channel.
type outQueue struct {
	// slots is the window's ring, grown by need up to sendWindow (grow):
	// a queue never used (the global channel of a simulated game, which
	// has no lobby) costs nothing, one with a few packets in flight little.
	slots        []outPacket
	spare        [][]byte // bodies of acked packets, for claim to reuse
	next         uint32   // next packet number to assign
	oldest       uint32   // lowest packet number that may still be in flight
	nextMsg      uint32
	backlog      []pendingMsg
	backlogBytes int
}

func (q *outQueue) inFlight() int { return int(q.next - q.oldest) }

func (q *outQueue) room() bool { return q.next-q.oldest < sendWindow }

// lookup returns the in-flight packet with number s, or nil.
func (q *outQueue) lookup(s uint32) *outPacket {
	if s-q.oldest >= q.next-q.oldest {
		return nil
	}
	p := q.at(s)
	if !p.inUse || p.packet != s {
		return nil
	}
	return p
}

// advance moves oldest past packets that are no longer in flight, keeping
// their bodies for reuse.
func (q *outQueue) advance() {
	for q.oldest != q.next && !q.at(q.oldest).inUse {
		p := q.at(q.oldest)
		q.spare = keepSpare(q.spare, p.body)
		p.body = nil
		q.oldest++
	}
}

// at is the slot of packet s. The ring's length is a power of two and at
// least the packets in flight, so no two of them share a slot.
func (q *outQueue) at(s uint32) *outPacket { return &q.slots[s&uint32(len(q.slots)-1)] }

// claim takes the slot for the next packet; the caller checked room().
func (q *outQueue) claim() *outPacket {
	if q.next-q.oldest == uint32(len(q.slots)) {
		q.grow()
	}
	p := q.at(q.next)
	p.inUse, p.packet, p.retries = true, q.next, 0
	if p.body == nil {
		p.body, q.spare = takeSpare(q.spare)
	}
	p.body = p.body[:0]
	q.next++
	return p
}

// minSlots is the ring a queue starts with on its first packet. It doubles
// when that many are in flight, up to sendWindow: with 64 players a
// machine has 63 links and two acked queues on each, and every ring made
// sendWindow long at once was half the heap of a 64-player demo (88 MB of
// 182), where a link on a LAN has a handful in flight.
const minSlots = 8

// grow doubles the ring (or makes the first one), moving the packets in
// flight to their slots in the longer ring.
func (q *outQueue) grow() {
	n := max(2*len(q.slots), minSlots)
	slots := make([]outPacket, n)
	for s := q.oldest; s != q.next; s++ {
		slots[s&uint32(n-1)] = *q.at(s)
	}
	// Slots outside [oldest, next) hold no body (advance took it), so
	// nothing else is left behind.
	q.slots = slots
}

// keepSpare adds body to spare, unless spare is full (body then goes back
// to the runtime).
func keepSpare(spare [][]byte, body []byte) [][]byte {
	if body == nil || len(spare) >= maxSpare {
		return spare
	}
	if spare == nil {
		spare = make([][]byte, 0, maxSpare)
	}
	return append(spare, body[:0])
}

// takeSpare takes a body from spare, or nil (append allocates one).
func takeSpare(spare [][]byte) ([]byte, [][]byte) {
	if len(spare) == 0 {
		return nil, spare
	}
	b := spare[len(spare)-1]
	spare[len(spare)-1] = nil
	return b, spare[:len(spare)-1]
}

// inOrder is the receiving half of the reliable channel: a reorder buffer
// that delivers datagrams in sequence, and the reassembly of in-order
// fragments.
type inOrder struct {
	next uint32 // next packet to deliver; everything before arrived
	have [sendWindow]bool
	// slots hold bodies that arrived early, sendWindow long from the
	// first one (a link that never lost a packet has none); spare keeps
	// delivered ones' memory for reuse.
	slots [][]byte
	spare [][]byte

	// Fragment reassembly: fragments of one message arrive consecutively.
	asmID    uint32
	asmNext  uint16 // next fragment index expected; 0 = none pending
	asmCount uint16
	asm      []byte
}

// inSet is the receiving half of the global channel: which packets
// arrived, for exactly-once delivery without order. A sender keeps at most
// sendWindow packets in flight, so a resent packet is never more than
// sendWindow below the newest one; twice that is remembered.
//
// Packet numbers are believed as far as the datagram that carries them:
// its datagram number was within MaxJump of the loss window's newest
// (loss.go), or it would not get here. Ahead, the set moves on (a sender
// gives global packets up at the global timeout, so after a long outage
// its numbers really have moved). More than MaxJump behind, which no
// conforming sender does, the set starts over there: the packet that put
// it ahead was forged, and the peer's real packets must not all look far
// too old to deliver.
type inSet struct {
	started bool
	highest uint32
	bits    [2 * sendWindow / 64]uint64
}

const inSetBits = 2 * sendWindow

// add records seq and reports whether it is new.
func (s *inSet) add(seq uint32) bool {
	if s.started && int32(seq-s.highest) < -MaxJump {
		*s = inSet{}
	}
	if !s.started {
		s.started, s.highest = true, seq
		s.set(seq)
		return true
	}
	d := int32(seq - s.highest)
	if d > 0 {
		if d >= inSetBits {
			s.bits = [inSetBits / 64]uint64{}
		} else {
			for x := s.highest + 1; x != seq; x++ {
				s.clear(x)
			}
		}
		s.highest = seq
		s.set(seq)
		return true
	}
	if -d >= inSetBits {
		return false // far too old: a conforming sender gave up on it long ago
	}
	if s.isSet(seq) {
		return false
	}
	s.set(seq)
	return true
}

func (s *inSet) set(x uint32)        { i := x % inSetBits; s.bits[i/64] |= 1 << (i % 64) }
func (s *inSet) clear(x uint32)      { i := x % inSetBits; s.bits[i/64] &^= 1 << (i % 64) }
func (s *inSet) isSet(x uint32) bool { i := x % inSetBits; return s.bits[i/64]&(1<<(i%64)) != 0 }

// latest is the receiving half of the unreliable channel: only messages
// newer than the last one delivered are delivered (Q1).
type latest struct {
	delivered bool
	last      uint32 // newest message id delivered
}

// newer reports whether message id is newer than the last delivered — or
// more than MaxJump behind it: ids never go back, so that last one was
// forged, and the datagram at hand, whose number the loss window took as
// new, is believed instead.
func (u *latest) newer(id uint32) bool {
	d := int32(id - u.last)
	return !u.delivered || d > 0 || d < -MaxJump
}

// link is one private connection to one peer (T1).
type link struct {
	peer   PeerID
	addr   netip.AddrPort
	closed bool // removed while a callback ran

	est   Estimator
	acked ackAges // the latest acks' times from first send, clean or not

	probeReplies tokenbucket.Bucket // answers to the peer's probes (trace_link.go)

	rel, glob outQueue            // acked channels
	txSeq     [numChannels]uint32 // next datagram number per numbered channel (L2)
	unrelMsg  uint32              // next unreliable message id

	relIn             inOrder
	globIn            inSet
	unrelIn           latest
	unrelAsm, globAsm reassembler

	windows [numChannels]recvWindow // loss windows per numbered channel (L2)

	loss     Loss
	peerLoss PeerLoss
	global   GlobalStats

	bad   bool       // something unanswered outlived the connection timeout (T11)
	alive keepAlives // unnumbered keep-alives (keepalive.go)

	// due is when Tick next has work on this link (deadline), valid while
	// stale is false: the link's node in Endpoint.byDue, keyed by it.
	due   minheap.Node[*link]
	stale bool

	// With sealing (seal.go): the peer's public key, the pair's secret,
	// the key this machine seals with and the peer's opener.
	pub    PublicKey
	secret *pairSecret
	seal   cipher.AEAD
	open   *opener
}

// GlobalStats counts the global channel's outbound datagrams (T14). They
// are kept apart from Loss.Sent/Retransmitted: the global channel retries
// on a fixed interval that says nothing about the link's round trip (L8).
type GlobalStats struct {
	Sent, Retransmitted, Dropped uint64
}

func (g *GlobalStats) add(o GlobalStats) {
	g.Sent += o.Sent
	g.Retransmitted += o.Retransmitted
	g.Dropped += o.Dropped
}

// dueHeap holds the links by deadline (a link without one sorts last),
// each link knowing its place (its due node) so that a changed deadline
// moves it in O(log links).
type dueHeap struct{ h minheap.Heap[*link] }

// noDeadline keys a link that has no deadline after every deadline: a
// deadline's key has Seq 0, this one 1.
var noDeadline = minheap.Key{At: math.MaxInt64, Seq: 1}

// deadline is when Tick next has work on l; ok is false when never.
func (l *link) deadline() (at time.Duration, ok bool) {
	return l.due.Key.At, l.due.Key.Seq == 0
}

// dueBy reports whether l has work due at or before now.
func (l *link) dueBy(now time.Duration) bool {
	at, ok := l.deadline()
	return ok && at <= now
}

// push adds l, without a deadline until its first fix.
func (d *dueHeap) push(l *link) {
	l.due = minheap.Node[*link]{Key: noDeadline, Val: l}
	d.h.Push(&l.due)
}

func (d *dueHeap) remove(l *link) { d.h.Remove(&l.due) }

// fix sets l's deadline (ok false: none) and moves l to its place.
func (d *dueHeap) fix(l *link, at time.Duration, ok bool) {
	if ok {
		l.due.Key = minheap.Key{At: at}
	} else {
		l.due.Key = noDeadline
	}
	d.h.Fix(&l.due)
}

// top is the link with the earliest deadline.
func (d *dueHeap) top() (*link, bool) {
	if n := d.h.Top(); n != nil {
		return n.Val, true
	}
	return nil, false
}
