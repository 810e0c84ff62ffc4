package netcore

import "math/bits"

// LossWindow is the depth of the receive window (L2): the 32 sequences
// below the newest one arrived. A sequence is judged only when it falls out
// of the window, so the newest 33 sequences are in neither total.
const LossWindow = 32

// Loss is a link's (or the endpoint's) four cumulative totals (L1). All are
// datagrams: every fragment counts.
type Loss struct {
	// Sent counts reliable-channel datagrams put on the wire, first sends
	// and resends alike; Retransmitted counts the resends among them.
	// Retransmitted/Sent is inferred outbound loss and reads high (L8).
	Sent, Retransmitted uint64
	// Expected counts inbound numbered datagrams judged on leaving the
	// window, on every numbered channel; Missing those of them that never
	// arrived. Missing/Expected is observed inbound loss (L2).
	Expected, Missing uint64
}

func (l *Loss) add(o Loss) {
	l.Sent += o.Sent
	l.Retransmitted += o.Retransmitted
	l.Expected += o.Expected
	l.Missing += o.Missing
}

// PeerLoss is the peer's own inbound totals for this link as it last
// reported them (L4): observed loss on our outbound path. Known is false
// until a first LinkReport arrives — unknown is not zero (L3).
type PeerLoss struct {
	Expected, Missing uint64
	Known             bool
}

// observe keeps the high-water mark: reports travel unreliable and may
// arrive out of order, and the totals are cumulative for the life of the
// link, so the largest seen is the true one (L4).
func (p *PeerLoss) observe(expected, missing uint64) {
	p.Expected = max(p.Expected, expected)
	p.Missing = max(p.Missing, missing)
	p.Known = true
}

func (p *PeerLoss) add(o PeerLoss) {
	if !o.Known {
		return
	}
	p.Expected += o.Expected
	p.Missing += o.Missing
	p.Known = true
}

// recvWindow is one numbered channel's receive window (L2). It judges a
// sequence when it falls more than LossWindow below the newest arrival.
//
// Per datagram it costs a few integer operations and at most one PopCount
// and never allocates (L6).
type recvWindow struct {
	started bool
	highest uint32 // newest sequence that arrived
	// mask bit i is set when sequence highest-1-i arrived.
	mask uint32
	// span is how many of mask's slots hold sequences at or after the
	// first arrival (≤ 32): slots below it were never numbered for us and
	// are judged neither way (L2: nothing before the first arrival counts).
	span int
}

// windowResult says what an arriving sequence is to the window.
type windowResult uint8

const (
	seqNew       windowResult = iota // first time seen (newest or late inside the window)
	seqDuplicate                     // seen before; counts once (L2)
	seqStale                         // older than the window or than the first arrival: already judged or never counted
)

// observe records an arrival and adds judged sequences to loss.
func (w *recvWindow) observe(seq uint32, loss *Loss) windowResult {
	if !w.started {
		w.started, w.highest, w.mask, w.span = true, seq, 0, 0
		return seqNew
	}
	d := int64(int32(seq - w.highest))
	switch {
	case d > 0:
		// Shift by d: mask slots at i ≥ 32-d leave the window, and so
		// does the old highest when d > 32, and the sequences between
		// it and the new window, none of which arrived.
		var leaving uint32
		validLeaving := 0
		if d < LossWindow {
			leaving = ^uint32(0) << (LossWindow - d)
			validLeaving = max(0, w.span-(LossWindow-int(d)))
		} else {
			leaving = ^uint32(0)
			validLeaving = w.span
		}
		got := bits.OnesCount32(w.mask & leaving)
		expected := uint64(validLeaving)
		missing := uint64(validLeaving - got)
		if d > LossWindow {
			expected++ // the old highest: it arrived
			gap := uint64(d - LossWindow - 1)
			expected += gap
			missing += gap
		}
		loss.Expected += expected
		loss.Missing += missing
		if d <= LossWindow {
			w.mask = w.mask<<d | 1<<(d-1)
		} else {
			w.mask = 0
		}
		w.span = min(w.span+int(d), LossWindow)
		w.highest = seq
		return seqNew
	case d == 0:
		return seqDuplicate
	default:
		i := -d - 1
		if i >= int64(w.span) {
			return seqStale
		}
		bit := uint32(1) << i
		if w.mask&bit != 0 {
			return seqDuplicate
		}
		w.mask |= bit
		return seqNew
	}
}
