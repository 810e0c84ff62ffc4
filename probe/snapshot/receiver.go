package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Receiver applies one sender's updates (Q2–Q4). It keeps the snapshots it
// has received in a ring of its own, so it can apply a delta against any
// of them, and reports the newest as its ack.
//
// A Receiver belongs to one life of one Sender's stream: when the sender
// starts over (Sender.Forget, a restarted peer), make a new Receiver.
// Not safe for concurrent use.
type Receiver[S any] struct {
	table *fieldTable[S]
	zero  []uint32
	seq   [ringLen]uint32
	slots // what it got, each as wide as it needs (sender.go)
	// scratch is the update being decoded, base the snapshot it is
	// against: full length.
	scratch, base []uint32
	newest        uint32
	state         S
	// stale: the newest snapshot is not in state yet. Apply leaves it
	// to State, so a machine that takes in 63 updates between two looks
	// at its matrix builds each state once, not 63 times.
	stale bool
}

// newReceiver returns a receiver for states described by table, holding
// nothing yet.
func newReceiver[S any](table *fieldTable[S]) *Receiver[S] {
	n := table.numFields()
	return &Receiver[S]{table: table, zero: make([]uint32, n), scratch: make([]uint32, n), base: make([]uint32, n)}
}

// slot is the snapshot held for seq, full length (in the base scratch).
func (r *Receiver[S]) slot(seq uint32) []uint32 { return r.get(int(seq%ringLen), r.base) }

// held is the snapshot held for seq as kept: its used prefix, zero past
// the end, read in place (decode takes it so).
func (r *Receiver[S]) held(seq uint32) []uint32 {
	i := int(seq % ringLen)
	return r.vals[i*r.width : (i+1)*r.width]
}

// Decode applies one update. It returns the receiver's current state (the
// newest snapshot held; the pointer stays valid and is overwritten by
// later updates) and whether this update made it newer. A late, duplicated
// or reordered update that is not newer than the current one leaves the
// state as it is and reports false. An update whose base is not held
// returns ErrNoBase; malformed bytes return another error. On any error
// nothing changes.
//
// Decode is Apply followed by State; Apply alone takes an update in
// without building the state.
func (r *Receiver[S]) Decode(b []byte) (*S, bool, error) {
	fresh, err := r.Apply(b)
	if err != nil {
		return nil, false, err
	}
	st, _ := r.State()
	return st, fresh, nil
}

// Apply takes one update in as Decode does, and reports whether it made
// the state newer; the state itself is built when State asks for it.
func (r *Receiver[S]) Apply(b []byte) (bool, error) {
	if len(b) < HeaderLen {
		return false, errors.New("snapshot: update shorter than its header")
	}
	seq := binary.LittleEndian.Uint32(b)
	back := uint32(b[4])
	switch {
	case seq == 0:
		return false, errors.New("snapshot: sequence 0")
	case back >= ringLen:
		return false, fmt.Errorf("snapshot: base %d updates back, ring holds %d", back, ringLen)
	case back > seq-1:
		return false, errors.New("snapshot: base before the first update")
	}
	base := r.zero
	if back != 0 {
		bseq := seq - back
		if r.seq[bseq%ringLen] != bseq {
			return false, ErrNoBase
		}
		base = r.held(bseq)
	}
	rd := bitReader{b: b[HeaderLen:]}
	if err := r.table.decode(&rd, base, r.scratch); err != nil {
		return false, err
	}
	if err := rd.done(); err != nil {
		return false, err
	}
	if seq <= r.newest {
		return false, nil
	}
	// Keep it. The slot's previous snapshot is ringLen or more updates older
	// than this one, so no base the sender may still use is lost.
	i := int(seq % ringLen)
	r.put(i, r.scratch)
	r.seq[i] = seq
	r.newest = seq
	r.stale = true
	return true, nil
}

// Ack is the newest sequence held, 0 for none: the value to piggyback on
// traffic to the sender, which passes it to Sender.Acked.
func (r *Receiver[S]) Ack() uint32 { return r.newest }

// State returns the current state and whether any update has arrived.
// The pointer stays valid and is overwritten by later updates.
func (r *Receiver[S]) State() (*S, bool) {
	if r.stale {
		r.table.store(r.slot(r.newest), &r.state)
		r.stale = false
	}
	return &r.state, r.newest != 0
}
