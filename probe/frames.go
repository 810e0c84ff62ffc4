package probe

// The frame loop: run executes every frame whose commands are complete,
// waits (a stall) for the machine that is missing, and paces frames.

import (
	"github.com/lagscope/lagscope/vocab"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

func (p *Peer) statusGap() time.Duration { return max(p.framePeriod(), minStatusGap) }

func (p *Peer) framePeriod() time.Duration {
	return time.Second / time.Duration(p.sched.FPS())
}

// run executes every frame that is due and whose commands are all held.
func (p *Peer) run(now time.Duration) {
	if !p.started || p.done {
		return
	}
	for !p.done && now >= p.nextDue {
		if waitFor := p.missing(p.frame); waitFor != nil {
			if !p.stalled {
				p.stalled = true
				p.stallFrom = p.nextDue
			}
			p.lastCause = waitFor
			p.whileStalled(now, waitFor)
			return
		}
		var wait time.Duration
		if p.stalled {
			wait = now - p.stallFrom
			p.stalled = false
			p.noteWait(wait)
		}
		p.executeFrame(now, wait)
	}
}

// missing returns a seated player whose commands for frame f are not all
// held yet, or nil when frame f can execute.
func (p *Peer) missing(f int) *player {
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed {
			continue
		}
		if pl.through >= f {
			continue
		}
		if pl.removal != nil && int(pl.removal.Last) < f {
			continue // held removal excuses it past its last frame
		}
		return pl
	}
	return nil
}

func (p *Peer) noteWait(w time.Duration) {
	p.waitTotal += w
	p.waitMax = max(p.waitMax, w)
	p.waitCur = max(p.waitCur, w)
}

// whileStalled repeats our frame state and removes players silent past the
// drop timeout.
func (p *Peer) whileStalled(now time.Duration, waitFor *player) {
	if now-p.lastStatus >= p.statusGap() {
		p.lastStatus = now
		if !p.self.Observer {
			p.sendStatus(now)
		}
	}
	p.checkDrops(now)
}

// noticedStall is the wait from which a frame counts as stalled in the
// telemetry's frames waited: a player sees a frame held 50 ms (one and a
// half frames at 30 fps); the small waits of frames that catch up behind
// a stall are part of that one stall, not stalls of their own.
const noticedStall = 50 * time.Millisecond

// stallFloor is the shortest wait a machine counts against the player it
// waited for: on the wall clock a wait shorter than a frame is the clock's
// ordinary jitter, not lag (the live session reports no stall event for
// it either); on the game clock every wait counts.
func (p *Peer) stallFloor() time.Duration {
	if p.cfg.GameClock {
		return 0
	}
	return p.framePeriod()
}

// executeFrame executes frame p.frame at now.
func (p *Peer) executeFrame(now time.Duration, wait time.Duration) {
	f := p.frame
	var began time.Duration
	if p.cfg.FrameClock != nil {
		began = p.cfg.FrameClock()
	}
	before, beforeFPS := p.sched.InForce(), p.sched.FPS()
	if wait > 0 {
		cause := ""
		if c := p.lastCause; c != nil {
			cause = c.Name
			if wait >= p.stallFloor() {
				c.caused += wait
				if wait >= noticedStall {
					c.framesWaited++
				}
			}
		}
		p.emit(&feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: f}, Player: p.self.Name, WaitMs: units.Millis(wait), Cause: cause, Wait: wait})
	}
	if p.sched.IsSendFrame(f) {
		p.executeCommands(now, f)
	}
	// Timing events of this frame are in (Change); now the staged steps
	// (S12) for this frame.
	p.sched.Advance(f)
	if p.sched.InForce() != before || p.sched.FPS() != beforeFPS {
		p.emitNet(p.activeEvent())
	}
	if fps := p.sched.FPS(); fps != beforeFPS {
		p.game.rate(f, fps) // the next frame comes one frame time of the new rate on
	}
	p.recordChecksum(f)
	p.lastExec = f
	if p.cfg.OnFrame != nil {
		p.cfg.OnFrame(f, p.ck)
	}
	if p.cfg.FrameClock != nil {
		p.costSum += max(p.cfg.FrameClock()-began, 0)
		p.costN++
	}
	since := f
	if !p.self.Observer && !p.quitting && p.self.seated && !p.self.removed {
		if rungs.IsReportFrame(since) {
			p.issueReport()
		}
		if p.masterP == p.self && rungs.IsEvaluationFrame(since) {
			if d, ok := p.master.Evaluate(f, p.record, p.speed); ok {
				p.issue(cmdTiming, timingPayload{
					Decided: int32(d.Frame), SendPeriod: uint16(d.Target.SendPeriod),
					LookAhead: uint16(d.Target.LookAhead), FPS: uint16(d.FPS), Reason: uint8(d.Reason),
				}.bytes())
			}
		}
		p.syntheticCommands()
		if p.sched.IsSendFrame(f) {
			p.sendFramePacket(now, f, p.nextTag(f), true, false)
		} else if next := p.sched.NextSendFrame(f + 1); p.lastThrough < next {
			// A timing change moved the next send frame past what we
			// promised: promise up to it, or every machine would wait at
			// the gap for a packet none can send (liveness).
			p.sendFramePacket(now, f, next, false, false)
		}
	}
	if rungs.IsEvaluationFrame(since) {
		p.evaluateDiagnosis(now, f) // diagnose.go
	}
	if p.cfg.LinkEvery > 0 && f > 0 && f%p.cfg.LinkEvery == 0 {
		p.emitLinks(f)
	}
	p.frames++
	p.frame++
	p.nextDue = nextFrameDue(p.nextDue, now, max(p.framePeriod(), p.cfg.ProcessTime), wait)
	p.flushEvents()
	if p.self.removed {
		p.done = true
	}
}

// nextFrameDue is when the frame after one due at due, executed at now
// after waiting wait, is due (S15: machines pace frames to the rate). A
// frame that ran on time or a little late keeps the schedule, so the
// wake-up's own lateness does not pile up frame after frame: a machine
// woken 1 ms late every frame would otherwise play 29 fps at a rate of
// 30. After a wait (a stall), or when it fell a whole step behind, the
// schedule starts again from now: a lockstep game does not race to make
// up frames it lost.
func nextFrameDue(due, now, step, wait time.Duration) time.Duration {
	if wait == 0 && now-due < step {
		return due + step
	}
	return max(due, now) + step
}
