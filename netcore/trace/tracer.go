package trace

import (
	"crypto/rand"
	"math"
	mrand "math/rand/v2"
	"net/netip"
	"time"
)

// Link names a traced link: netcore's PeerID of its peer. The tracer does
// not import netcore (netcore drives it), so it has a type of its own.
type Link uint16

// The link leaving its own baseline (docs/path.md, "The burst"): its last
// hop's answers leaveAfter times in a row above its baseline by its
// margin, or lost leaveAfter times in a row, make it burst for selfBurst,
// its baselines held, at most once every selfEvery.
const (
	leaveAfter = 2
	selfBurst  = time.Minute
	selfEvery  = 5 * time.Minute
)

// Tracer traces the links of one machine: the scheduler picks probes, the
// matcher pairs their answers, and a hopPath per link gathers the outcomes.
// Like netcore's Endpoint it is sans-I/O and owned by one goroutine.
type Tracer struct {
	m     *matcher
	s     *scheduler
	links map[Link]*tlink
	// nums draws the probes' numbers: a stream cipher's output under a
	// key from the system's random source, so that nobody who has not
	// seen a probe can quote its number (the matcher's first rule).
	nums *mrand.ChaCha8
	// wait is the link's own wait at now (its retry timeout, or the age
	// of its oldest unacknowledged packet when longer), nil when not
	// known.
	wait    func(link Link, now time.Duration) time.Duration
	now     time.Duration
	expired []outcome
	// idleAt is when Next last found no probe to send (idle: ever).
	idleAt time.Duration
	idle   bool
	// baseDue is the earliest time a link's baselines are due to be
	// worked out again (refreshBase); before it, and before a probe
	// times out, a Tick has nothing to do.
	baseDue time.Duration
}

// tlink is one traced link's path and what holds it.
type tlink struct {
	path hopPath
	// holdUntil: the link's baselines stay as they are until then (an
	// incident on it is open).
	holdUntil time.Duration
	// selfAt is when the link last burst for leaving its baseline (self:
	// ever).
	selfAt time.Duration
	self   bool
	// The last Result, worked out at resAt from the path at its version
	// resVer (resultFor, resultFresh).
	res    Result
	resAt  time.Duration
	resVer uint64
	resOK  bool
}

// resultFor is how long a Result stands with no new outcome (the recent
// answers and the window age by the second), resultFresh how long it
// stands with one: readers ask ten times a second, and a judgement a
// quarter of a second late is none the worse.
const (
	resultFor   = time.Second
	resultFresh = 250 * time.Millisecond
)

// New makes a Tracer.
func New() *Tracer {
	var seed [32]byte
	rand.Read(seed[:]) // never fails (crypto/rand)
	return newSeeded(seed)
}

// newSeeded is New with the numbers drawn from seed: the same seed, the
// same numbers (tests).
func newSeeded(seed [32]byte) *Tracer {
	return &Tracer{m: makeMatcher(), s: makeScheduler(), links: map[Link]*tlink{}, nums: mrand.NewChaCha8(seed)}
}

// SetWait gives the tracer each link's own wait at a moment: its retry
// timeout, or the age of its oldest unacknowledged packet when that is
// longer. A probe's timeout is at least that (docs/path.md, "Timeouts").
func (t *Tracer) SetWait(wait func(link Link, now time.Duration) time.Duration) { t.wait = wait }

// AddLink starts tracing link, whose peer is at peer; adding a traced link
// again keeps what it gathered.
func (t *Tracer) AddLink(link Link, peer netip.Addr) {
	t.m.AddLink(link, peer)
	t.s.AddLink(link, peer)
	if t.links[link] == nil {
		t.links[link] = &tlink{}
		t.baseDue = math.MinInt64 // a new path's baselines are due at once
	}
	t.links[link].path.peer = peer.Unmap()
}

// RemoveLink stops tracing link and forgets its path.
func (t *Tracer) RemoveLink(link Link) {
	t.m.RemoveLink(link)
	t.s.RemoveLink(link)
	delete(t.links, link)
}

// Pin makes link burst, a round a second, for as long as on holds: the
// Path view shows it, or --trace names it. Its baselines go on as usual.
func (t *Tracer) Pin(link Link, on bool) { t.s.Pin(link, on) }

