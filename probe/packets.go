package probe

// Frame packets: sending a frame's packet and the status between them,
// and taking in what arrives.

import (
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// Deliver hands the peer one message that arrived on its endpoint. Only a
// peer built with NewPeerOn needs it: the caller's DeliverFunc passes on
// the frame packets (and nothing else) here. Like any delivery it may be
// called before Start; frames run on the next Receive or Tick.
func (p *Peer) Deliver(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
	if p.done {
		return
	}
	p.deliver(now, from, ch, msg)
}

// sendFramePacket tags the outbox with tag and sends one frame packet to every
// other machine. It asks for an ack (sends reliably) when it carries commands,
// and also for the first frame packet of the game and at least every 32
// frames while any link to a seated player lacks a clean sample (T6).
func (p *Peer) sendFramePacket(now time.Duration, f, tag int, withCommands, force bool) {
	pk := framePacket{Kind: kindFrame, Frame: int32(f), Through: int32(tag), CkFrame: int32(max(p.lastExec, 0)), Ck: p.ck}
	var cmds []feed.Command
	if withCommands {
		cmds = p.outbox
		for i := range cmds {
			cmds[i].Tag = int32(tag)
		}
	}
	pk.Commands = cmds
	reliable := len(cmds) > 0 || force
	if !p.ackedFirst {
		reliable = true
	}
	// T6 counts frames, but a frame packet leaves only on a send frame: ask
	// on the last one before the gap to the next would pass 32 (at send
	// period 10: frames 30, 60, …, not 40, 80, …).
	if !reliable && p.sched.NextSendFrame(f+1)-p.lastAckReq > 32 && p.anyUnmeasured() {
		reliable = true
	}
	if reliable {
		p.ackedFirst = true
		p.lastAckReq = f
		p.relSent++
	}
	pk.RelCount = p.relSent
	// Our own commands are held at once.
	if withCommands {
		p.self.queue = append(p.self.queue, cmds...)
		p.outbox = p.outbox[:0]
	}
	p.self.through = max(p.self.through, tag)
	p.lastThrough = max(p.lastThrough, tag)
	p.buf = pk.appendTo(p.buf[:0])
	ch := netcore.ChannelUnreliable
	if reliable {
		ch = netcore.ChannelReliable
	}
	tel := p.tm.due(now, p)
	for _, pl := range p.players {
		if pl == p.self || pl.removed || p.tm.skip(now, p, pl, tel, len(p.buf), reliable) {
			continue // an observer's share holds nothing for it now (telemetry.go)
		}
		msg := p.buf
		switch {
		case tel && !p.tm.wants(p, pl):
		case tel && ch == netcore.ChannelUnreliable:
			msg = p.tm.wrap(pl, p.buf) // one message: telemetry.go says why
		case tel:
			p.tm.sendTo(now, p, pl)
		}
		if err := p.ep.Send(now, pl.ID, ch, msg); err != nil {
			p.log.Debug("frame packet not sent", "to", pl.Name, "err", err)
		}
	}
	p.lastStatus = now
}

// sendStatus repeats our frame state without commands while we are stalled,
// with our completeness of every player (for removals).
func (p *Peer) sendStatus(now time.Duration) {
	pk := framePacket{Kind: kindStatus, Frame: int32(p.frame), Through: int32(p.lastThrough), RelCount: p.relSent,
		CkFrame: int32(max(p.lastExec, 0)), Ck: p.ck}
	p.holds = p.holds[:0]
	for _, pl := range p.players {
		if pl.seated && !pl.removed && pl != p.self {
			p.holds = append(p.holds, hold{Player: uint16(pl.ID), Through: int32(pl.through)})
		}
	}
	pk.Holds = p.holds
	p.buf = pk.appendTo(p.buf[:0])
	tel := p.tm.due(now, p)
	for _, pl := range p.players {
		if pl == p.self || pl.removed || p.tm.skip(now, p, pl, tel, len(p.buf), false) {
			continue
		}
		msg := p.buf
		withTel := tel && p.tm.wants(p, pl)
		if withTel {
			msg = p.tm.wrap(pl, p.buf)
		} else if p.cfg.SparseStatus && pl.known >= p.lastThrough && now-pl.lastStatus < sparseStatusGap {
			// It holds every command we promised: our state tells it
			// nothing it waits for. It still hears from us now and then
			// (our holds for removals, and long before its drop timeout).
			continue
		}
		pl.lastStatus = now
		_ = p.ep.Send(now, pl.ID, netcore.ChannelUnreliable, msg)
	}
}

// sparseStatusGap is how often SparseStatus repeats a stalled machine's
// state to a machine known to hold all its commands: far inside the drop
// timeout, and often enough that the holds a removal reads stay fresh.
const sparseStatusGap = time.Second

func (p *Peer) anyUnmeasured() bool {
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed {
			continue
		}
		if st, ok := p.ep.Stats(pl.ID); !ok || !measured(st) {
			return true
		}
	}
	return false
}

