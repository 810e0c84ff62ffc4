package trace

import (
	"net/netip"
	"time"
)

// maxHops is the highest hop limit the tracer sends with.
const maxHops = 30

// defaultTimeout is how long a probe waits for its answer before it counts
// as lost: long enough for a router that answers ICMP slowly behind a full
// queue, short enough that a silent hop holds its link's one probe in
// flight for little time.
const defaultTimeout = 2 * time.Second

// outcome is what became of one probe: answered (by a router, or by the
// peer, Reached) or lost at its timeout.
type outcome struct {
	Link Link
	Num  uint32
	TTL  int
	Sent time.Duration
	// RTT is from the send to the answer; 0 when Lost.
	RTT time.Duration
	// Addr is who answered; invalid when Lost.
	Addr netip.Addr
	Lost bool
	// Reached: the answer came from the peer (its probe answer, or the
	// peer's host saying the port is closed): the path ends at TTL.
	Reached bool
}

// matcher pairs answers with probes. Each link has at most one probe in
// flight, so an answer whose quote holds no probe number (routers that
// quote only the IP header and 8 bytes) still belongs to exactly one
// probe: the one in flight on the link the answer names — unless the
// offender is a hop the link already knows at another hop limit, which
// makes it a late answer to a probe already counted lost (the peer, which
// answers at every hop limit past the path's length, excepted). When the
// quote holds the probe, its number must match. What matches nothing is
// counted.
type matcher struct {
	timeout   time.Duration
	links     map[Link]*matchLink
	unmatched uint64
}

type matchLink struct {
	peer   netip.Addr
	flying bool
	num    uint32
	ttl    int
	sent   time.Duration
	// hops is the last offender seen at each hop limit.
	hops [maxHops + 1]netip.Addr
}

// makeMatcher makes a matcher whose probes are lost after timeout
// (defaultTimeout when 0 or less).
func makeMatcher(timeout time.Duration) *matcher {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return &matcher{timeout: timeout, links: map[Link]*matchLink{}}
}

// AddLink starts matching for link, whose peer is at peer. Adding a link
// that is there already keeps it.
func (m *matcher) AddLink(link Link, peer netip.Addr) {
	if _, ok := m.links[link]; !ok {
		m.links[link] = &matchLink{peer: peer.Unmap()}
	}
}

// RemoveLink forgets link; a probe in flight on it is dropped uncounted.
func (m *matcher) RemoveLink(link Link) { delete(m.links, link) }

// Sent records a probe sent on link. It is refused (false) when the link
// is unknown, a probe is already in flight on it, or ttl is out of range.
func (m *matcher) Sent(link Link, num uint32, ttl int, at time.Duration) bool {
	l := m.links[link]
	if l == nil || l.flying || ttl < 1 || ttl > maxHops {
		return false
	}
	l.flying, l.num, l.ttl, l.sent = true, num, ttl, at
	return true
}

// InFlight reports whether link has a probe waiting for its answer.
func (m *matcher) InFlight(link Link) bool {
	l := m.links[link]
	return l != nil && l.flying
}

// Unmatched is how many answers matched no probe so far.
func (m *matcher) Unmatched() uint64 { return m.unmatched }

// Answer matches an error-queue answer that arrived at at for a datagram
// sent to link's peer.
func (m *matcher) Answer(link Link, a Answer, at time.Duration) (outcome, bool) {
	l := m.links[link]
	ok := l != nil && l.flying && at >= l.sent && a.Kind != kindOther
	if ok {
		switch a.Quote {
		case QuoteProbe:
			ok = a.Probe.Num == l.num
		case QuoteOther:
			ok = false
		default:
			ok = !l.stale(a.Offender)
		}
	}
	if !ok {
		m.unmatched++
		return outcome{}, false
	}
	o := l.land(link, at, a.Offender)
	o.Reached = a.Kind != kindTimeExceeded && a.Offender.IsValid() && a.Offender == l.peer
	return o, true
}

// Reply matches the peer's answer record, which arrived at at on link.
func (m *matcher) Reply(link Link, p Probe, at time.Duration) (outcome, bool) {
	l := m.links[link]
	if l == nil || !l.flying || !p.Answer || p.Num != l.num || int(p.TTL) != l.ttl || at < l.sent {
		m.unmatched++
		return outcome{}, false
	}
	o := l.land(link, at, l.peer)
	o.Reached = true
	return o, true
}

// Timeout appends to dst the probes whose answer is overdue at now, each
// a loss at its hop limit, and returns dst.
func (m *matcher) Timeout(now time.Duration, dst []outcome) []outcome {
	for id, l := range m.links {
		if l.flying && now-l.sent >= m.timeout {
			l.flying = false
			dst = append(dst, outcome{Link: id, Num: l.num, TTL: l.ttl, Sent: l.sent, Lost: true})
		}
	}
	return dst
}

// NextTimeout is when the earliest probe in flight times out.
func (m *matcher) NextTimeout() (time.Duration, bool) {
	var next time.Duration
	ok := false
	for _, l := range m.links {
		if l.flying && (!ok || l.sent+m.timeout < next) {
			next, ok = l.sent+m.timeout, true
		}
	}
	return next, ok
}

// stale reports whether off is a hop the link knows at another hop limit
// than its probe in flight, and not at that one. The peer is never stale:
// every hop limit from the path's length on reaches it.
func (l *matchLink) stale(off netip.Addr) bool {
	if !off.IsValid() || off == l.peer || l.hops[l.ttl] == off {
		return false
	}
	for ttl := 1; ttl <= maxHops; ttl++ {
		if ttl != l.ttl && l.hops[ttl] == off {
			return true
		}
	}
	return false
}

// land ends the probe in flight with an answer from addr.
func (l *matchLink) land(link Link, at time.Duration, addr netip.Addr) outcome {
	l.flying = false
	if addr.IsValid() {
		l.hops[l.ttl] = addr
	}
	return outcome{Link: link, Num: l.num, TTL: l.ttl, Sent: l.sent, RTT: at - l.sent, Addr: addr}
}