// Burst makes link burst, a round a second, until until; with hold its
// baselines stay as they are until then (an incident on the link is open:
// a long spike must not become the normal).
func (t *Tracer) Burst(link Link, now, until time.Duration, hold bool) {
	l := t.links[link]
	if l == nil {
		return
	}
	if hold {
		if now >= l.holdUntil {
			l.path.based = false // fresh when the hold begins
			l.path.refreshBase(now, false)
			t.baseDue = min(t.baseDue, l.path.baseAt+baseEvery)
		}
		l.holdUntil = max(l.holdUntil, until)
	}
	t.s.Burst(link, now, until)
}

// Bursting reports whether link is looked at closely at now.
func (t *Tracer) Bursting(link Link, now time.Duration) bool {
	l := t.s.link(link)
	return l != nil && l.bursting(now)
}

// Next is the probe to send at now, if any: the caller sends its record
// (AppendProbe) to link's peer with hop limit p.TTL.
func (t *Tracer) Next(now time.Duration) (link Link, p Probe, ok bool) {
	t.now = max(t.now, now)
	link, ttl, untold, ok := t.s.Next(now)
	if !ok {
		t.idleAt, t.idle = now, true
		return 0, Probe{}, false
	}
	num := uint32(t.nums.Uint64())
	if !t.m.Sent(link, num, ttl, now, t.timeout(link, ttl), untold) {
		t.s.Cancel(link, ttl)
		return 0, Probe{}, false
	}
	return link, Probe{Num: num, TTL: uint8(ttl)}, true
}

// timeout is how long a probe to link's hop at ttl waits for its answer:
// the largest of the link's own wait and the recent answers of the hop and
// of every hop before it (a probe crosses what theirs crossed; the slowest
// of them, half again), within minTimeout and maxTimeout.
func (t *Tracer) timeout(link Link, ttl int) time.Duration {
	w := minTimeout
	if t.wait != nil {
		w = max(w, t.wait(link, t.now))
	}
	if l := t.links[link]; l != nil {
		for h := ttl; h >= 1; h-- {
			if slow, ok := l.path.hops[h].slowest(t.now); ok {
				w = max(w, slow+slow/2)
			}
		}
	}
	return min(w, maxTimeout)
}

// slowest is the slowest of h's recent answers.
func (h *pathHop) slowest(now time.Duration) (time.Duration, bool) {
	var slow time.Duration
	found := 0
	for k := 0; k < h.n && found < recentN; k++ {
		s := h.at(k)
		if now-s.at > recentAge {
			break
		}
		if s.rtt >= 0 {
			slow = max(slow, s.rtt)
			found++
		}
	}
	return slow, found > 0
}

// Answer takes in an error-queue answer for a datagram sent to link's
// peer, read at at; false when it counted for no probe (the matcher's
// rules).
func (t *Tracer) Answer(link Link, a Answer, at time.Duration) bool {
	o, ok := t.m.Answer(link, a, at)
	if ok {
		t.land(o)
	}
	return ok
}

// Reply takes in the peer's answer record, arrived at at on link.
func (t *Tracer) Reply(link Link, p Probe, at time.Duration) bool {
	o, ok := t.m.Reply(link, p, at)
	if ok {
		t.land(o)
	}
	return ok
}

// Tick counts the probes overdue at now as lost, adds to the paths the
// header-only answers whose probe's time has passed clean, and works the
// baselines out anew where due. Most Ticks come before any of that: they
// return at once.
func (t *Tracer) Tick(now time.Duration) {
	t.now = max(t.now, now)
	if lost, ok := t.m.NextTimeout(); (!ok || now < lost) && now < t.baseDue {
		return
	}
	t.expired = t.m.Timeout(now, t.expired[:0])
	for _, o := range t.expired {
		t.land(o)
	}
	t.expired = t.m.Released(now, t.expired[:0])
	for _, o := range t.expired {
		t.add(o)
	}
	t.baseDue = math.MaxInt64
	for _, l := range t.links {
		l.path.refreshBase(now, now < l.holdUntil)
		t.baseDue = min(t.baseDue, l.path.baseAt+baseEvery)
	}
}

