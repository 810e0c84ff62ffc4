package trace

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"net/netip"
	"time"
)

// Link names a traced link: netcore's PeerID of its peer. The tracer does
// not import netcore (netcore drives it), so it has a type of its own.
type Link uint16

// Tracer traces the links of one machine: the scheduler picks probes, the
// matcher pairs their answers, and a hopPath per link gathers the outcomes.
// Like netcore's Endpoint it is sans-I/O and owned by one goroutine.
type Tracer struct {
	m     *matcher
	s     *scheduler
	paths map[Link]*hopPath
	// nums draws the probes' numbers: a stream cipher's output under a
	// key from the system's random source, so that nobody who has not
	// seen a probe can quote its number (the matcher's first rule).
	nums    *mrand.ChaCha8
	expired []outcome
}

// New makes a Tracer whose probes are lost after timeout (defaultTimeout
// when 0 or less).
func New(timeout time.Duration) *Tracer {
	var seed [32]byte
	rand.Read(seed[:]) // never fails (crypto/rand)
	return newSeeded(timeout, seed)
}

// newSeeded is New with the numbers drawn from seed: the same seed, the
// same numbers (tests).
func newSeeded(timeout time.Duration, seed [32]byte) *Tracer {
	return &Tracer{m: makeMatcher(timeout), s: makeScheduler(), paths: map[Link]*hopPath{}, nums: mrand.NewChaCha8(seed)}
}

// AddLink starts tracing link, whose peer is at peer; adding a traced link
// again keeps what it gathered.
func (t *Tracer) AddLink(link Link, peer netip.Addr) {
	t.m.AddLink(link, peer)
	t.s.AddLink(link, peer)
	if t.paths[link] == nil {
		t.paths[link] = &hopPath{}
	}
	t.paths[link].peer = peer.Unmap()
}

// RemoveLink stops tracing link and forgets its path.
func (t *Tracer) RemoveLink(link Link) {
	t.m.RemoveLink(link)
	t.s.RemoveLink(link)
	delete(t.paths, link)
}

// Next is the probe to send at now, if any: the caller sends its record
// (AppendProbe) to link's peer with hop limit p.TTL.
func (t *Tracer) Next(now time.Duration) (link Link, p Probe, ok bool) {
	link, ttl, ok := t.s.Next(now)
	if !ok {
		return 0, Probe{}, false
	}
	num := uint32(t.nums.Uint64())
	if !t.m.Sent(link, num, ttl, now) {
		t.s.Cancel(link)
		return 0, Probe{}, false
	}
	return link, Probe{Num: num, TTL: uint8(ttl)}, true
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

// Tick counts the probes overdue at now as lost, and adds to the paths the
// header-only answers whose probe's time has passed clean.
func (t *Tracer) Tick(now time.Duration) {
	t.expired = t.m.Timeout(now, t.expired[:0])
	for _, o := range t.expired {
		t.land(o)
	}
	t.expired = t.m.Released(now, t.expired[:0])
	for _, o := range t.expired {
		if p := t.paths[o.Link]; p != nil {
			p.Add(o)
		}
	}
}

// NextDeadline is when the Tracer next has work (a probe to send or one to
// time out), false when none.
func (t *Tracer) NextDeadline(now time.Duration) (time.Duration, bool) {
	send, okS := t.s.NextAt(now)
	lost, okL := t.m.NextTimeout()
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
	p := t.paths[link]
	if p == nil {
		return Result{}, false
	}
	return p.Result(), true
}

// Mark starts a new stretch of link's trace (hopPath.Mark); false when the
// link is not traced.
func (t *Tracer) Mark(link Link) bool {
	p := t.paths[link]
	if p != nil {
		p.Mark()
	}
	return p != nil
}

// ResultSinceMark is link's analysis of the stretch since its last Mark.
func (t *Tracer) ResultSinceMark(link Link) (Result, bool) {
	p := t.paths[link]
	if p == nil {
		return Result{}, false
	}
	return p.ResultSinceMark(), true
}

// Unmatched is how many answers matched no probe.
func (t *Tracer) Unmatched() uint64 { return t.m.Unmatched() }

// land takes in what became of a probe: the scheduler at once, the path
// too unless the answer is held (Tick adds it once released).
func (t *Tracer) land(o outcome) {
	t.s.Done(o)
	if p := t.paths[o.Link]; p != nil && !o.Held {
		p.Add(o)
	}
}
