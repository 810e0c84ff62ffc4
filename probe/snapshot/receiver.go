package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Receiver applies one sender's updates (Q2–Q4). It keeps the snapshots it
// has acked in a small ring of its own, so it can apply a delta against
// any base the sender may still use, and reports the newest as its ack.
//
// A Receiver belongs to one life of one Sender's stream: when the sender
// starts over (Sender.Forget, a restarted peer), make a new Receiver.
// Not safe for concurrent use.
type Receiver[S any] struct {
	table *fieldTable[S]
	zero  []uint32         // the table's, shared: never written
	seq   [recvKeep]uint32 // the sequence each slot holds, 0 for none
	slots                  // what it got, each as wide as it needs (sender.go)
	// scratch is the update being decoded, base the snapshot it is
	// against: full length.
	scratch, base []uint32
	newest        uint32
	cur           int  // the slot of newest
	acked         bool // newest has been handed out by Ack
	state         S
	// stale: the newest snapshot is not in state yet. Apply leaves it
	// to State, so a machine that takes in 63 updates between two looks
	// at its matrix builds each state once, not 63 times.
	stale bool
}

// recvKeep is how many snapshots a receiver keeps. A sender's base is a
// snapshot this receiver acked — Ack's value, carried back — never one it
// only held, so the receiver keeps the newest it holds and the latest
// ones it acked: with one ack on each of its own updates (a send period,
// 100 ms at least), eight cover the round trip of any link a game runs
// on. An update against an older base is dropped (ErrNoBase) and the next
// one, sent once the sender has a later ack, finds its base (Q4). The
// sender's ring of 32 (Q2) is what it may encode against; keeping 32 here
// too held 32 copies of a 63-link state for each of 63 senders, 44 % of a
// 64-player machine's heap.
const recvKeep = 8

// newReceiver returns a receiver for states described by table, holding
// nothing yet.
func newReceiver[S any](table *fieldTable[S]) *Receiver[S] {
	n := table.numFields()
	return &Receiver[S]{table: table, zero: table.zero, scratch: make([]uint32, n), base: make([]uint32, n),
		slots: slots{count: recvKeep}}
}

// find is the slot holding seq, or -1.
func (r *Receiver[S]) find(seq uint32) int {
	for i, s := range r.seq {
		if s == seq {
			return i
		}
	}
	return -1
}

// held is the snapshot in slot i as kept: its used prefix, zero past the
// end, read in place (decode takes it so).
func (r *Receiver[S]) held(i int) []uint32 {
	return r.vals[i*r.width : (i+1)*r.width]
}

// nextSlot is where a newer snapshot goes: the newest's own slot while it
// has not been acked (no sender can use it as a base), else the slot of
// the oldest (or an empty one).
func (r *Receiver[S]) nextSlot() int {
	if r.newest != 0 && !r.acked {
		return r.cur
	}
	k := 0
	for i, s := range r.seq {
		if s < r.seq[k] {
			k = i
		}
	}
	return k
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
		i := r.find(seq - back)
		if i < 0 {
			return false, ErrNoBase
		}
		base = r.held(i)
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
	// Keep it: over the newest if that was never acked, else over the
	// oldest kept (nextSlot).
	i := r.nextSlot()
	r.put(i, r.scratch)
	r.seq[i] = seq
	r.newest, r.cur, r.acked = seq, i, false
	r.stale = true
	return true, nil
}

// Ack is the newest sequence held, 0 for none: the value to piggyback on
// traffic to the sender, which passes it to Sender.Acked. From here on
// the receiver keeps that snapshot as a base the sender may use.
func (r *Receiver[S]) Ack() uint32 {
	r.acked = r.newest != 0
	return r.newest
}

// State returns the current state and whether any update has arrived.
// The pointer stays valid and is overwritten by later updates.
func (r *Receiver[S]) State() (*S, bool) {
	if r.stale {
		r.table.store(r.get(r.cur, r.base), &r.state)
		r.stale = false
	}
	return &r.state, r.newest != 0
}
