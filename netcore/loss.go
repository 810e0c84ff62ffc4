package netcore

import "math/bits"

// lossWindow is the depth of the receive window (L2): the 32 sequences
// below the newest one arrived. A sequence is judged only when it falls out
// of the window, so the newest 33 sequences are in neither total.
const lossWindow = 32

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

// MaxJump is how far from the newest number a link has seen on a channel
// a datagram number (or a global packet number) may be and still be
// believed at once. Anything farther is held back: not delivered, not
// counted, counted instead as RejectCounts.Window.
//
// Without a key, a datagram with the session token from a member's address
// is taken at its word, and one number far ahead would otherwise move a
// loss window there at once: billions judged missing, and every real
// datagram after it older than the window, so unreliable messages would
// stop being delivered. 4096 is far beyond real loss: the engine sends at
// most about a hundred datagrams a second on one channel of one link
// (frame packets at 60 fps, telemetry, fragments), so 4096 lost in a row
// is some forty seconds of total silence, and a blind forger guessing a
// number within it succeeds once in a million tries.
const MaxJump = 4096

// resyncAfter is how many held-back datagrams in a row, each within
// lossWindow of the newest of them, make a window believe them: after a
// genuine outage longer than MaxJump datagrams the peer's numbers really
// have moved on, and they arrive one after another, as a forger's lone
// number does not. The window then moves to them and the gap counts as
// loss (L2), so such an outage costs the resyncAfter-1 datagrams held back
// (a reliable one whose packet is new is believed at once, below). Any
// datagram accepted in between breaks the run: the real peer is still
// where the window is.
const resyncAfter = 4

// jumpGuard collects the numbers a window holds back for being more than
// MaxJump from its newest.
type jumpGuard struct {
	n   int
	run [resyncAfter]uint32 // in arrival order
}

// far reports whether x is more than MaxJump from newest, either way: far
// behind is no more a real datagram than far ahead (a peer that restarts
// comes back as a new link).
func far(x, newest uint32) bool {
	d := int32(x - newest)
	return d > MaxJump || d < -MaxJump
}

// hold adds x, a far number, to the run and reports whether the run is
// now resyncAfter long. A number that does not follow the run starts a
// new one; a duplicate of a member neither joins nor breaks it.
func (g *jumpGuard) hold(x uint32) bool {
	top := g.run[0]
	for _, m := range g.run[:g.n] {
		if m == x {
			return false
		}
		if int32(m-top) > 0 {
			top = m
		}
	}
	if g.n > 0 && (int32(x-top) > lossWindow || int32(top-x) > lossWindow) {
		g.n = 0
	}
	g.run[g.n] = x
	g.n++
	return g.n == resyncAfter
}

// recvWindow is one numbered channel's receive window (L2). It judges a
// sequence when it falls more than lossWindow below the newest arrival.
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
	// guard holds sequences more than MaxJump from highest.
	guard jumpGuard
}

// windowResult says what an arriving sequence is to the window.
type windowResult uint8

const (
	seqNew       windowResult = iota // first time seen (newest or late inside the window)
	seqDuplicate                     // seen before; counts once (L2)
	seqStale                         // older than the window or than the first arrival: already judged or never counted
	seqHeld                          // more than MaxJump from the newest: held back, not (yet) believed
)

// observe records an arrival and adds judged sequences to loss. A sequence
// more than MaxJump from the newest is held back (seqHeld) until
// resyncAfter in a row follow one another; the one that completes the run
// moves the window and is seqNew.
func (w *recvWindow) observe(seq uint32, loss *Loss) windowResult {
	if w.started && far(seq, w.highest) {
		if !w.guard.hold(seq) {
			return seqHeld
		}
		w.believe(loss)
		return seqNew
	}
	r := w.judge(seq, loss)
	if r == seqNew {
		w.guard.n = 0 // the peer is where the window is
	}
	return r
}

// believe moves the window to the held-back run, which holds at least the
// sequence just held: the caller has evidence (a full run, or a reliable
// packet that is new) that the peer's numbers really are there. The
// members arrived, so they are recorded as arrivals in their order; ahead,
// the gap is judged like any other loss (L2). Behind, the window starts
// over from them, as at a first arrival: a window never moves back, and
// numbers going back are no loss. That heals a window that a forged first
// arrival, or a forged run, put where the peer is not; a conforming peer
// never goes back.
func (w *recvWindow) believe(loss *Loss) {
	run := w.guard.run[:w.guard.n]
	if int32(run[0]-w.highest) < 0 {
		w.started = false
	}
	for _, s := range run {
		w.judge(s, loss)
	}
	w.guard.n = 0
}

// judge is the window itself, for a sequence within MaxJump.
func (w *recvWindow) judge(seq uint32, loss *Loss) windowResult {
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
		if d < lossWindow {
			leaving = ^uint32(0) << (lossWindow - d)
			validLeaving = max(0, w.span-(lossWindow-int(d)))
		} else {
			leaving = ^uint32(0)
			validLeaving = w.span
		}
		got := bits.OnesCount32(w.mask & leaving)
		expected := uint64(validLeaving)
		missing := uint64(validLeaving - got)
		if d > lossWindow {
			expected++ // the old highest: it arrived
			gap := uint64(d - lossWindow - 1)
			expected += gap
			missing += gap
		}
		loss.Expected += expected
		loss.Missing += missing
		if d <= lossWindow {
			w.mask = w.mask<<d | 1<<(d-1)
		} else {
			w.mask = 0
		}
		w.span = min(w.span+int(d), lossWindow)
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
