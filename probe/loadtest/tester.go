package loadtest

import (
	"slices"
	"time"
)

// Probe bounds: a test sends at most maxProbes probes (one every 10 ms for
// its longest run), and keeps at most the samples each phase can draw.
const (
	maxProbes    = int(testBound / probeEvery)
	idleSamples  = int(idleFor/probeEvery) + 8
	gradeSamples = int(holdFor/probeEvery) + 8
)

// tester is the tester's end: it asks, times the round trip with probes,
// sends the upload load, asks the peer for the download load, runs both
// ramps and grades the holds.
type tester struct {
	cfg     Config
	capRate float64 // bit/s: the tester's cap, then the granted one
	started bool
	over    bool
	ph      phase
	t0      time.Duration
	at      [numPhases]time.Duration // when each phase began

	lastHeard, lastReport time.Duration
	nextAsk               time.Duration

	nextProbe time.Duration
	probes    int
	sentAt    []time.Duration // by probe number
	echoed    []uint64        // a bit per probe number
	rtts      [numPhases][]time.Duration

	pace       pacer   // the upload load
	sentBits   float64 // upload load sent so far, on the path
	nonce      uint32  // the peer's latest nonce heard, which pace commands carry
	seq        uint32
	up, down   ramp
	reports    [numPhases]window  // the peer's reports of the upload load
	recv       [numPhases]counter // the download load
	recvWin    [numPhases]window
	filling    bool    // the both phase's settling second
	paceRate   float64 // the download rate last asked for
	nextPace   time.Duration
	ctl        [32]byte
	loadBuf    [maxMessage]byte
	finishedAt time.Duration
}

func newTester(cfg Config) *tester {
	t := &tester{cfg: cfg, capRate: float64(cfg.Cap)}
	t.sentAt = make([]time.Duration, maxProbes)
	t.echoed = make([]uint64, (maxProbes+63)/64)
	t.rtts[phaseIdle] = make([]time.Duration, 0, idleSamples)
	for _, p := range []phase{phaseUpHold, phaseDownHold, phaseBoth} {
		t.rtts[p] = make([]time.Duration, 0, gradeSamples)
		t.reports[p].settle, t.recvWin[p].settle = settleFor, settleFor
	}
	return t
}

func (t *tester) send(m message) {
	m.id = t.cfg.ID
	t.cfg.Send(appendMessage(t.ctl[:0], m))
}

func (t *tester) stamp(now time.Duration) uint32 { return uint32((now - t.t0) / time.Microsecond) }

func (t *tester) tick(now time.Duration) {
	if t.over {
		return
	}
	if !t.started {
		t.started, t.t0 = true, now
		if t.cfg.Relayed {
			t.finish(now, stopRelayed)
			return
		}
		t.nextAsk = now
	}
	if t.ph == phaseNone {
		t.ask(now)
		return
	}
	if now-t.lastHeard >= silentFor || (t.ph.upload() && now-max(t.lastReport, t.at[t.ph]) >= silentFor) {
		t.stop(now, stopPeerLeft)
		return
	}
	t.advance(now)
	if t.over {
		return
	}
	t.sendProbes(now)
	for i := 0; i < maxBurst && t.pace.due(now); i++ {
		bits := wireBits(maxMessage)
		if t.sentBits+bits > budgetBits(t.capRate) {
			t.pace.set(now, 0) // the budget is sent: the rest of the phase goes without load
			break
		}
		t.seq++
		m := message{kind: kindLoad, id: t.cfg.ID, phase: t.ph, seq: t.seq, stamp: t.stamp(now), size: maxMessage}
		t.cfg.Send(appendMessage(t.loadBuf[:0], m))
		t.pace.sent(now, maxMessage)
		t.sentBits += bits
	}
	if t.ph.download() && now >= t.nextPace {
		t.send(message{kind: kindPace, phase: t.ph, rate: uint64(t.paceRate), size: maxMessage, nonce: t.nonce})
		t.nextPace = now + paceEvery
	}
}

// ask sends the request until the peer answers, and gives up after askFor.
func (t *tester) ask(now time.Duration) {
	if now-t.t0 >= askFor {
		t.finish(now, stopPeerLeft)
		return
	}
	if now >= t.nextAsk {
		t.send(message{kind: kindRequest, version: protoVersion, rate: uint64(t.capRate)})
		t.nextAsk = now + askEvery
	}
}

