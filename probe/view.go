package probe

import (
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// View takes a picture of the peer at now.
func (p *Peer) View(now time.Duration) feed.View {
	v := feed.View{At: now, Self: p.self.Name, Frame: p.frame, Started: p.started, Speed: p.speed, Stalled: p.stalled}
	if p.started {
		v.Game, _ = p.GameAt(p.frame)
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
		pv := feed.PlayerView{Name: pl.Name, Observer: pl.Observer, Removed: pl.removed, Master: pl == p.masterP, Self: pl == p.self}
		if p.record != nil && pl.seated {
			if rep, ok := p.record.Latest(pl.idx); ok {
				rv := &feed.ReportView{Frame: rep.Frame, Wait: rep.Wait, Process: rep.Process, Fresh: p.record.Fresh(pl.idx, p.frame)}
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
		v.Links = append(v.Links, feed.LinkView{
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
func (p *Peer) Matrix(now time.Duration) feed.MatrixView {
	if !p.started {
		return feed.MatrixView{}
	}
	return p.tm.matrix(now, p)
}

// KnownLinks lists every directed link this machine knows at now: its own
// (house order), then every other player's from its telemetry, row by row
// — what a live machine prints as `link` lines.
func (p *Peer) KnownLinks(now time.Duration) []feed.LinkStat {
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
