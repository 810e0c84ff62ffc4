package loadtest

import "time"

// responder is the peer's end: it answers the request, echoes probes,
// counts the tester's load and reports it, and sends load in the phase
// and at the rate the tester's pace commands ask for, never above its own
// cap. It stops sending when the pace commands stop, and ends when the
// tester does, falls silent, or keeps it past peerBound.
type responder struct {
	cfg     Config
	verdict stopReason // stopComplete: accepted
	capRate float64
	started bool
	over    bool
	t0      time.Duration

	lastHeard, lastPace time.Duration

	ph         phase // the phase the tester's pace commands name
	pace       pacer
	size       int
	seq        uint32
	recv       [numPhases]counter // the tester's load
	cur        phase              // the latest phase of it that arrived
	nextReport time.Duration
	ctl        [32]byte
	loadBuf    [maxMessage]byte
}

func newResponder(cfg Config, req message) *responder {
	cfg.ID = req.id
	r := &responder{cfg: cfg, capRate: min(float64(cfg.Cap), float64(req.rate)), size: maxMessage}
	switch {
	case cfg.Relayed:
		r.verdict = stopRelayed
	case cfg.Refuse || req.version != protoVersion:
		r.verdict = stopRefused
	case cfg.Busy:
		r.verdict = stopBusy
	}
	return r
}

func (r *responder) send(m message) {
	m.id = r.cfg.ID
	r.cfg.Send(appendMessage(r.ctl[:0], m))
}

func (r *responder) answer() {
	m := message{kind: kindAnswer, reason: r.verdict}
	if r.verdict == stopComplete {
		m.rate = uint64(r.capRate)
	}
	r.send(m)
}

func (r *responder) tick(now time.Duration) {
	if r.over {
		return
	}
	if !r.started {
		r.started, r.t0, r.lastHeard, r.lastPace = true, now, now, now
		r.answer()
		if r.verdict != stopComplete {
			r.finish(r.verdict)
		}
		return
	}
	switch {
	case now-r.lastHeard >= silentFor:
		r.finish(stopPeerLeft)
		return
	case now-r.t0 >= peerBound:
		r.stop(now, stopCancelled)
		return
	}
	if r.pace.rate > 0 && now-r.lastPace >= silentFor {
		r.pace.set(now, 0)
	}
	if r.cur != phaseNone && now >= r.nextReport {
		c := &r.recv[r.cur]
		if now-c.s.at-c.first < silentFor {
			r.send(message{kind: kindReport, phase: r.cur, elapsed: uint32(c.s.at / time.Microsecond),
				bytes: c.s.bytes, count: c.s.count, highest: c.s.highest})
		}
		r.nextReport = now + reportEvery
	}
	for i := 0; i < maxBurst && r.pace.due(now); i++ {
		r.seq++
		m := message{kind: kindLoad, id: r.cfg.ID, phase: r.ph, seq: r.seq,
			stamp: uint32((now - r.t0) / time.Microsecond), size: uint16(r.size)}
		r.cfg.Send(appendMessage(r.loadBuf[:0], m))
		r.pace.sent(now, r.size)
	}
}

func (r *responder) receive(now time.Duration, b []byte) bool {
	m, err := decode(b)
	if err != nil || m.id != r.cfg.ID {
		return false
	}
	if r.over || !r.started {
		return true
	}
	switch m.kind {
	case kindRequest:
		r.lastHeard = now
		r.answer()
	case kindProbe:
		r.lastHeard = now
		m.kind = kindEcho
		r.send(m)
	case kindLoad:
		if m.phase.upload() {
			r.lastHeard = now
			r.recv[m.phase].add(now, m.seq, int(m.size))
			if m.phase > r.cur {
				r.cur, r.nextReport = m.phase, now+reportEvery
			}
		}
	case kindPace:
		r.lastHeard, r.lastPace = now, now
		r.ph, r.size = m.phase, int(m.size)
		r.pace.set(now, min(float64(m.rate), r.capRate))
	case kindStop:
		r.finish(m.reason)
	}
	return true
}

func (r *responder) stop(now time.Duration, why stopReason) {
	if r.over {
		return
	}
	if r.started {
		r.send(message{kind: kindStop, reason: why})
	}
	r.finish(why)
}

func (r *responder) finish(why stopReason) {
	if r.over {
		return
	}
	r.over = true
	r.pace.rate = 0
	r.cfg.Done(Result{Stopped: stoppedBy(why)})
}

func (r *responder) deadline() (time.Duration, bool) {
	if r.over {
		return 0, false
	}
	if !r.started {
		return 0, true
	}
	d := min(r.lastHeard+silentFor, r.t0+peerBound)
	if r.pace.rate > 0 {
		d = min(d, r.pace.next, r.lastPace+silentFor)
	}
	if r.cur != phaseNone {
		d = min(d, r.nextReport)
	}
	return d, true
}
