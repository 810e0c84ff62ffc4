package probe

// Membership: who is in the session, links that end (a removal, a
// forgotten observer) and links that go bad.

import (
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// ForgetObserver ends this machine's link to an observer that has left or
// fallen silent. An observer has no seat, so nothing waits for it and no
// removal event is needed: every machine forgets it on its own. It
// reports whether id was an observer still linked.
func (p *Peer) ForgetObserver(id netcore.PeerID) bool {
	pl := p.byID[id]
	if pl == nil || pl == p.self || !pl.Observer || pl.removed {
		return false
	}
	pl.removed = true
	p.retire(pl)
	return true
}

// retire ends the link to pl, keeping its last statistics for the summary.
func (p *Peer) retire(pl *player) {
	if ls, ok := p.LinkStat(pl.ID); ok {
		p.retired = append(p.retired, ls)
	}
	p.ep.RemoveLink(pl.ID)
	p.tm.forget(pl.ID)
}

// RetiredLinks are the links this machine has ended (a removed player, a
// forgotten observer), as they stood when they ended.
func (p *Peer) RetiredLinks() []feed.LinkStat { return slices.Clone(p.retired) }

// watchEvery is how often a peer looks at its links for the bad-connection
// messages: a tenth of a second is immediate for a reader, and a machine
// with dozens of links and many wake-ups a second does not read every
// link's statistics on each.
const watchEvery = 100 * time.Millisecond

// watchLinks adds a message when a link goes bad (a packet outlived the
// connection timeout, T11) and when it recovers, and the alerts due.
func (p *Peer) watchLinks(now time.Duration) {
	if p.watched && now < p.nextWatch {
		return
	}
	p.watched, p.nextWatch = true, now+watchEvery
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok || st.Bad == pl.bad {
			continue
		}
		pl.bad = st.Bad
		p.emit(feed.LinkMessage(p.frame, p.self.Name, pl.Name, st.Bad))
	}
	p.alerts.watch(now, p)
	p.flushEvents()
}

// checkDrops: the master (or, when the master itself is silent, the first
// other seated player in house order) removes a seated player that has been
// silent longer than the drop timeout.
func (p *Peer) checkDrops(now time.Duration) {
	if p.self.Observer || p.quitting || now < p.dropAt {
		return
	}
	// dropAt is the earliest a player can fall silent past the timeout:
	// lastHeard only moves on, so until then nobody can. A stalled machine
	// comes here on every datagram; with 64 players the loop would be a
	// measurable share of the demo.
	p.dropAt = now + p.cfg.DropTimeout
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed || pl.removing {
			continue
		}
		if at := pl.lastHeard + p.cfg.DropTimeout; now < at {
			p.dropAt = min(p.dropAt, at)
			continue
		}
		p.dropAt = now // silent now: look again next time
		remover := p.masterP
		if remover == pl || remover == nil {
			remover = p.firstSeated(pl)
		}
		if remover != p.self {
			continue
		}
		last := pl.through
		for _, o := range p.players {
			if o == p.self || o == pl || !o.seated || o.removed || o.removing {
				continue
			}
			last = min(last, o.holds[pl.idx])
		}
		p.log.Info("removing silent player", "player", pl.Name, "silent", now-pl.lastHeard, "last_frame", last)
		p.issueRemoval(now, pl, last)
	}
}

// issueRemoval issues a removal of pl and sends it at once: a machine that is
// stalled on pl has no send frame coming.
func (p *Peer) issueRemoval(now time.Duration, pl *player, last int) {
	pl.removing = true
	tag := p.nextTag(p.frame)
	if pl == p.self {
		last = tag
	}
	r := removePayload{Player: uint16(pl.ID), Last: int32(last)}
	if pl != p.self {
		// We hold our own removal as soon as we issue it: it excuses pl
		// past its last frame here as on every machine that receives it.
		pl.removal = &r
		pl.discardAfter(last)
	}
	p.issue(cmdRemove, r.bytes())
	p.sendFramePacket(now, p.frame, tag, true, true)
}

// discardAfter drops held commands tagged after last (a removed player's
// commands past its last frame never execute anywhere).
func (pl *player) discardAfter(last int) {
	n := 0
	for _, c := range pl.queue {
		if int(c.Tag) <= last || c.Type == cmdRemove {
			pl.queue[n] = c
			n++
		}
	}
	pl.queue = pl.queue[:n]
}
