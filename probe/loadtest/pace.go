package loadtest

import "time"

// The test's timing and its ramp rule (docs/load-test.md says why each is
// so).
const (
	idleFor   = 2 * time.Second
	rampMax   = 3 * time.Second
	holdFor   = 5 * time.Second
	bothFor   = 5 * time.Second
	settleFor = time.Second // the first second of each hold is not graded

	// askFor is how long the tester waits for an answer, asking again
	// every askEvery.
	askFor   = 2 * time.Second
	askEvery = 250 * time.Millisecond

	probeEvery  = 10 * time.Millisecond
	reportEvery = 50 * time.Millisecond
	paceEvery   = 100 * time.Millisecond
	// silentFor ends a test whose other end has been silent this long (no
	// message at all, or, while the tester's load flows, no report).
	silentFor = time.Second
	// peerBound is how long a peer serves a test at most from its answer,
	// on its own clock, whatever the tester sends: the tester's phases
	// after the answer take at most testBound - askFor, 23 s.
	peerBound = testBound
	// nonceEvery is how often the peer draws a new nonce; a pace command
	// must carry the current one or the one before, so the tester proves
	// it has heard the peer within the last 3 to 6 s (longer than a deep
	// queue delays the echo that carried it).
	nonceEvery = 3 * time.Second

	rampStep   = 250 * time.Millisecond
	rampFactor = 1.5  // the rate's rise per step
	rampFlat   = 1.05 // less than +5 % over two steps: the bottleneck
	holdOver   = 1.10 // the hold runs 10 % above the bottleneck
	// cappedAt: a ramp that ends at the cap with the received rate this
	// close to it never found a bottleneck below the cap.
	cappedAt = 0.95
	// minJudged is the fewest load datagrams a ramp step must receive for
	// its rate to count: fewer are too coarse to tell +5 % from noise.
	minJudged = 8
	// minStart is the lowest starting rate (unless the cap is lower); the
	// ramp starts at cap/64, which reaches the cap in about 2.6 s.
	minStart     = 1e6
	startDivisor = 64

	// DefaultCap, in bit/s, is the cap per direction when Config leaves it 0.
	DefaultCap = 50e6

	// maxBurst is the most datagrams one Tick sends; more due wait for
	// the next Tick, which NextDeadline asks for at once.
	maxBurst = 64
	// maxLag is how far behind its schedule the pacer catches up after a
	// late wake-up: a burst of at most maxLag's worth of load. A busy
	// machine's timers fire ten milliseconds late and more; a pacer that
	// caught up less would send well under its rate there (at 5 Mbit/s a
	// datagram is due every 2.2 ms), and a ramp would read the sender's
	// own lateness as the line's rate.
	maxLag = 25 * time.Millisecond
)

// testBound is the longest a test can take by its phases: the answer, the
// idle phase, two ramps at their longest, two holds and both.
const testBound = askFor + idleFor + 2*rampMax + 2*holdFor + bothFor

// loadedFor is the longest one direction carries load: its ramp, its hold
// and both. Each end sends at most its cap for that long: a budget of
// cap × 13 s of load on the path each way (81.25 MB at 50 Mbit/s), which
// the end enforces whatever the other asks.
const loadedFor = rampMax + holdFor + bothFor

// Longest is the longest a test takes by its phases, 25 s: what a
// machine tells of a test's length before it runs.
const Longest = testBound

// MaxBytes is the most load one end of a test sends at capBits (bit/s),
// in bytes on the path: 13 s at the cap, 81.25 MB at 50 Mbit/s. Each end
// receives at most as much from the other.
func MaxBytes(capBits int64) float64 { return budgetBits(float64(capBits)) / 8 }

// budgetBits is the most load, in bits on the path, one end sends at
// capRate.
func budgetBits(capRate float64) float64 { return capRate * loadedFor.Seconds() }

// wireBits is what a load datagram of size message bytes costs on the
// path: its message and the carrier around it.
func wireBits(size int) float64 { return float64(8 * (size + carrierOverhead)) }

// pacer spaces load datagrams so that their wire bits stay at rate.
type pacer struct {
	rate float64 // bit/s; 0 sends nothing
	next time.Duration
}

// set changes the rate; a pacer that was stopped starts at now.
func (p *pacer) set(now time.Duration, rate float64) {
	if p.rate <= 0 && rate > 0 {
		p.next = now
	}
	p.rate = rate
}