// deliver is the endpoint's callback for every message that arrives.
func (p *Peer) deliver(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
	pl := p.ids.get(p, from)
	if pl == nil || pl == p.self {
		return
	}
	pl.lastHeard = now
	if p.takePathSummary(now, pl, msg) {
		return
	}
	if inner, ok := p.tm.deliver(now, p, pl, msg); ok {
		if len(inner) == 0 {
			return
		}
		msg = inner // the frame or status packet that came with it
	}
	if p.spec != nil {
		p.watchMatrix(now) // a spectator executes no frames: telemetry is all it takes (spectator.go)
		return
	}
	if pl.removed || pl.Observer {
		return
	}
	if ch == netcore.ChannelReliable {
		// Counted even if refused below: the sender's RelCount counts
		// every frame packet it sent reliably, and a message that took
		// one's packet number (a forgery, without a key) stands in for
		// it. Left out, every later Through would wait for a count that
		// never comes: a stall for good.
		pl.relDelivered++
	}
	pk, err := decodeFramePacketInto(msg, p.rxHolds)
	if cap(pk.Holds) > cap(p.rxHolds) {
		p.rxHolds = pk.Holds[:0] // grown: keep the larger array
	}
	if err != nil {
		p.badPackets++
		p.log.Debug("bad frame packet", "from", pl.Name, "err", err)
		return
	}
	if !p.plausiblePacket(now, ch, &pk) {
		p.implausible++
		p.log.Debug("implausible frame packet", "from", pl.Name, "frame", pk.Frame, "through", pk.Through)
		return
	}
	for _, c := range pk.Commands {
		if int(c.Tag) <= pl.through && pl.relDelivered > 0 {
			// A command for a frame the sender had already promised
			// complete breaks the lockstep; drop it rather than desync.
			p.log.Warn("command for a frame already complete", "from", pl.Name, "tag", c.Tag, "through", pl.through)
			continue
		}
		if pl.removal != nil && c.Tag > pl.removal.Last {
			continue
		}
		pl.queue = append(pl.queue, c)
		if c.Type == cmdRemove {
			p.holdRemoval(pl, c)
		}
	}
	for _, h := range pk.Holds {
		if o := p.ids.get(p, netcore.PeerID(h.Player)); o != nil {
			pl.holds[o.idx] = max(pl.holds[o.idx], int(h.Through))
		}
	}
	// What pl holds of ours, at least: a packet names a frame it has
	// reached, and every frame before it executed with our commands; a
	// status packet's holds say the rest.
	pl.known = max(pl.known, int(pk.Frame)-1, pl.holds[p.self.idx])
	if pk.RelCount <= pl.relDelivered {
		pl.through = max(pl.through, int(pk.Through))
	} else {
		pl.pending = append(pl.pending, pendingThrough{rel: pk.RelCount, through: int(pk.Through)})
	}
	if len(pl.pending) > 0 {
		kept := pl.pending[:0]
		for _, pt := range pl.pending {
			if pt.rel <= pl.relDelivered {
				pl.through = max(pl.through, pt.through)
			} else if pt.through > pl.through {
				kept = append(kept, pt)
			}
		}
		pl.pending = kept
		if len(pl.pending) > 64 {
			pl.pending = append(pl.pending[:0], pl.pending[len(pl.pending)-64:]...)
		}
	}
	p.compareChecksum(pl, int(pk.CkFrame), pk.Ck)
}

// playerIndex finds a roster member by PeerID in a slice indexed by the ID.
// deliver looks up the sender of every message and, in a status packet,
// every player it holds: with 64 players map lookups were 9 % of a
// demo's CPU. The IDs a host hands out count up from 1, so the
// slice stays small; byID remains the roster's truth, and an ID is copied
// here the first time it is found there (a member is never taken out of
// byID, so an entry never goes stale).
type playerIndex []*player

// maxIndexedID bounds the slice: a larger ID (none a host gives out in a
// session of MaxPlayers) is looked up in the map.
const maxIndexedID = 1024

func (ix *playerIndex) get(p *Peer, id netcore.PeerID) *player {
	if int(id) < len(*ix) {
		if pl := (*ix)[id]; pl != nil {
			return pl
		}
	}
	pl := p.byID[id]
	if pl != nil && int(id) < maxIndexedID {
		if int(id) >= len(*ix) {
			*ix = append(*ix, make([]*player, int(id)+1-len(*ix))...)
		}
		(*ix)[id] = pl
	}
	return pl
}
