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

// quietFor is how long after a header-only answer that no probe could
// have drawn the link's header-only answers still count for nothing. Each
// probe draws at most one answer, and an off-path forger cannot see when a
// probe leaves: to land one answer in a probe's time it must send many,
// and the rest arrive when no probe, or an answered one, is in flight.
const quietFor = 10 * time.Second

// outcome is what became of one probe: answered (by a router, or by the
// peer, Reached), lost at its timeout, or void — it drew only answers that
// could not count, so it is neither an answer nor a loss.
type outcome struct {
	Link Link
	Num  uint32
	TTL  int
	Sent time.Duration
	// RTT is from the send to the answer; 0 when Lost or Void.
	RTT time.Duration
	// Addr is who answered; invalid when Lost or Void.
	Addr netip.Addr
	Lost bool
	// Void: the probe drew answers, none of which could count (a
	// header-only answer from an address its hop has not confirmed, or on
	// a link where header-only answers are being forged). It frees the
	// link for its next probe and is in no figure.
	Void bool
	// Reached: the answer came from the peer (its probe answer, or the
	// peer's host saying the port is closed): the path ends at TTL.
	Reached bool
	// Held: a header-only answer. It frees the link at once but joins the
	// path's figures only once its probe's time has passed with no
	// surplus header-only answer on the link (matcher.Released).
	Held bool
}

// matcher pairs answers with probes, and is where the tracer refuses to be
// fooled by forged ICMP: an answer counts only for the link's probe in
// flight, only within that probe's time (from its send to its timeout),
// and only at its hop limit.
//
//   - An answer that quotes the probe (most routers quote the whole
//     datagram) counts when the quote carries the probe's number and hop
//     limit. The number is random (Tracer.Next), so an off-path forger
//     cannot quote it.
//   - An answer that quotes only the IP header and 8 bytes (no number)
//     counts only when it comes from the address the hop is known by; a
//     hop's address is learnt, or changed, only by a numbered answer or by
//     header-only answers from the same new address to two probes. It
//     never counts from an address whose answers quoted probes before (a
//     router that quotes does not stop), never ends the path, and does not
//     count at all on a link that drew a header-only answer no probe could
//     have drawn within quietFor before it, or from it to the end of its
//     probe's time: a forger that floods is seen by its surplus. Such an
//     answer frees the link at once but is held out of the path's figures
//     until its probe's time has passed clean (Released).
//   - The peer's own answer record counts when it echoes the probe's
//     number and hop limit.
//
// What matches nothing is counted.
type matcher struct {
	timeout   time.Duration
	links     map[Link]*matchLink
	unmatched uint64
	// voided counts held answers dropped by a surplus after them.
	voided uint64
}

type matchLink struct {
	peer   netip.Addr
	flying bool
	num    uint32
	ttl    int
	sent   time.Duration
	// bare: the probe in flight drew a header-only answer already; a
	// second one is surplus. heard: it drew an answer that could not
	// count, so its timeout is void, not a loss.
	bare, heard bool
	hops        [maxHops + 1]knownHop
	// junkAt is when the link last drew a header-only answer that no
	// probe could have drawn (junk says it ever did).
	junkAt time.Duration
	junk   bool
	// held are the header-only answers whose probe's time has not passed
	// yet, oldest first: at most one per probe, and a link sends at most
	// one probe a second to each hop limit.
	held []outcome
}

// knownHop is what the matcher knows of the router at one hop limit.
type knownHop struct {
	addr netip.Addr // the address it answers from, once confirmed
	// quotes: addr's answers quoted the probe. A header-only answer from
	// it is not its own.
	quotes bool
	// cand is an address other than addr that answered one probe here
	// with a header-only quote, candNum that probe's number: a second
	// probe answered from cand confirms it.
	cand    netip.Addr
	candNum uint32
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
	l.bare, l.heard = false, false
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
	var o outcome
	ok := false
	if l != nil && a.Kind != kindOther && a.Offender.IsValid() {
		switch a.Quote {
		case QuoteProbe:
			o, ok = m.numbered(l, link, a, at)
		case QuoteNone:
			o, ok = m.headerOnly(l, link, a, at)
		}
	}
	if !ok {
		m.unmatched++
	}
	return o, ok
}

// numbered matches an answer whose quote holds a probe.
func (m *matcher) numbered(l *matchLink, link Link, a Answer, at time.Duration) (outcome, bool) {
	if !l.inTime(at, m.timeout) || a.Probe.Num != l.num || int(a.Probe.TTL) != l.ttl {
		return outcome{}, false
	}
	h := &l.hops[l.ttl]
	h.addr, h.quotes, h.cand = a.Offender, true, netip.Addr{}
	o := l.land(link, at, a.Offender)
	o.Reached = a.Kind != kindTimeExceeded && a.Offender == l.peer
	return o, true
}

