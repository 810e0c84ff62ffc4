package probe

import (
	"math"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/incident"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// The engine's side of the hop trace's burst (docs/path.md, "The burst"):
// after each evaluation of the incidents, the links of every open incident
// are looked at closely, and so is a link whose loss left its own level;
// and an incident's where is the trace's judgement as soon as there is one.

// incidentBurst is how long each evaluation's call makes a link burst:
// past the next evaluation, so the burst holds while the reason holds and
// ends soon after.
const incidentBurst = 3 * incident.Every

// The loss that makes a link burst: over the alert watch's window (10 s by
// default), at least leaveLoss of the datagrams of at least
// leaveDatagrams, each way, and more than twice the link's loss over its
// whole life plus leaveLoss/2 — a line that loses that much all along is
// its normal, and is traced at the baseline's pace.
const (
	leaveLoss      = 0.02
	leaveDatagrams = 100
)

// burstTraces asks the hop trace to look closely at the links of every
// open incident, their baselines held meanwhile — a player's incident, the
// link to that player, or, on that player's own machine, every link it has
// to the others; a path's, the link between its two ends, on either end —
// and at every link whose loss left its own level. It forgets the wheres
// of players no open incident names.
func (p *Peer) burstTraces(now time.Duration) {
	open := p.inc.d.Open()
	for _, inc := range open {
		switch {
		case inc.Between != nil:
			a, b := inc.Between[0], inc.Between[1]
			if a == p.self.Name {
				p.burstTo(now, b)
			} else if b == p.self.Name {
				p.burstTo(now, a)
			}
		case inc.Player != nil && *inc.Player == p.self.Name:
			for _, pl := range p.players {
				if pl != p.self && !pl.removed {
					p.ep.BurstTrace(now, pl.ID, incidentBurst, true)
				}
			}
		case inc.Player != nil:
			p.burstTo(now, *inc.Player)
		}
	}
	for name := range p.inc.wheres {
		named := false
		for _, inc := range open {
			named = named || (inc.Player != nil && *inc.Player == name)
		}
		if !named {
			delete(p.inc.wheres, name)
		}
	}
	if !p.alerts.ready {
		return
	}
	for _, pl := range p.players {
		if pl == p.self || pl.removed || pl.idx >= len(p.alerts.links) {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok {
			continue
		}
		if p.alerts.links[pl.idx].leaving(st) {
			p.ep.BurstTrace(now, pl.ID, incidentBurst, true)
		}
	}
}

// burstTo bursts the trace of the link to the player named name.
func (p *Peer) burstTo(now time.Duration, name string) {
	for _, pl := range p.players {
		if pl.Name == name && pl != p.self && !pl.removed {
			p.ep.BurstTrace(now, pl.ID, incidentBurst, true)
			return
		}
	}
}

// traceWhere is where the player named name's delay starts on its own side
// (its LAN, its line out, its ISP), as the traces judge it now — this
// machine's own traces when it is that player, else the summaries that
// player shared of its traces (pathshare.go), of several the one that adds
// most — or, while an incident on the player is open, the largest such
// where judged since it opened, when that adds more: as a queue drains,
// the where of the incident stays the one of its peak. nil while no trace
// has judged it.
func (p *Peer) traceWhere(now time.Duration, name string) *feed.IncidentWhere {
	var best *diagnosis.TraceStart
	take := func(d *diagnosis.TraceStart) {
		if d != nil && ownSide(d.Link) && d.AddedMs > 0 && (best == nil || d.AddedMs > best.AddedMs || (d.AddedMs == best.AddedMs && d.TTL < best.TTL)) {
			best = d
		}
	}
	if name == p.self.Name {
		for _, pl := range p.players {
			if pl == p.self || pl.removed {
				continue
			}
			if r, ok := p.ep.Path(pl.ID); ok && r.DelayStarts != nil {
				d := r.DelayStarts
				take(&diagnosis.TraceStart{TTL: d.TTL, Link: d.Link, AddedMs: units.Millis(d.Added)})
			}
		}
	} else {
		for k, sp := range p.paths.in {
			if from := p.byID[k.from]; from != nil && from.Name == name && now-sp.at <= pathSummaryAge {
				take(sp.delay)
			}
		}
	}
	held, ok := p.inc.wheres[name]
	if best == nil {
		if ok {
			return &held
		}
		return nil
	}
	w := feed.IncidentWhere{Link: best.Link, TTL: best.TTL, AddedMs: math.Round(best.AddedMs*10) / 10}
	if ok && held.AddedMs >= w.AddedMs {
		return &held
	}
	if p.inc.wheres == nil {
		p.inc.wheres = map[string]feed.IncidentWhere{}
	}
	p.inc.wheres[name] = w
	return &w
}

// ownSide: a delay starting on link lies on the tracing player's own side.
func ownSide(link vocab.HopLink) bool {
	return link == vocab.HopLAN || link == vocab.HopUplink || link == vocab.HopISP
}
