package probe

// Commands: issuing them with their tags, executing a send frame's
// commands in house order (S13), checksums, reports (S5) and the
// synthetic game commands.

import (
	"github.com/lagscope/lagscope/vocab"
	"hash/fnv"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// nextTag is the frame a command issued on frame f executes on: f plus the
// look-ahead in force (S1), but never a frame we already promised to hold
// complete.
func (p *Peer) nextTag(f int) int {
	return max(f+p.sched.InForce().LookAhead, p.lastThrough+1)
}

func (p *Peer) issue(typ uint8, payload []byte) {
	p.seq++
	p.outbox = append(p.outbox, feed.Command{Seq: p.seq, Type: typ, Payload: payload})
}

// executeCommands runs every held command tagged ≤ f, in (tag, house order,
// sequence) order, identically on every machine (S13: a command whose frame
// is no longer a send frame runs on the next send frame).
func (p *Peer) executeCommands(now time.Duration, f int) {
	p.exec = p.exec[:0]
	for _, pl := range p.players {
		if !pl.seated {
			continue
		}
		n := 0
		for n < len(pl.queue) && int(pl.queue[n].Tag) <= f {
			n++
		}
		for _, c := range pl.queue[:n] {
			p.exec = append(p.exec, execCmd{p: pl, cmd: c})
		}
		pl.queue = pl.queue[n:]
	}
	slices.SortStableFunc(p.exec, func(a, b execCmd) int {
		if a.cmd.Tag != b.cmd.Tag {
			return int(a.cmd.Tag - b.cmd.Tag)
		}
		if a.p.idx != b.p.idx {
			return a.p.idx - b.p.idx
		}
		return int(a.cmd.Seq) - int(b.cmd.Seq)
	})
	for _, e := range p.exec {
		if e.p.removed {
			continue // a removal earlier in this frame discards the rest
		}
		if !p.mayExecute(e.p, e.cmd) {
			p.implausible++
			continue
		}
		p.checksum(e.p, e.cmd)
		if p.cfg.OnCommand != nil {
			p.cfg.OnCommand(now, e.p.Name, f, e.cmd)
		}
		p.executeCommand(now, f, e.p, e.cmd)
	}
}

func (p *Peer) checksum(pl *player, c feed.Command) {
	h := fnv.New32a()
	var b [13]byte
	b[0] = byte(pl.idx)
	b[1] = byte(pl.idx >> 8)
	b[2] = c.Type
	putU32(b[3:], uint32(c.Tag))
	putU32(b[7:], c.Seq)
	putU32(b[9:], p.ck)
	h.Write(b[:])
	h.Write(c.Payload)
	p.ck = h.Sum32()
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func (p *Peer) recordChecksum(f int) {
	slot := &p.ckHist[f%ckHistory]
	slot.frame, slot.ck = f, p.ck
}

func (p *Peer) executeCommand(now time.Duration, f int, from *player, c feed.Command) {
	switch c.Type {
	case feed.CmdNetworkReport:
		r, err := decodeReport(c.Payload)
		if err != nil {
			return
		}
		rep := rungs.Report{Player: from.idx, Frame: f, HasRTT: r.RTTMicros != noRTT,
			Wait: time.Duration(r.WaitMicros) * time.Microsecond, Process: time.Duration(r.ProcessMicros) * time.Microsecond}
		if rep.HasRTT {
			rep.RTT = time.Duration(r.RTTMicros) * time.Microsecond
		}
		ev := feed.NewReportEvent(feed.Header{}, from.Name, rep.RTT, rep.HasRTT, rep.Wait, rep.Process)
		p.record.Add(rep)
		p.emitNet(ev)
	case cmdTiming:
		t, err := decodeTiming(c.Payload)
		if err != nil {
			return
		}
		prev := p.sched.Target()
		target := rungs.Timing{SendPeriod: int(t.SendPeriod), LookAhead: int(t.LookAhead)}
		d := rungs.Decision{Frame: int(t.Decided), Target: target, FPS: int(t.FPS), Reason: rungs.Reason(t.Reason)}
		p.master.Observe(d)
		p.shadow.Observe(d)
		p.sched.Change(f, target, int(t.FPS))
		p.emitNet(&feed.TimingEvent{Header: feed.Header{Type: vocab.EventTiming}, Decided: int(t.Decided), SendPeriod: target.SendPeriod,
			LookAhead: target.LookAhead, Rung: target.Rung(), Tier: target.Tier().String(), FPS: int(t.FPS), Reason: d.Reason.String()})
		if m := feed.TierMessage(prev, target); m != nil {
			p.emitNet(m)
		}
	case cmdRemove:
		r, err := decodeRemove(c.Payload)
		if err != nil {
			return
		}
		pl := p.byID[netcore.PeerID(r.Player)]
		if pl == nil || pl.removed || !pl.seated {
			return
		}
		pl.removed = true
		pl.queue = nil
		p.record.Remove(pl.idx)
		p.emitNet(&feed.RemovedEvent{Header: feed.Header{Type: vocab.EventRemoved}, Player: pl.Name})
		if pl != p.self {
			p.retire(pl)
		}
		if p.masterP == pl {
			p.masterP = p.firstSeated(nil)
			if p.masterP != nil {
				p.master.TakeOver(f)
				p.shadow.TakeOver(f)
				p.emitNet(&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster}, Player: p.masterP.Name})
			}
		}
		if p.doubtful > 0 {
			p.reconsiderRemovals()
		}
	case cmdGameSpeed:
		if v, err := decodeSpeed(c.Payload); err == nil {
			p.speed = v
		}
	case cmdLatencyFudge:
		// S19: reserved; the timing never reads it.
	}
}

