package probe

import (
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/rungs"
)

// View is the read-only picture of a peer that front ends draw (docs/ui.md
// shows what they draw of it). A View is a copy: holding one never touches
// the engine. Unknown values are nil pointers, never zeros (L3).
type View struct {
	At      time.Duration // time since the world started
	Session string
	Self    string
	Master  string
	Frame   int  // next frame to execute
	Started bool // the game has started (false: lobby)

	FPS     int          // frame rate in force (S15)
	Speed   int          // game speed: the frame-rate cap (S17)
	InForce rungs.Timing // timing in force
	Target  rungs.Timing // the last timing the master chose
	Staged  bool         // a decrease is stepping down (S12)
	// Needed is the timing the worst fresh reported round trip needed with
	// headroom at the latest evaluation, as the master computes a target
	// (S9, S10) and where a descent settles (S11b.4); the zero Timing
	// before an evaluation saw a report with a round trip.
	Needed   rungs.Timing
	Stalled  bool   // waiting for commands right now
	WaitedOn string // whom we wait for, when Stalled

	// Lobby is set while a live session waits for its game to start.
	Lobby *LobbyView

	Links   []LinkView   // one per other machine, house order
	Players []PlayerView // every machine, house order
	Totals  LossTotals   // this machine's transport, summed over links
	// Relay (a host) is what it forwarded for pairs without a direct
	// path.
	Relay []RelayStat `json:",omitempty"`
	// Paths are the hop traces of the links this machine traces, house
	// order; empty when none is traced.
	Paths []PathView `json:",omitempty"`

	// Matrix is every seated player's own links and waits: this
	// machine's row first-hand, the others' from their telemetry; rows
	// not heard from yet are marked unknown, never zero (L3).
	//
	// A recording leaves it out: every link in it is also in the link
	// lines, once a second, and at 64 players the matrix alone is over a
	// megabyte, more than a record may hold (record.MaxRecord).
	Matrix MatrixView `json:"-"`

	// Diagnosis is the latest diagnosis this machine made (who and what
	// costs the session, from every pair it knows), nil before the first.
	Diagnosis *diagnosis.Diagnosis `json:"-"`
}

// LobbyView is a live session before its game starts.
type LobbyView struct {
	Need      int  // seated players the host starts at
	Seated    int  // players seated so far
	Observers int  // observers in the session
	Joining   bool // still in the handshake with the host
	// Pending: this machine's pairs that carry no traffic yet, with what
	// is tried for each.
	Pending []PendingPair `json:",omitempty"`
}

// LinkView is one private link from this machine.
type LinkView struct {
	Link
	Peer     string
	Observer bool
	Bad      bool          // a packet has outlived the connection timeout (T11)
	Caused   time.Duration // total time this machine waited for the peer's commands
	Through  int           // the highest frame the peer's commands are complete for
}

// PlayerView is one machine of the session.
type PlayerView struct {
	Name     string
	Observer bool
	Removed  bool
	Master   bool
	Self     bool
	// Latest report (S5), if any.
	Report *ReportView
}

// ReportView is a player's latest executed report.
type ReportView struct {
	Frame   int
	RTT     *time.Duration // nil: left out (S6)
	Wait    time.Duration
	Process time.Duration
	Fresh   bool
}

// View takes a picture of the peer at now.
func (p *Peer) View(now time.Duration) View {
	v := View{At: now, Self: p.self.Name, Frame: p.frame, Started: p.started, Speed: p.speed, Stalled: p.stalled}
	if p.started {
		v.FPS = p.sched.FPS()
		v.InForce = p.sched.InForce()
		v.Target = p.sched.Target()
		v.Staged = p.sched.Staged()
		v.Needed = p.dg.needed
	} else {
		v.FPS = p.cfg.Speed
		v.InForce, v.Target = p.cfg.Timing, p.cfg.Timing
	}
	if p.masterP != nil {
		v.Master = p.masterP.Name
	}
	if p.stalled && p.lastCause != nil {
		v.WaitedOn = p.lastCause.Name
	}
	for _, pl := range p.players {
		pv := PlayerView{Name: pl.Name, Observer: pl.Observer, Removed: pl.removed, Master: pl == p.masterP, Self: pl == p.self}
		if p.record != nil && pl.seated {
			if rep, ok := p.record.Latest(pl.idx); ok {
				rv := &ReportView{Frame: rep.Frame, Wait: rep.Wait, Process: rep.Process, Fresh: p.record.Fresh(pl.idx, p.frame)}
				if rep.HasRTT {
					d := rep.RTT
					rv.RTT = &d
				}
				pv.Report = rv
			}
		}
		v.Players = append(v.Players, pv)
		if pl == p.self {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok {
			continue
		}
		v.Links = append(v.Links, LinkView{
			Link: LinkOf(p.self.Name, pl.Name, st),
			Peer: pl.Name, Observer: pl.Observer, Bad: st.State == netcore.Bad,
			Caused: pl.caused, Through: pl.through,
		})
	}
	v.Totals = p.totals()
	v.Diagnosis = p.dg.last
	if p.started {
		v.Matrix = p.tm.matrix(now, p)
	}
	return v
}

// Matrix is every seated player's links and waits as this machine knows
// them at now (View.Matrix).
func (p *Peer) Matrix(now time.Duration) MatrixView {
	if !p.started {
		return MatrixView{}
	}
	return p.tm.matrix(now, p)
}

// KnownLinks lists every directed link this machine knows at now: its own
// (house order), then every other player's from its telemetry, row by row
// — what a live machine prints as `link` lines.
func (p *Peer) KnownLinks(now time.Duration) []LinkStat {
	out := p.Links()
	m := p.Matrix(now)
	for _, row := range m.Players {
		if row.Self {
			continue
		}
		for _, l := range row.Links {
			out = append(out, l.Stat())
		}
	}
	return out
}
