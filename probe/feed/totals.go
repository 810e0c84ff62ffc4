package feed

import "time"

// The totals a View carries and the one fold of a link's successive lives
// into counters that never decrease (L5). Every reader that keeps a link's
// totals across a restart or a removal — the metrics exporter, a
// recording's report — folds through LinkFold, so they agree.

// LossTotals are cumulative datagram counts (L1, L5).
type LossTotals struct {
	Sent, Retransmitted, Expected, Missing uint64
	PeerExpected, PeerMissing              uint64
	PeerKnown                              bool
}

// LinkCounts are one link's cumulative datagram totals (L1, L4) and the time
// its machine spent waiting for the peer's commands.
type LinkCounts struct {
	Sent, Retransmitted, Expected, Lost uint64
	PeerExpected, PeerLost              uint64
	Waited                              time.Duration
}

func (c LinkCounts) plus(d LinkCounts) LinkCounts {
	return LinkCounts{c.Sent + d.Sent, c.Retransmitted + d.Retransmitted, c.Expected + d.Expected, c.Lost + d.Lost,
		c.PeerExpected + d.PeerExpected, c.PeerLost + d.PeerLost, c.Waited + d.Waited}
}

// restarted: one of this end's own totals went down, which a living link
// never does, so this is a new link under the same names.
func (c LinkCounts) restarted(from LinkCounts) bool {
	return c.Sent < from.Sent || c.Retransmitted < from.Retransmitted || c.Expected < from.Expected || c.Lost < from.Lost
}

func (c LinkCounts) highWater(d LinkCounts) LinkCounts {
	return LinkCounts{max(c.Sent, d.Sent), max(c.Retransmitted, d.Retransmitted), max(c.Expected, d.Expected), max(c.Lost, d.Lost),
		max(c.PeerExpected, d.PeerExpected), max(c.PeerLost, d.PeerLost), max(c.Waited, d.Waited)}
}

// LinkFold turns the totals of successive link lives into counters that never
// decrease (L5): the high-water mark of the live link plus everything
// retired links reached.
type LinkFold struct {
	retired LinkCounts
	live    LinkCounts
}

// Observe takes the link's current totals. Totals below the high-water mark
// of this end's own counts mean the link restarted: the old life retires.
// The peer's half travels unreliably and may arrive out of order, so within
// one life its largest value is the true one (L4).
func (f *LinkFold) Observe(c LinkCounts) {
	if c.restarted(f.live) {
		f.Retire()
	}
	f.live = f.live.highWater(c)
}

// Retire ends the current life: its totals stay in the counter.
func (f *LinkFold) Retire() {
	f.retired = f.retired.plus(f.live)
	f.live = LinkCounts{}
}

// Total is the counter value: never less than any earlier Total.
func (f *LinkFold) Total() LinkCounts { return f.retired.plus(f.live) }

// Counts are the link's cumulative totals as a fold takes them, with the
// time its machine waited for the peer's commands; an unknown total (L3)
// counts as nothing yet.
func (l Link) Counts(waited time.Duration) LinkCounts {
	return LinkCounts{l.Sent, l.Retransmitted, l.Expected, l.Missing, l.PeerExpected, l.PeerMissing, waited}
}
