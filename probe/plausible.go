package probe

// Plausibility bounds: a value from a peer that no conforming
// peer can send is refused — counted (Implausible) and never acted on.
// Without --key a datagram with the session token from a member's address
// is taken at its word, so one spoofed datagram must not be able to do
// lasting damage; with a key the same bounds guard against a member that
// misbehaves. docs/security.md lists what each bound stops and what an
// unkeyed session still trusts.
//
// Every bound is either a fact about one packet (a frame packet's Through
// is at most the widest look-ahead past the frame it was sent on) or is
// judged where every machine is in the same state — on execution, in
// lockstep — so a command a real peer issued is never refused on one
// machine and taken on another (that would be the desync the bounds are
// there to prevent).

import (
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// maxLead is how far past the frame it was sent on a frame packet may
// promise completeness: the widest look-ahead (S4) plus the longest send
// period, by which staging may round a look-ahead up (S12).
const maxLead = rungs.MaxLookAhead + rungs.Rungs

// maxFPS is the highest frame rate a session can run at (the game-speed
// cap, S17): no machine's frame count grows faster.
const maxFPS = 1000

// Implausible counts what this machine refused as impossible for a
// conforming peer: frame packets whose frame or completeness lies beyond
// reach, commands on the wrong channel or with out-of-range fields, timing
// events from a machine that is not the master or with a target that is
// not a valid timing (the master counts its own such event too), and
// removals from a machine that may not issue them. None of it took effect.
func (p *Peer) Implausible() uint64 { return p.implausible }

// frameCeiling is the highest frame a peer's packet can say its sender is
// on. A seated machine's commands are needed for every frame, so no sender
// executes past what we promised (our through): its frame packets say at
// most that frame, its status packets the next. An observer, or a player
// whose removal is under way, is not waited for: then the sender's frame
// is bounded only by the time the game has run at the highest frame rate,
// with a second's slack for the start reaching machines at different times.
func (p *Peer) frameCeiling(now time.Duration) int {
	if p.self.seated && !p.self.removed && !p.self.removing {
		return p.self.through + 1
	}
	elapsed := now
	if p.started {
		elapsed = now - p.startAt
	}
	return maxLead + maxFPS + int(elapsed/(time.Second/maxFPS))
}

// plausiblePacket judges a decoded frame packet from pl that arrived on ch.
func (p *Peer) plausiblePacket(now time.Duration, ch netcore.Channel, pk *framePacket) bool {
	if int(pk.Frame) > p.frameCeiling(now) || int(pk.Through) > int(pk.Frame)+maxLead {
		return false
	}
	for _, c := range pk.Commands {
		// Commands travel reliably, tagged with the packet's Through
		// (sendFramePacket); a command elsewhere is not a peer's.
		if ch != netcore.ChannelReliable || c.Tag > pk.Through || !plausiblePayload(c) {
			return false
		}
	}
	return true
}

// plausiblePayload checks the fields of the commands the engine reads. A
// removal's last frame is the frame it executes on (a player quitting) or
// what the remover holds of the silent player (checkDrops), which is at
// most maxLead past a frame the remover promised — and the removal's own
// frame is past its promise. A timing event is checked for its size only:
// its values are judged where it executes (mayExecute), because the master
// executes its own events without this check, and a packet refused here on
// the other machines alone would leave them out of step with it.
func plausiblePayload(c feed.Command) bool {
	var err error
	switch c.Type {
	case feed.CmdNetworkReport:
		_, err = decodeReport(c.Payload)
	case cmdTiming:
		if len(c.Payload) != timingLen {
			return false
		}
	case cmdGameSpeed:
		_, err = decodeSpeed(c.Payload)
	case cmdRemove:
		var r removePayload
		r, err = decodeRemove(c.Payload)
		if err == nil && (r.Last < 0 || int(r.Last) > int(c.Tag)+maxLead) {
			return false
		}
	}
	return err == nil
}

// mayHoldRemoval says whether a removal of target issued by from can be
// held as it arrives — its last frame then excuses target on this machine
// at once (missing), before it executes. A removal comes from the player
// itself, from the master, or for a silent master from the first other
// seated player (checkDrops; docs/live.md, "What happens when a machine
// vanishes"). The master here may not be the master yet where from
// issued it: every player ahead of from in house order may be on its way
// out. So from may remove target when every seated player ahead of it,
// target aside, is removed or has a removal held. A removal that does not
// pass yet stays queued and is looked at again when a removal is held or
// executes (reconsiderRemovals); on execution the exact rule decides.
func (p *Peer) mayHoldRemoval(from, target *player) bool {
	if from == target {
		return true
	}
	for _, o := range p.players[:from.idx] {
		if o != target && o.seated && !o.removed && o.removal == nil {
			return false
		}
	}
	return true
}

// mayExecute is judged on execution, in the same state on every machine:
// a timing event executes only from the master (S12, S16) and only with a
// valid target and frame rate (decodeTiming: rungs.Timing.Valid, 1..1000
// fps), so an invalid one — 3/7, 1/1, 0/0 — is refused on every machine on
// the frame it was due, the master's own included; a removal only from the
// player itself, the master, or — the master being the one removed — the
// first other seated player, which the drop-timeout rule names. A refused
// command is left out of the checksum, so a forgery that reached one
// machine leaves it in step with the rest.
func (p *Peer) mayExecute(from *player, c feed.Command) bool {
	switch c.Type {
	case cmdTiming:
		_, err := decodeTiming(c.Payload)
		return from == p.masterP && err == nil
	case cmdRemove:
		r, err := decodeRemove(c.Payload)
		if err != nil {
			return true // executes as nothing, as before
		}
		target := p.byID[netcore.PeerID(r.Player)]
		return target == from || from == p.masterP ||
			(target != nil && target == p.masterP && from == p.firstSeated(target))
	}
	return true
}

// holdRemoval takes in a removal that arrived from pl: its target is
// excused past its last frame, and its commands after that frame are
// dropped (they never execute anywhere).
func (p *Peer) holdRemoval(pl *player, c feed.Command) {
	r, err := decodeRemove(c.Payload)
	if err != nil {
		return
	}
	target := p.byID[netcore.PeerID(r.Player)]
	if target == nil || target.removal != nil {
		return
	}
	if !p.mayHoldRemoval(pl, target) {
		p.doubtful++
		return
	}
	target.removal = &r
	target.removing = true
	target.discardAfter(int(r.Last))
	if p.doubtful > 0 {
		p.reconsiderRemovals()
	}
}

// reconsiderRemovals holds every queued removal that may now be held: a
// removal held or executed can make its issuer the master-to-be.
func (p *Peer) reconsiderRemovals() {
	for changed := true; changed && p.doubtful > 0; {
		changed = false
		n := 0
		for _, pl := range p.players {
			for _, c := range pl.queue {
				if c.Type != cmdRemove {
					continue
				}
				r, err := decodeRemove(c.Payload)
				target := p.byID[netcore.PeerID(r.Player)]
				if err != nil || target == nil || target.removal != nil {
					continue
				}
				if !p.mayHoldRemoval(pl, target) {
					n++
					continue
				}
				target.removal = &r
				target.removing = true
				target.discardAfter(int(r.Last))
				changed = true
			}
		}
		p.doubtful = n
	}
}
