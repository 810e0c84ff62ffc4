package snapshot

import (
	"encoding/binary"
	"errors"
)

// Ring is how many snapshots a sender keeps per receiver and a receiver
// keeps of what it got (Q2: "the last 32"). A delta's base is therefore at
// most Ring−1 updates older than the update itself.
const Ring = 32

// HeaderLen is the update header: the update's own sequence number
// (uint32, little-endian, from 1) and how far back its base is (one byte:
// 0 for the all-zero baseline, else 1..Ring−1 updates back).
const HeaderLen = 5

// Sender encodes one machine's state for each of its receivers as the
// delta against what that receiver last acked (Q2, Q4). It holds no clock
// and does no I/O: the caller sends the bytes on an unreliable channel (Q1)
// and hands back the acks that ride on traffic flowing anyway.
//
// The zero value is not usable; build one with NewSender. Not safe for
// concurrent use.
type Sender[S any] struct {
	table *Table[S]
	zero  []uint32 // the all-zero baseline
	rings map[int]*sendRing
}

// sendRing is what one receiver has been sent.
type sendRing struct {
	seq   [Ring]uint32 // sequence held in each slot, 0 for none
	vals  []uint32     // Ring value vectors back to back
	last  uint32       // newest sequence sent
	acked uint32       // newest sequence the receiver said it holds
}

// NewSender returns a sender for states described by table.
func NewSender[S any](table *Table[S]) *Sender[S] {
	return &Sender[S]{table: table, zero: make([]uint32, table.Fields()), rings: make(map[int]*sendRing)}
}

func (s *Sender[S]) ring(receiver int) *sendRing {
	r := s.rings[receiver]
	if r == nil {
		r = &sendRing{vals: make([]uint32, Ring*s.table.Fields())}
		s.rings[receiver] = r
	}
	return r
}

func (r *sendRing) slot(seq uint32, n int) []uint32 {
	i := int(seq % Ring)
	return r.vals[i*n : (i+1)*n]
}

// Encode appends to dst the next update of state for receiver and returns
// the extended slice. The state is copied into the receiver's next ring
// slot and written as a delta against the newest snapshot the receiver
// acked, or against the all-zero baseline — a full update — when it has
// acked none or that snapshot has left the ring (Q2). Because the base is
// the last acked snapshot, whatever earlier updates were lost travels again
// inside this one (Q4). Values above a field's Max are sent as Max.
func (s *Sender[S]) Encode(dst []byte, receiver int, state *S) []byte {
	r := s.ring(receiver)
	n := s.table.Fields()
	seq := r.last + 1
	base, back := s.zero, uint32(0)
	if r.acked != 0 && seq-r.acked < Ring && r.seq[r.acked%Ring] == r.acked {
		base, back = r.slot(r.acked, n), seq-r.acked
	}
	cur := r.slot(seq, n)
	s.table.load(state, cur)
	r.seq[seq%Ring] = seq
	r.last = seq

	dst = binary.LittleEndian.AppendUint32(dst, seq)
	dst = append(dst, byte(back))
	w := bitWriter{buf: dst}
	s.table.encode(&w, base, cur)
	return w.flush()
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

// Forget drops everything kept for receiver (it left). A later Encode for
// the same index starts over from sequence 1 with a full update, so the
// other end needs a new Receiver too.
func (s *Sender[S]) Forget(receiver int) { delete(s.rings, receiver) }

// ErrNoBase is returned for an update whose base snapshot the receiver
// does not hold (it never arrived, or has left the ring). The update is
// dropped; a later one against a base the receiver acked will apply.
var ErrNoBase = errors.New("snapshot: base snapshot not held")
