package snapshot

import (
	"encoding/binary"
	"errors"
	"slices"
)

// ringLen is how many snapshots a sender keeps per receiver and a receiver
// keeps of what it got (Q2: "the last 32"). A delta's base is therefore at
// most ringLen−1 updates older than the update itself.
const ringLen = 32

// HeaderLen is the update header: the update's own sequence number
// (uint32, little-endian, from 1) and how far back its base is (one byte:
// 0 for the all-zero baseline, else 1..31 updates back).
const HeaderLen = 5

// Sender encodes one machine's state for each of its receivers as the
// delta against what that receiver last acked (Q2, Q4). It holds no clock
// and does no I/O: the caller sends the bytes on an unreliable channel (Q1)
// and hands back the acks that ride on traffic flowing anyway.
//
// The zero value is not usable; build one with newSender. Not safe for
// concurrent use.
type Sender[S any] struct {
	table     *fieldTable[S]
	zero      []uint32 // the all-zero baseline
	cur, base []uint32 // Set's and Next's scratch: the state and its base, full length
	rings     map[int]*sendRing
	// hist holds the states sent, once each, whichever receivers they
	// went to: a machine sends the same state to every receiver at once,
	// so 63 receivers' rings would hold 63 copies of each. Version
	// v is in slot v % histLen while histVer says so.
	hist    slots
	histVer [histLen]uint32
	ver     uint32 // newest version, 0 for none

	// The payloads of the newest version, one per base it was written
	// against: receivers that acked the same snapshot — most of them, on
	// a steady LAN — get the same bytes, so a state goes to 63 receivers
	// in a handful of encodes, not 63. Only the header (the
	// receiver's own sequence and how far back its base is) differs.
	memoVer uint32
	memo    []memoPayload
	memoBuf []byte
}

// memoPayload is the newest version's payload against base version base
// (0: the all-zero baseline), at memoBuf[from:to].
type memoPayload struct {
	base     uint32
	from, to int
}

// histLen is how many distinct states the sender keeps: a receiver's
// ring, so a sender with one receiver (the demo's machines) holds no more
// than before. A receiver that was not sent every state may find its base
// gone a little sooner, and gets a full update then (Q2).
const histLen = ringLen

// sendRing is what one receiver has been sent: the version of the state
// each of its sequences carried.
type sendRing struct {
	seq   [ringLen]uint32 // sequence held in each slot, 0 for none
	ver   [ringLen]uint32 // the state's version (Sender.hist) in each slot
	last  uint32          // newest sequence sent
	acked uint32          // newest sequence the receiver said it holds
}

// slots are value vectors kept only as wide as they need to be.
// Fields come in table order and a telemetry state's unused links are
// zero at the end of it, so a vector is held to its used prefix and read
// back zero-extended: a ring sized for MaxLinks links whatever the session
// would hold 132 KB per sender and receiver pair, a gigabyte for 64
// machines that all stream to all. The bytes on the wire do not change.
type slots struct {
	count int      // vectors held; 0 for ringLen
	width int      // fields held per vector; the rest are zero
	vals  []uint32 // count vectors of width back to back
}

// put stores v (full length) in slot i, widening every slot when v has a
// non-zero field past the width.
func (s *slots) put(i int, v []uint32) {
	used := len(v)
	for used > 0 && v[used-1] == 0 {
		used--
	}
	if used > s.width || s.vals == nil {
		if s.count == 0 {
			s.count = ringLen
		}
		w := min(len(v), max(used, 2*s.width, 16))
		vals := make([]uint32, s.count*w)
		for k := range s.count {
			copy(vals[k*w:], s.vals[k*s.width:(k+1)*s.width])
		}
		s.vals, s.width = vals, w
	}
	copy(s.vals[i*s.width:(i+1)*s.width], v)
}

// equal reports whether slot i holds v (full length).
func (s *slots) equal(i int, v []uint32) bool {
	if s.width == 0 {
		return false
	}
	held := s.vals[i*s.width : (i+1)*s.width]
	if !slices.Equal(held, v[:s.width]) {
		return false
	}
	for _, x := range v[s.width:] {
		if x != 0 {
			return false
		}
	}
	return true
}