// NextDeadline is when the Tracer next has work (a probe to send or one to
// time out), false when none. The state it reads is that of the latest
// time the Tracer was given (now may be earlier: a caller that asks from 0
// gets a due probe's time as it is). A send time at or before the moment
// Next last found nothing to send is put off by the machine's spacing, so
// that no driver can spin on it. The scheduler and the matcher keep their
// answers until they may change (scheduler.NextAt, matcher.NextTimeout):
// asked on every wake-up, it looks at no link.
func (t *Tracer) NextDeadline(now time.Duration) (time.Duration, bool) {
	send, okS := t.s.NextAt(max(now, t.now))
	lost, okL := t.m.NextTimeout()
	return t.earliest(send, okS, lost, okL)
}

// earliest is the deadline of a next send and a next timeout (each with
// whether there is one), the send put off by the spacing while Next finds
// nothing.
func (t *Tracer) earliest(send time.Duration, okS bool, lost time.Duration, okL bool) (time.Duration, bool) {
	if okS && t.idle && send <= t.idleAt {
		send = t.idleAt + rateInterval
	}
	switch {
	case okS && okL:
		return min(send, lost), true
	case okS:
		return send, true
	}
	return lost, okL
}

// Result is link's analysis, false when the link is not traced.
func (t *Tracer) Result(link Link) (Result, bool) {
	l := t.links[link]
	if l == nil {
		return Result{}, false
	}
	if !l.resOK || t.now < l.resAt || t.now-l.resAt >= resultFor || (l.resVer != l.path.ver && t.now-l.resAt >= resultFresh) {
		l.res, l.resAt, l.resVer, l.resOK = l.path.Result(t.now), t.now, l.path.ver, true
	}
	r := l.res
	r.Bursting = t.Bursting(link, t.now)
	return r, true
}

// Mark starts a new stretch of link's trace (hopPath.Mark); false when the
// link is not traced.
func (t *Tracer) Mark(link Link) bool {
	l := t.links[link]
	if l != nil {
		l.path.Mark()
	}
	return l != nil
}

// ResultSinceMark is link's analysis of the stretch since its last Mark.
func (t *Tracer) ResultSinceMark(link Link) (Result, bool) {
	l := t.links[link]
	if l == nil {
		return Result{}, false
	}
	return l.path.ResultSinceMark(), true
}

// Unmatched is how many answers matched no probe.
func (t *Tracer) Unmatched() uint64 { return t.m.Unmatched() }

// land takes in what became of a probe: the scheduler at once, the paths
// too unless the answer is held (Tick adds it once released).
func (t *Tracer) land(o outcome) {
	t.now = max(t.now, o.Sent+o.RTT)
	t.s.Done(o)
	if !o.Held {
		t.add(o)
	}
}

// add puts an outcome in its link's path and in the path of every other
// link whose hop at that hop limit is the same router (the scheduler
// probes a router once a round for all of them), and bursts the link when
// its last hop leaves its baseline.
func (t *Tracer) add(o outcome) {
	l := t.links[o.Link]
	if l == nil {
		return
	}
	l.path.Add(o)
	t.leaving(o.Link, l, o.TTL)
	if o.Reached || o.Void {
		return
	}
	sl := t.s.link(o.Link)
	if sl == nil || (sl.end > 0 && o.TTL >= sl.end) {
		return
	}
	addr := sl.hops[o.TTL].addr
	if !addr.IsValid() {
		return
	}
	for _, other := range t.s.links {
		if other == sl || !other.hops[o.TTL].tell || other.hops[o.TTL].addr != addr || (other.end > 0 && o.TTL >= other.end) {
			continue
		}
		if ol := t.links[other.id]; ol != nil {
			shared := o
			shared.Link = other.id
			ol.path.Add(shared)
			t.s.Shared(other.id, shared)
		}
	}
}

// leaving bursts link when its last hop, just added to at ttl, left its
// baseline.
func (t *Tracer) leaving(link Link, l *tlink, ttl int) {
	p := &l.path
	if p.end == 0 || ttl != p.end || (l.self && t.now-l.selfAt < selfEvery) {
		return
	}
	h := &p.hops[ttl]
	if !h.baseOK || (h.above < leaveAfter && h.lostRun < leaveAfter) {
		return
	}
	l.self, l.selfAt = true, t.now
	t.Burst(link, t.now, t.now+selfBurst, true)
}