// SetSpeed issues a game-speed event (S17): every machine records the new
// cap when it executes; the master's next timing event carries the rate.
func (p *Peer) SetSpeed(fps int) {
	if fps < 1 || fps > 1000 || p.self.Observer || !p.started {
		return
	}
	p.issue(cmdGameSpeed, speedBytes(fps))
}

func (p *Peer) issueReport() {
	var worst time.Duration
	all := true
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok || !measured(st) {
			all = false // S6: leave the round trip out
			continue
		}
		worst = max(worst, st.SRTT)
	}
	r := reportPayload{RTTMicros: noRTT,
		WaitMicros:    micros(max(p.waitCur, p.waitPrev)),
		ProcessMicros: micros(p.processTime())}
	if all {
		r.RTTMicros = micros(worst)
	}
	p.waitPrev, p.waitCur = p.waitCur, 0
	p.issue(feed.CmdNetworkReport, r.bytes())
}

func micros(d time.Duration) uint32 {
	us := d / time.Microsecond
	if us < 0 {
		return 0
	}
	if us >= time.Duration(noRTT) {
		return noRTT - 1
	}
	return uint32(us)
}

// syntheticCommands issues game commands at the configured rate.
func (p *Peer) syntheticCommands() {
	if p.cfg.CommandsPerMinute <= 0 {
		return
	}
	chance := p.cfg.CommandsPerMinute / 60 / float64(p.sched.FPS())
	if p.rng.Float64() < chance {
		var b [8]byte
		putU32(b[:], p.rng.Uint32())
		putU32(b[4:], uint32(p.frame))
		p.issue(feed.CmdGame, b[:])
	}
}

func (p *Peer) compareChecksum(pl *player, f int, ck uint32) {
	if pl.desynced || f <= 0 || f >= p.frame {
		return
	}
	slot := p.ckHist[f%ckHistory]
	if slot.frame != f || slot.ck == ck {
		return
	}
	pl.desynced = true
	p.emit(feed.DesyncMessage(p.frame, p.self.Name, pl.Name, f))
	p.flushEvents()
}

// processTime is this machine's processing time per frame for a report
// (S5): with a FrameClock, the average measured since the last report
// (never below the configured ProcessTime); without, ProcessTime.
func (p *Peer) processTime() time.Duration {
	if p.cfg.FrameClock == nil {
		return p.cfg.ProcessTime
	}
	if p.costN > 0 {
		p.processed = p.costSum / time.Duration(p.costN)
		p.costSum, p.costN = 0, 0
	}
	return max(p.processed, p.cfg.ProcessTime)
}