// get writes slot i into v (full length) and returns v.
func (s *slots) get(i int, v []uint32) []uint32 {
	copy(v, s.vals[i*s.width:(i+1)*s.width])
	clear(v[s.width:])
	return v
}

// newSender returns a sender for states described by table.
func newSender[S any](table *fieldTable[S]) *Sender[S] {
	n := table.numFields()
	return &Sender[S]{table: table, zero: make([]uint32, n), cur: make([]uint32, n), base: make([]uint32, n),
		rings: make(map[int]*sendRing), hist: slots{count: histLen}}
}

func (s *Sender[S]) ring(receiver int) *sendRing {
	r := s.rings[receiver]
	if r == nil {
		r = &sendRing{}
		s.rings[receiver] = r
	}
	return r
}

// Set makes state the one the following Next calls send, until the next
// Set. The state is read at once; changing it afterwards changes nothing.
func (s *Sender[S]) Set(state *S) {
	cur := s.cur
	s.table.load(state, cur)
	if s.ver == 0 || !s.hist.equal(int(s.ver%histLen), cur) {
		s.ver++
		s.hist.put(int(s.ver%histLen), cur)
		s.histVer[s.ver%histLen] = s.ver
	}
}

// Next appends to dst the next update for receiver of the state given to
// the last Set and returns the extended slice. The state is written as a
// delta against the newest snapshot the receiver acked, or against the
// all-zero baseline — a full update — when it has acked none or that
// snapshot has left the ring (Q2). Because the base is the last acked
// snapshot, whatever earlier updates were lost travels again inside this
// one (Q4). Values above a field's Max are sent as Max. A machine that
// sends one state to many receivers calls Set once and Next for each.
// Next before any Set is a mistake and panics.
func (s *Sender[S]) Next(dst []byte, receiver int) []byte {
	if s.ver == 0 {
		panic("snapshot: Sender.Next before Set")
	}
	r := s.ring(receiver)
	seq := r.last + 1
	baseVer, back := uint32(0), uint32(0)
	if r.acked != 0 && seq-r.acked < ringLen && r.seq[r.acked%ringLen] == r.acked {
		if v := r.ver[r.acked%ringLen]; s.histVer[v%histLen] == v {
			baseVer, back = v, seq-r.acked
		}
	}
	r.ver[seq%ringLen] = s.ver
	r.seq[seq%ringLen] = seq
	r.last = seq

	dst = binary.LittleEndian.AppendUint32(dst, seq)
	dst = append(dst, byte(back))
	return append(dst, s.payload(baseVer)...)
}

// payload is the newest version written against base version base (0:
// the all-zero baseline), encoded once per base and version.
func (s *Sender[S]) payload(base uint32) []byte {
	if s.memoVer != s.ver {
		s.memoVer, s.memo, s.memoBuf = s.ver, s.memo[:0], s.memoBuf[:0]
	}
	for _, m := range s.memo {
		if m.base == base {
			return s.memoBuf[m.from:m.to]
		}
	}
	bv := s.zero
	if base != 0 {
		bv = s.hist.get(int(base%histLen), s.base)
	}
	from := len(s.memoBuf)
	w := bitWriter{buf: s.memoBuf}
	s.table.encode(&w, bv, s.cur) // Set left the newest version in cur
	s.memoBuf = w.flush()
	s.memo = append(s.memo, memoPayload{base: base, from: from, to: len(s.memoBuf)})
	return s.memoBuf[from:]
}

// Acked records that receiver holds snapshot seq — the value of its
// Receiver.Ack, carried back on whatever the receiver sends anyway. Acks
// may arrive late, twice or out of order: only the newest counts, and one
// for a snapshot never sent is ignored.
func (s *Sender[S]) Acked(receiver int, seq uint32) {
	r := s.rings[receiver]
	if r == nil || seq == 0 || seq > r.last || seq <= r.acked {
		return
	}
	r.acked = seq
}

// Forget drops everything kept for receiver (it left). A later Next for
// the same index starts over from sequence 1 with a full update, so the
// other end needs a new Receiver too.
func (s *Sender[S]) Forget(receiver int) { delete(s.rings, receiver) }

// ErrNoBase is returned for an update whose base snapshot the receiver
// does not hold (it never arrived, or has left the ring). The update is
// dropped; a later one against a base the receiver acked will apply.
var ErrNoBase = errors.New("snapshot: base snapshot not held")