// advance moves through the phases whose time has come; every phase ends
// by time, so the loop runs at most once per phase.
func (t *tester) advance(now time.Duration) {
	for range numPhases {
		since := now - t.at[t.ph]
		switch {
		case t.ph == phaseIdle && since >= idleFor:
			t.enter(now, phaseUpRamp)
		case t.ph == phaseUpRamp && now >= t.up.stepEnd:
			t.up.step(now, t.reports[phaseUpRamp].last, t.reports[phaseUpRamp].any)
			t.pace.set(now, t.up.rate)
			if t.up.done {
				t.enter(now, phaseUpHold)
			}
		case t.ph == phaseUpHold && since >= holdFor:
			t.enter(now, phaseDownRamp)
		case t.ph == phaseDownRamp && now >= t.down.stepEnd:
			c := t.recv[phaseDownRamp]
			t.down.step(now, sample{at: now, bytes: c.s.bytes, count: c.s.count}, true)
			t.setPace(now, t.down.rate)
			if t.down.done {
				t.enter(now, phaseDownHold)
			}
		case t.ph == phaseDownHold && since >= holdFor:
			t.enter(now, phaseBoth)
		case t.ph == phaseBoth && since >= bothFor:
			t.stop(now, stopComplete)
			return
		case t.ph == phaseBoth && since >= settleFor && t.filling:
			t.filling = false
			t.pace.set(now, t.up.hold)
		default:
			return
		}
	}
}

func (t *tester) setPace(now time.Duration, rate float64) {
	if rate != t.paceRate {
		t.paceRate, t.nextPace = rate, now
	}
}

// enter starts phase p at now. A download phase's pace command goes out
// at once, so the peer's load names the new phase from the start.
func (t *tester) enter(now time.Duration, p phase) {
	t.ph, t.at[p] = p, now
	t.nextPace = now
	switch p {
	case phaseIdle:
		t.nextProbe = now
	case phaseUpRamp:
		t.up = newRamp(now, t.capRate)
		t.pace.set(now, t.up.rate)
	case phaseUpHold:
		t.pace.set(now, t.up.hold)
	case phaseDownRamp:
		t.pace.set(now, 0)
		t.down = newRamp(now, t.capRate)
		t.setPace(now, t.down.rate)
	case phaseDownHold:
		t.setPace(now, t.down.hold)
	case phaseBoth:
		// The upload queue drained while the peer sent: the settling
		// second fills it again above the hold rate.
		t.filling = true
		t.pace.set(now, min(rampFactor*t.up.hold, t.capRate))
		t.paceRate = t.down.hold
	}
}

func (t *tester) sendProbes(now time.Duration) {
	if now < t.nextProbe || t.probes >= maxProbes {
		return
	}
	n := t.probes
	t.probes++
	t.sentAt[n] = now
	t.send(message{kind: kindProbe, seq: uint32(n), stamp: t.stamp(now)})
	t.nextProbe += probeEvery
	if t.nextProbe <= now {
		t.nextProbe = now + probeEvery
	}
}

func (t *tester) receive(now time.Duration, b []byte) bool {
	m, err := decode(b)
	if err != nil || m.id != t.cfg.ID {
		return false
	}
	if t.over || !t.started {
		return true
	}
	switch m.kind {
	case kindAnswer:
		if t.ph != phaseNone {
			return true
		}
		if m.reason != stopComplete {
			t.finish(now, m.reason)
			return true
		}
		t.capRate = min(t.capRate, float64(m.rate))
		t.lastHeard = now
		t.enter(now, phaseIdle)
	case kindEcho:
		t.echo(now, m)
	case kindReport:
		if t.ph != phaseNone {
			t.lastHeard, t.lastReport = now, now
			t.reports[m.phase].add(sample{at: time.Duration(m.elapsed) * time.Microsecond, bytes: m.bytes, count: m.count, highest: m.highest})
		}
	case kindLoad:
		if t.ph != phaseNone && m.phase.download() {
			t.lastHeard, t.nonce = now, m.nonce
			c := &t.recv[m.phase]
			c.add(now, m.seq, int(m.size))
			t.recvWin[m.phase].add(c.s)
		}
	case kindStop:
		why := m.reason
		if why == stopComplete {
			why = stopCancelled
		}
		t.finish(now, why)
	}
	return true
}

