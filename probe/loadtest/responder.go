package loadtest

import (
	"io"
	"time"
)

// responder is the peer's end: it answers the request, echoes probes,
// counts the tester's load and reports it, and sends load in the phase
// and at the rate the tester's pace commands ask for, never above its own
// cap. It stops sending when the pace commands stop, when a pace does not
// carry one of its latest nonces (the tester must hear it to pace it), and
// once it has sent its budget; it ends when the tester does, falls silent,
// or keeps it past peerBound.
type responder struct {
	cfg     Config
	verdict stopReason // stopComplete: accepted
	capRate float64
	started bool
	over    bool
	t0      time.Duration

	lastHeard, lastPace time.Duration

	// nonce is the current nonce its echoes and load carry, prevNonce the
	// one before; a pace must carry one of them. A new one is drawn every
	// nonceEvery.
	nonce, prevNonce uint32
	nextNonce        time.Duration
	nb               [4]byte
	// ignored counts the paces refused for their nonce.
	ignored int

	ph         phase // the phase the tester's pace commands name
	pace       pacer
	size       int
	seq        uint32
	sentBits   float64            // load sent so far, on the path
	spent      bool               // the budget is sent: no more load
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

// draw takes the next nonce from cfg.Rand, never 0 (the tester's before
// it has heard the peer). A source that fails gives the last one plus 1.
func (r *responder) draw(now time.Duration) {
	r.prevNonce = r.nonce
	if _, err := io.ReadFull(r.cfg.Rand, r.nb[:]); err != nil {
		le.PutUint32(r.nb[:], r.prevNonce+1)
	}
	r.nonce = max(le.Uint32(r.nb[:]), 1)
	r.nextNonce = now + nonceEvery
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
			return
		}
		r.draw(now)
		return
	}
	if now >= r.nextNonce {
		r.draw(now)
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
		bits := wireBits(r.size)
		if r.sentBits+bits > budgetBits(r.capRate) {
			r.spent = true
			r.pace.set(now, 0)
			break
		}
		r.seq++
		m := message{kind: kindLoad, id: r.cfg.ID, phase: r.ph, seq: r.seq,
			stamp: uint32((now - r.t0) / time.Microsecond), nonce: r.nonce, size: uint16(r.size)}
		r.cfg.Send(appendMessage(r.loadBuf[:0], m))
		r.pace.sent(now, r.size)
		r.sentBits += bits
	}
}

// fresh reports whether a pace's nonce is the peer's current or previous
// one: the tester heard the peer within the last 3 to 6 s.
func (r *responder) fresh(nonce uint32) bool {
	return nonce != 0 && (nonce == r.nonce || nonce == r.prevNonce)
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
		m.kind, m.nonce = kindEcho, r.nonce
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
		if !r.fresh(m.nonce) {
			r.ignored++ // not from a tester that hears this end: it neither paces nor keeps the test alive
			return true
		}
		r.lastHeard, r.lastPace = now, now
		r.ph, r.size = m.phase, int(m.size)
		if !r.spent {
			r.pace.set(now, min(float64(m.rate), r.capRate))
		}
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
	d := min(r.lastHeard+silentFor, r.t0+peerBound, r.nextNonce)
	if r.pace.rate > 0 {
		d = min(d, r.pace.next, r.lastPace+silentFor)
	}
	if r.cur != phaseNone {
		d = min(d, r.nextReport)
	}
	return d, true
}