// headerOnly matches an answer that quotes no probe (matcher's doc).
func (m *matcher) headerOnly(l *matchLink, link Link, a Answer, at time.Duration) (outcome, bool) {
	off := a.Offender
	if !l.inTime(at, m.timeout) || l.bare {
		m.noteJunk(l, at) // no probe in flight could have drawn it
		return outcome{}, false
	}
	l.bare = true
	h := &l.hops[l.ttl]
	switch {
	case l.junk && at < l.junkAt+quietFor:
		l.heard = true // header-only answers are being forged on this link
		return outcome{}, false
	case h.quotes && h.addr == off, l.stale(off):
		// Not this router's (it quotes), or a late answer from a hop
		// known at another hop limit: nothing this probe drew.
		m.noteJunk(l, at)
		return outcome{}, false
	case a.Kind != kindTimeExceeded && off == l.peer:
		l.heard = true // only a numbered answer ends the path
		return outcome{}, false
	case off == h.addr:
		h.cand = netip.Addr{} // the known router answers: the other was no change
	case off == h.cand && h.candNum != l.num:
		h.addr, h.quotes, h.cand = off, false, netip.Addr{}
	default:
		h.cand, h.candNum = off, l.num
		l.heard = true
		return outcome{}, false
	}
	o := l.land(link, at, off)
	o.Held = true
	l.held = append(l.held, o)
	return o, true
}

// noteJunk takes in a header-only answer that no probe could have drawn:
// the link's header-only answers count for nothing for quietFor, and
// those held are dropped.
func (m *matcher) noteJunk(l *matchLink, at time.Duration) {
	if !l.junk || at > l.junkAt {
		l.junkAt = at
	}
	l.junk = true
	m.voided += uint64(len(l.held))
	l.held = l.held[:0]
}

// Released appends to dst the held answers whose probe's time has passed
// by now with no surplus after them, for the path's figures.
func (m *matcher) Released(now time.Duration, dst []outcome) []outcome {
	for _, l := range m.links {
		n := 0
		for _, o := range l.held {
			if now-o.Sent < m.timeout {
				break
			}
			dst = append(dst, o)
			n++
		}
		if n > 0 {
			l.held = append(l.held[:0], l.held[n:]...)
		}
	}
	return dst
}

// Voided is how many held answers a surplus after them dropped.
func (m *matcher) Voided() uint64 { return m.voided }

// Reply matches the peer's answer record, which arrived at at on link.
func (m *matcher) Reply(link Link, p Probe, at time.Duration) (outcome, bool) {
	l := m.links[link]
	if l == nil || !p.Answer || !l.inTime(at, m.timeout) || p.Num != l.num || int(p.TTL) != l.ttl {
		m.unmatched++
		return outcome{}, false
	}
	o := l.land(link, at, l.peer)
	o.Reached = true
	return o, true
}

// Timeout appends to dst the probes whose answer is overdue at now, each
// a loss at its hop limit (void when it drew only answers that could not
// count), and returns dst.
func (m *matcher) Timeout(now time.Duration, dst []outcome) []outcome {
	for id, l := range m.links {
		if l.flying && now-l.sent >= m.timeout {
			l.flying = false
			dst = append(dst, outcome{Link: id, Num: l.num, TTL: l.ttl, Sent: l.sent, Lost: !l.heard, Void: l.heard})
		}
	}
	return dst
}

// NextTimeout is when the earliest probe in flight times out, or a held
// answer's probe's time ends.
func (m *matcher) NextTimeout() (time.Duration, bool) {
	var next time.Duration
	ok := false
	for _, l := range m.links {
		if l.flying && (!ok || l.sent+m.timeout < next) {
			next, ok = l.sent+m.timeout, true
		}
		if len(l.held) > 0 && (!ok || l.held[0].Sent+m.timeout < next) {
			next, ok = l.held[0].Sent+m.timeout, true
		}
	}
	return next, ok
}

// inTime: a probe is in flight and at is within its time, from its send
// to its timeout.
func (l *matchLink) inTime(at, timeout time.Duration) bool {
	return l.flying && at >= l.sent && at-l.sent < timeout
}

// stale reports whether off is a hop the link knows at another hop limit
// than its probe in flight, and not at that one. The peer is never stale:
// every hop limit from the path's length on reaches it.
func (l *matchLink) stale(off netip.Addr) bool {
	if off == l.peer || l.hops[l.ttl].addr == off {
		return false
	}
	for ttl := 1; ttl <= maxHops; ttl++ {
		if ttl != l.ttl && l.hops[ttl].addr == off {
			return true
		}
	}
	return false
}

// land ends the probe in flight with an answer from addr.
func (l *matchLink) land(link Link, at time.Duration, addr netip.Addr) outcome {
	l.flying = false
	return outcome{Link: link, Num: l.num, TTL: l.ttl, Sent: l.sent, RTT: at - l.sent, Addr: addr}
}
