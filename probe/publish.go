package probe

// Publishing: the events a peer emits to its sink and the link lines.

import (
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

func (p *Peer) activeEvent() *feed.TimingActiveEvent {
	t := p.sched.InForce()
	return &feed.TimingActiveEvent{Header: feed.Header{Type: vocab.EventTimingActive}, SendPeriod: t.SendPeriod, LookAhead: t.LookAhead,
		Rung: t.Rung(), Tier: t.Tier().String(), FPS: p.sched.FPS()}
}

// emitNet queues a network event for the frame being executed.
func (p *Peer) emitNet(e feed.Event) {
	feed.Head(e).Frame = p.frame
	p.events = append(p.events, e)
	if t, ok := e.(*feed.TimingEvent); ok {
		p.alerts.timing(p, t) // a worse tier is an alert
	}
}

// emit queues a local event; its frame is already set.
func (p *Peer) emit(e feed.Event) { p.events = append(p.events, e) }

func (p *Peer) flushEvents() {
	for _, e := range p.events {
		p.cfg.Sink.Emit(p.self.Name, e)
	}
	clear(p.events)
	p.events = p.events[:0]
}

func (p *Peer) emitLinks(f int) {
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		if ls, ok := p.LinkStat(pl.ID); ok {
			p.emit(&feed.LinkEvent{Header: feed.Header{Type: vocab.EventLink, Frame: f}, LinkStat: ls})
		}
	}
}

// LinkStat describes the private link to peer as the NDJSON contract names it.
func (p *Peer) LinkStat(peer netcore.PeerID) (feed.LinkStat, bool) {
	pl := p.byID[peer]
	st, ok := p.ep.Stats(peer)
	if pl == nil || !ok {
		return feed.LinkStat{}, false
	}
	return LinkOf(p.self.Name, pl.Name, st).Stat(), true
}

// Links lists every link this machine has, in house order.
func (p *Peer) Links() []feed.LinkStat {
	var out []feed.LinkStat
	for _, pl := range p.players {
		if pl == p.self {
			continue
		}
		if ls, ok := p.LinkStat(pl.ID); ok {
			out = append(out, ls)
		}
	}
	return out
}

// Summary is this machine's own totals for the summary line.
func (p *Peer) Summary() feed.PlayerSummary {
	return feed.PlayerSummary{Player: p.self.Name, TotalWaitMs: units.Millis(p.waitTotal), MaxWaitMs: units.Millis(p.waitMax), Frames: p.frames}
}
