package feed

import (
	"cmp"
	"slices"
	"time"
)

// The admin's matrix: every player's links, not only this
// machine's. A player knows its own links first-hand and streams them to
// every other machine as snapshots (telemetry.go); the matrix is the newest
// of what arrived, beside this machine's own row taken from its endpoint.

// MatrixView is every seated player's latest picture of its own links and
// waits, as this machine knows it. A View carries one; front ends draw it
// as the admin's matrix and print its links as `link` lines.
type MatrixView struct {
	// Players are the seated players still in the session, in house
	// order; observers have no row (they make nobody wait).
	Players []MatrixPlayer
}

// MatrixPlayer is one player's row: its own links and waits.
type MatrixPlayer struct {
	Name string
	Self bool // this machine's own row, taken from its endpoint
	// Known: this machine holds the player's telemetry (always true for
	// Self). Until then every value below is unknown (L3) and Links is
	// empty.
	Known bool
	// Age is how long ago its newest telemetry arrived here (0 for Self):
	// a row whose updates stopped coming goes stale.
	Age time.Duration
	// Frame is the player's next frame to execute.
	Frame int
	// Waited is the total time the player waited for the others'
	// commands.
	Waited time.Duration
	// Wait is the longest wait of its last two report intervals (S5) and
	// Process its processing time per frame; nil until it has reported.
	Wait, Process *time.Duration
	// Links are the player's private links (T1), to players and
	// observers, in house order of the peer.
	Links []MatrixLink
}

// MatrixLink is one directed link From → To as From measures it.
type MatrixLink struct {
	// Link carries the values; what From cannot know yet is flagged
	// unknown (L3, L4).
	Link
	// Observer: To is an observer (it has no column in the matrix).
	Observer bool
	// Caused is the total time From waited for To's commands, a wait
	// still going on included: who makes whom wait. Frames is how many
	// frames From waited on for them.
	Caused time.Duration
	Frames int
	// Unacked is how long To's acknowledgements take now: the faster of
	// the latest two (from first send, resends included), or the age of
	// From's oldest packet to To still in flight when that is longer (0:
	// unknown). SRTT learns from clean samples only (T2, T13): while every
	// packet is resent before its ack comes it keeps its last value, and
	// after a rise it falls back slowly; this shows the delay now.
	Unacked time.Duration
}

// Bad reports whether a packet on the link has outlived the connection
// timeout (T11).
func (l *MatrixLink) Bad() bool { return l.State == LinkBad }

// Player returns the row of the named player, or nil.
func (m *MatrixView) Player(name string) *MatrixPlayer {
	for i := range m.Players {
		if m.Players[i].Name == name {
			return &m.Players[i]
		}
	}
	return nil
}

// Link returns the link from → to if from's row holds it.
func (m *MatrixView) Link(from, to string) (*MatrixLink, bool) {
	p := m.Player(from)
	if p == nil {
		return nil, false
	}
	for i := range p.Links {
		if p.Links[i].To == to {
			return &p.Links[i], true
		}
	}
	return nil, false
}

// linkStats appends every directed link the matrix knows to dst, row by
// row: what a live machine prints as `link` lines.
func (m *MatrixView) linkStats(dst []LinkStat) []LinkStat {
	for _, p := range m.Players {
		for _, l := range p.Links {
			dst = append(dst, l.Stat())
		}
	}
	return dst
}

// Culprit is one player ranked by how long the others waited for its
// commands.
type Culprit struct {
	Name string
	// Caused is the total time the players whose rows are known waited
	// for this player's commands.
	Caused time.Duration
	// Of breaks Caused down by the player who waited, longest first;
	// players who never waited for it are left out.
	Of []Wait
}

// Wait is a time one player spent waiting for another.
type Wait struct {
	Player string
	Time   time.Duration
}

// Culprits ranks the players by how long the others waited for their
// commands, longest first ("who causes lag"); ties keep house order. Only
// known rows count: a player whose telemetry has not arrived adds nothing
// to anyone's total.
func (m *MatrixView) Culprits() []Culprit {
	out := make([]Culprit, 0, len(m.Players))
	for _, c := range m.Players {
		cu := Culprit{Name: c.Name}
		for _, p := range m.Players {
			if p.Name == c.Name || !p.Known {
				continue
			}
			for _, l := range p.Links {
				if l.To == c.Name && l.Caused > 0 {
					cu.Caused += l.Caused
					cu.Of = append(cu.Of, Wait{Player: p.Name, Time: l.Caused})
				}
			}
		}
		slices.SortStableFunc(cu.Of, func(a, b Wait) int { return cmp.Compare(b.Time, a.Time) })
		out = append(out, cu)
	}
	slices.SortStableFunc(out, func(a, b Culprit) int { return cmp.Compare(b.Caused, a.Caused) })
	return out
}

// WaitedFor breaks the player's waits down by whom it waited for, longest
// first, players only; peers it never waited for are left out.
func (p *MatrixPlayer) WaitedFor(m *MatrixView) []Wait {
	var out []Wait
	for _, l := range p.Links {
		if l.Observer || l.Caused <= 0 || m.Player(l.To) == nil {
			continue
		}
		out = append(out, Wait{Player: l.To, Time: l.Caused})
	}
	slices.SortStableFunc(out, func(a, b Wait) int { return cmp.Compare(b.Time, a.Time) })
	return out
}

// index is the row of the named player, or -1.
func (m *MatrixView) Index(name string) int {
	for i := range m.Players {
		if m.Players[i].Name == name {
			return i
		}
	}
	return -1
}