// echo books a probe's round trip under the phase it was sent in; only
// the echo of a probe sent and not echoed yet, stamp intact, counts.
func (t *tester) echo(now time.Duration, m message) {
	n := int(m.seq)
	if t.ph == phaseNone || n >= t.probes || t.echoed[n/64]&(1<<(n%64)) != 0 || m.stamp != t.stamp(t.sentAt[n]) {
		return
	}
	t.echoed[n/64] |= 1 << (n % 64)
	t.lastHeard, t.nonce = now, m.nonce
	sent := t.sentAt[n]
	p := t.ph
	for p > phaseIdle && t.at[p] > sent {
		p--
	}
	if p != phaseIdle && p != phaseUpHold && p != phaseDownHold && p != phaseBoth {
		return
	}
	if p != phaseIdle && sent < t.at[p]+settleFor {
		return
	}
	if len(t.rtts[p]) < cap(t.rtts[p]) {
		t.rtts[p] = append(t.rtts[p], now-sent)
	}
}

// stop tells the peer the test is over and ends it.
func (t *tester) stop(now time.Duration, why stopReason) {
	if t.over {
		return
	}
	if t.started && !t.cfg.Relayed {
		t.send(message{kind: kindStop, reason: why})
	}
	t.finish(now, why)
}

func (t *tester) finish(now time.Duration, why stopReason) {
	if t.over {
		return
	}
	t.over, t.finishedAt = true, now
	t.pace.set(now, 0)
	if why == stopComplete {
		t.ph = phaseDone
	}
	t.cfg.Done(t.result(why))
}

func (t *tester) deadline() (time.Duration, bool) {
	if t.over {
		return 0, false
	}
	if !t.started {
		return 0, true
	}
	if t.ph == phaseNone {
		return min(t.nextAsk, t.t0+askFor), true
	}
	d := t.lastHeard + silentFor
	if t.probes < maxProbes {
		d = min(d, t.nextProbe)
	}
	if t.ph.upload() {
		d = min(d, max(t.lastReport, t.at[t.ph])+silentFor)
	}
	if t.pace.rate > 0 {
		d = min(d, t.pace.next)
	}
	if t.ph.download() {
		d = min(d, t.nextPace)
	}
	switch t.ph {
	case phaseIdle:
		d = min(d, t.at[t.ph]+idleFor)
	case phaseUpRamp:
		d = min(d, t.up.stepEnd)
	case phaseDownRamp:
		d = min(d, t.down.stepEnd)
	case phaseUpHold, phaseDownHold:
		d = min(d, t.at[t.ph]+holdFor)
	case phaseBoth:
		d = min(d, t.at[t.ph]+bothFor)
		if t.filling {
			d = min(d, t.at[t.ph]+settleFor)
		}
	}
	return d, true
}

// result is the test's outcome so far: the idle round trip once the idle
// phase is over, each direction once its hold is over, both once the test
// is complete.
func (t *tester) result(why stopReason) Result {
	r := Result{Stopped: stoppedBy(why)}
	if t.ph > phaseNone {
		r.Cap = int64(t.capRate)
	}
	if t.ph <= phaseIdle || len(t.rtts[phaseIdle]) == 0 {
		return r
	}
	idleRTTs := t.rtts[phaseIdle]
	slices.Sort(idleRTTs)
	idle := median(idleRTTs)
	r.IdleRTTMS = msOf(idle)
	if t.ph > phaseUpHold {
		r.Upload = direction(t.rtts[phaseUpHold], idle, &t.reports[phaseUpHold], t.up.capped)
	}
	if t.ph > phaseDownHold {
		r.Download = direction(t.rtts[phaseDownHold], idle, &t.recvWin[phaseDownHold], t.down.capped)
	}
	if t.ph > phaseBoth {
		b := &BothResult{}
		_, b.AddedMS, b.P90AddedMS, _ = added(t.rtts[phaseBoth], idle)
		b.Loss = bothLoss(&t.reports[phaseBoth], &t.recvWin[phaseBoth])
		r.Both = b
	}
	return r
}

func direction(rtts []time.Duration, idle time.Duration, w *window, capped bool) *DirResult {
	d := &DirResult{Capped: capped}
	d.Added, d.AddedMS, d.P90AddedMS, d.Grade = added(rtts, idle)
	d.HasAdded = d.AddedMS != nil
	if rate, ok := w.rate(); ok {
		d.Mbps = round(rate/1e6, 10)
	}
	if loss, ok := w.loss(); ok {
		d.Loss = round(loss, 1e4)
	}
	return d
}

// bothLoss is the load lost in the both phase, the two directions'
// datagrams counted together.
func bothLoss(up, down *window) *float64 {
	var span, got float64
	for _, w := range []*window{up, down} {
		if _, ok := w.loss(); ok {
			span += float64(w.last.highest - w.base.highest)
			got += float64(w.last.count - w.base.count)
		}
	}
	if span == 0 {
		return nil
	}
	return round(min(max(1-got/span, 0), 1), 1e4)
}