func (p *pacer) due(now time.Duration) bool { return p.rate > 0 && now >= p.next }

// sent books a datagram of size message bytes sent at now.
func (p *pacer) sent(now time.Duration, size int) {
	p.next = max(p.next, now-maxLag) + time.Duration(wireBits(size)/p.rate*float64(time.Second))
}

// sample is a receiver's running totals of one phase's load at one moment.
type sample struct {
	at      time.Duration // since the phase's first arrival
	bytes   uint64        // message bytes
	count   uint32        // datagrams
	highest uint32        // highest datagram number
}

func (s sample) bits() float64 {
	return float64(8*s.bytes) + float64(8*carrierOverhead)*float64(s.count)
}

// counter is what a receiver has of one phase's load.
type counter struct {
	s     sample
	first time.Duration // the first arrival
	any   bool
}

// add counts a load datagram arriving at now; its sample's at is then
// the time since the first.
func (c *counter) add(now time.Duration, seq uint32, size int) {
	if !c.any {
		c.any, c.first = true, now
	}
	c.s.at = now - c.first
	c.s.bytes += uint64(size)
	c.s.count++
	c.s.highest = max(c.s.highest, seq)
}

// window is the graded part of a phase's load as the receiver saw it:
// from the first sample settle past the first arrival to the latest.
type window struct {
	settle     time.Duration
	base, last sample
	hasBase    bool
	any        bool
}

func (w *window) add(s sample) {
	if !w.hasBase && s.at >= w.settle {
		w.base, w.hasBase = s, true
	}
	if !w.any || s.count >= w.last.count {
		w.last, w.any = s, true
	}
}

// rate is the received rate over the window, in bit/s.
func (w *window) rate() (float64, bool) {
	if !w.hasBase || w.last.at <= w.base.at || w.last.count < w.base.count {
		return 0, false
	}
	return (w.last.bits() - w.base.bits()) / (w.last.at - w.base.at).Seconds(), true
}

// loss is the share of the datagrams sent in the window that never
// arrived: numbers skipped over against numbers received.
func (w *window) loss() (float64, bool) {
	if !w.hasBase || w.last.highest <= w.base.highest || w.last.count < w.base.count {
		return 0, false
	}
	span, got := float64(w.last.highest-w.base.highest), float64(w.last.count-w.base.count)
	return min(max(1-got/span, 0), 1), true
}

// stepRate is one ramp step's received rate.
type stepRate struct {
	rate  float64
	known bool
}

// ramp raises a rate step by step until the received rate stops rising or
// the cap is reached, and then names the hold rate.
type ramp struct {
	capRate, rate float64
	start         time.Duration
	stepEnd       time.Duration
	hist          [2]stepRate // the two steps before the latest
	best          float64     // the highest received rate of a judged step
	prev          sample
	havePrev      bool
	done, capped  bool
	hold          float64
}

func newRamp(now time.Duration, capRate float64) ramp {
	start := min(capRate, max(capRate/startDivisor, minStart))
	return ramp{capRate: capRate, rate: start, start: now, stepEnd: now + rampStep}
}

// step ends a step at now with the receiver's latest totals s (ok: there
// are any): it judges the step and either ends the ramp or raises the
// rate for the next.
func (r *ramp) step(now time.Duration, s sample, ok bool) {
	cur := stepRate{}
	if ok && r.havePrev && s.at > r.prev.at && s.count >= r.prev.count+minJudged {
		cur = stepRate{rate: (s.bits() - r.prev.bits()) / (s.at - r.prev.at).Seconds(), known: true}
		r.best = max(r.best, cur.rate)
	}
	if ok {
		r.prev, r.havePrev = s, true
	}
	two := r.hist[0]
	r.hist[0], r.hist[1] = r.hist[1], cur
	flat := cur.known && two.known && two.rate > 0 && cur.rate < rampFlat*two.rate
	if flat || now-r.start >= rampMax {
		r.finish()
		return
	}
	r.rate = min(r.rate*rampFactor, r.capRate)
	r.stepEnd += rampStep
}

// finish names the hold rate: 110 % of the best received rate, or the cap
// when the ramp reached the cap and the receiver got about all of it.
func (r *ramp) finish() {
	r.done = true
	switch {
	case r.rate >= r.capRate && r.best >= cappedAt*r.capRate:
		r.capped, r.hold = true, r.capRate
	case r.best > 0:
		r.hold = min(holdOver*r.best, r.capRate)
	default:
		r.hold = r.rate
	}
}
