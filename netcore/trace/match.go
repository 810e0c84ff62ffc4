package trace

import (
	"net/netip"
	"time"
)

// maxHops is the highest hop limit the tracer sends with.
const maxHops = 30

// Probe timeouts follow the path (docs/path.md, "Timeouts"): a probe is
// lost after the largest of the link's own wait (its retry timeout, or
// the age of its oldest unacknowledged packet when that is longer: a
// smoothed round trip keeps its old value through a spike) and its hop's
// recent answers, within minTimeout and maxTimeout.
const (
	// minTimeout: a router answers ICMP from its slow path, often some
	// hundreds of ms behind its forwarding; a timeout below this would
	// count slow answers lost.
	minTimeout = 500 * time.Millisecond
	// maxTimeout: a probe that waits longer holds its hop limit (and an
	// untellable probe its link) for nothing; the socket keeps an
	// answer's report this long (netcore's probeAwait is more).
	maxTimeout = 2500 * time.Millisecond
)

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
	// Wait is the probe's timeout.
	Wait time.Duration
	// RTT is from the send to the answer; 0 when Lost or Void.
	RTT time.Duration
	// Addr is who answered; invalid when Lost or Void.
	Addr netip.Addr
	Lost bool
	// Void: the probe drew answers, none of which could count (a
	// header-only answer from an address its hop has not confirmed, or on
	// a link where header-only answers are being forged). It frees the
	// hop limit for its next probe and is in no figure.
	Void bool
	// Reached: the answer came from the peer (its probe answer, or the
	// peer's host saying the port is closed): the path ends at TTL.
	Reached bool
	// Held: a header-only answer. It frees the hop limit at once but
	// joins the path's figures only once its probe's time has passed with
	// no surplus header-only answer on the link (matcher.Released).
	Held bool
}

// matcher pairs answers with probes, and is where the tracer refuses to be
// fooled by forged ICMP: an answer counts only for one of the link's
// probes in flight, only within that probe's time (from its send to its
// timeout), and only at its hop limit. A link has at most one probe in
// flight per hop limit.
//
//   - An answer that quotes the probe (most routers quote the whole
//     datagram) counts when the quote carries the number and hop limit of
//     a probe in flight. The number is random (Tracer.Next), so an
//     off-path forger cannot quote it.
//   - An answer that quotes only the IP header and 8 bytes (no number)
//     counts for the probe in flight at the hop limit whose router is
//     known by that address and answers so (by the TTL the answer arrived
//     with when the address is known at two), or else for the link's one
//     untellable probe in flight — a probe to a hop not known yet: the
//     scheduler keeps at most one per link. A hop's address is learnt, or
//     changed, only by a numbered answer or by header-only answers from
//     the same new address to two probes. It never counts from an address
//     whose answers quoted probes before (a router that quotes does not
//     stop), never ends the path, and does not count at all on a link
//     that drew a header-only answer no probe could have drawn within
//     quietFor before it, or from it to the end of its probe's time: a
//     forger that floods is seen by its surplus. Such an answer frees its
//     hop limit at once but is held out of the path's figures until its
//     probe's time has passed clean (Released).
//   - The peer's own answer record counts when it echoes the number and
//     hop limit of a probe in flight.
//
// What matches nothing is counted.
type matcher struct {
	links     map[Link]*matchLink
	unmatched uint64
	// voided counts held answers dropped by a surplus after them.
	voided uint64
	// NextTimeout's answer, kept while known: every change to the
	// probes in flight or the held answers forgets it.
	next          time.Duration
	nextOK, known bool
}

// flight is one probe in flight.
type flight struct {
	num  uint32
	ttl  int
	sent time.Duration
	wait time.Duration
	// untold: an answer to it cannot be told apart by address or number
	// (its hop is not known). bare: it drew a header-only answer already;
	// a second one is surplus. heard: it drew an answer that could not
	// count, so its timeout is void, not a loss.
	untold, bare, heard bool
}

func (f *flight) inTime(at time.Duration) bool { return at >= f.sent && at-f.sent < f.wait }

type matchLink struct {
	peer netip.Addr
	fl   [maxHops]flight
	n    int // probes in flight: fl[:n]
	hops [maxHops + 1]knownHop
	// junkAt is when the link last drew a header-only answer that no
	// probe could have drawn (junk says it ever did).
	junkAt time.Duration
	junk   bool
	// held are the header-only answers whose probe's time has not passed
	// yet: at most one per probe.
	held []outcome
}

// knownHop is what the matcher knows of the router at one hop limit.
type knownHop struct {
	addr netip.Addr // the address it answers from, once confirmed
	// quotes: addr's answers quoted the probe. A header-only answer from
	// it is not its own.
	quotes bool
	// dist is how many hops its header-only answers travel back, from the
	// TTL they arrive with (0: not known).
	dist uint8
	// cand is an address other than addr that answered one probe here
	// with a header-only quote, candNum that probe's number: a second
	// probe answered from cand confirms it.
	cand    netip.Addr
	candNum uint32
}

// makeMatcher makes an empty matcher.
func makeMatcher() *matcher { return &matcher{links: map[Link]*matchLink{}} }

// AddLink starts matching for link, whose peer is at peer. Adding a link
// that is there already keeps it.
func (m *matcher) AddLink(link Link, peer netip.Addr) {
	if _, ok := m.links[link]; !ok {
		m.links[link] = &matchLink{peer: peer.Unmap()}
	}
}

// RemoveLink forgets link; its probes in flight are dropped uncounted.
func (m *matcher) RemoveLink(link Link) {
	delete(m.links, link)
	m.known = false
}

// Sent records a probe sent on link at hop limit ttl, lost after wait;
// untold says its answer cannot be told apart by address or number. It is
// refused (false) when the link is unknown, a probe is in flight at ttl
// already, an untellable one is in flight and this one is too, or ttl is
// out of range.
func (m *matcher) Sent(link Link, num uint32, ttl int, at, wait time.Duration, untold bool) bool {
	l := m.links[link]
	if l == nil || ttl < 1 || ttl > maxHops || l.n == len(l.fl) {
		return false
	}
	for i := range l.n {
		if f := &l.fl[i]; f.ttl == ttl || (untold && f.untold) {
			return false
		}
	}
	l.fl[l.n] = flight{num: num, ttl: ttl, sent: at, wait: wait, untold: untold}
	l.n++
	m.known = false
	return true
}

// InFlight reports how many probes link has waiting for their answers.
func (m *matcher) InFlight(link Link) int {
	if l := m.links[link]; l != nil {
		return l.n
	}
	return 0
}

// Unmatched is how many answers matched no probe so far.
func (m *matcher) Unmatched() uint64 { return m.unmatched }

// Answer matches an error-queue answer that arrived at at for a datagram
// sent to link's peer.
func (m *matcher) Answer(link Link, a Answer, at time.Duration) (outcome, bool) {
	m.known = false // it may land a probe, hold an answer or drop those held
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

// find is the index of the probe in flight with number num at hop limit
// ttl whose time at is within, -1 for none.
func (l *matchLink) find(num uint32, ttl int, at time.Duration) int {
	for i := range l.n {
		if f := &l.fl[i]; f.num == num && f.ttl == ttl && f.inTime(at) {
			return i
		}
	}
	return -1
}

// numbered matches an answer whose quote holds a probe.
func (m *matcher) numbered(l *matchLink, link Link, a Answer, at time.Duration) (outcome, bool) {
	i := l.find(a.Probe.Num, int(a.Probe.TTL), at)
	if i < 0 {
		return outcome{}, false
	}
	h := &l.hops[l.fl[i].ttl]
	h.addr, h.quotes, h.cand = a.Offender, true, netip.Addr{}
	if d := distOf(a.TTL); d != 0 {
		h.dist = d
	}
	o := l.land(link, i, at, a.Offender)
	o.Reached = a.Kind != kindTimeExceeded && a.Offender == l.peer
	return o, true
}

// distOf is how many hops an answer that arrived with IP TTL ttl
// travelled: its sender starts it at 64, 128 or 255 (the first of them at
// or above ttl), and each router on the way takes one. 0: not known.
func distOf(ttl uint8) uint8 {
	for _, start := range [...]int{64, 128, 255} {
		if int(ttl) <= start && ttl > 0 {
			return uint8(start - int(ttl) + 1)
		}
	}
	return 0
}

// target is the probe in flight a header-only answer from off, travelled
// dist hops back (0: not known), can be for, -1 for none:
//
//   - the probe at the hop limit whose router is confirmed at off and does
//     not quote (the one whose router's answers travel dist hops, among
//     several);
//   - else the link's untellable probe, unless dist is another probe's in
//     flight and not its own;
//   - else the link's one probe in flight, whatever its hop (its router
//     may have changed);
//
// ambiguous: several probes in flight could have drawn it and nothing
// tells which; it counts for none of them, and it is no surplus either.
func (l *matchLink) target(off netip.Addr, dist uint8, at time.Duration) (i int, ambiguous bool) {
	byAddr, untold, only, inTime := -1, -1, -1, 0
	for i := range l.n {
		f := &l.fl[i]
		if !f.inTime(at) {
			continue
		}
		inTime++
		only = i
		if h := &l.hops[f.ttl]; h.addr == off && !h.quotes {
			if byAddr < 0 || (dist != 0 && h.dist == dist) {
				byAddr = i
			}
		}
		if f.untold {
			untold = i
		}
	}
	switch {
	case byAddr >= 0:
		return byAddr, false
	case untold >= 0:
		if dist != 0 && l.hops[l.fl[untold].ttl].dist != dist {
			for i := range l.n {
				if f := &l.fl[i]; i != untold && f.inTime(at) && l.hops[f.ttl].dist == dist {
					return -1, true
				}
			}
		}
		return untold, false
	case inTime == 1:
		return only, false
	}
	return -1, inTime > 1
}

// headerOnly matches an answer that quotes no probe (matcher's doc).
func (m *matcher) headerOnly(l *matchLink, link Link, a Answer, at time.Duration) (outcome, bool) {
	off := a.Offender
	dist := distOf(a.TTL)
	i, ambiguous := l.target(off, dist, at)
	if ambiguous {
		return outcome{}, false
	}
	if i < 0 || l.fl[i].bare {
		m.noteJunk(l, at) // no probe in flight could have drawn it
		return outcome{}, false
	}
	f := &l.fl[i]
	f.bare = true
	h := &l.hops[f.ttl]
	switch {
	case l.junk && at < l.junkAt+quietFor:
		f.heard = true // header-only answers are being forged on this link
		return outcome{}, false
	case h.quotes && h.addr == off, l.stale(off, f.ttl):
		// Not this router's (it quotes), or a late answer from a hop
		// known at another hop limit: nothing this probe drew.
		m.noteJunk(l, at)
		return outcome{}, false
	case a.Kind != kindTimeExceeded && off == l.peer:
		f.heard = true // only a numbered answer ends the path
		return outcome{}, false
	case off == h.addr:
		h.cand = netip.Addr{} // the known router answers: the other was no change
	case off == h.cand && h.candNum != f.num:
		h.addr, h.quotes, h.cand = off, false, netip.Addr{}
	default:
		h.cand, h.candNum = off, f.num
		f.heard = true
		return outcome{}, false
	}
	if dist != 0 {
		h.dist = dist
	}
	o := l.land(link, i, at, off)
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
		k := 0
		for _, o := range l.held {
			if now-o.Sent >= o.Wait {
				dst = append(dst, o)
				m.known = false
				continue
			}
			l.held[k] = o
			k++
		}
		l.held = l.held[:k]
	}
	return dst
}

// Voided is how many held answers a surplus after them dropped.
func (m *matcher) Voided() uint64 { return m.voided }

// Reply matches the peer's answer record, which arrived at at on link.
func (m *matcher) Reply(link Link, p Probe, at time.Duration) (outcome, bool) {
	l := m.links[link]
	i := -1
	if l != nil && p.Answer {
		i = l.find(p.Num, int(p.TTL), at)
	}
	if i < 0 {
		m.unmatched++
		return outcome{}, false
	}
	o := l.land(link, i, at, l.peer)
	o.Reached = true
	m.known = false
	return o, true
}

// Timeout appends to dst the probes whose answer is overdue at now, each
// a loss at its hop limit (void when it drew only answers that could not
// count), and returns dst.
func (m *matcher) Timeout(now time.Duration, dst []outcome) []outcome {
	for id, l := range m.links {
		for i := 0; i < l.n; {
			f := l.fl[i]
			if now-f.sent < f.wait {
				i++
				continue
			}
			dst = append(dst, outcome{Link: id, Num: f.num, TTL: f.ttl, Sent: f.sent, Wait: f.wait, Lost: !f.heard, Void: f.heard})
			l.drop(i)
			m.known = false
		}
	}
	return dst
}

// NextTimeout is when the earliest probe in flight times out, or a held
// answer's probe's time ends: before then, Timeout and Released find
// nothing. The answer is kept until the probes or the held answers change.
func (m *matcher) NextTimeout() (time.Duration, bool) {
	if !m.known {
		m.next, m.nextOK = m.nextTimeout()
		m.known = true
	}
	return m.next, m.nextOK
}

// nextTimeout works NextTimeout out.
func (m *matcher) nextTimeout() (time.Duration, bool) {
	var next time.Duration
	ok := false
	for _, l := range m.links {
		for i := range l.n {
			if t := l.fl[i].sent + l.fl[i].wait; !ok || t < next {
				next, ok = t, true
			}
		}
		for _, o := range l.held {
			if t := o.Sent + o.Wait; !ok || t < next {
				next, ok = t, true
			}
		}
	}
	return next, ok
}

// stale reports whether off is a hop the link knows at another hop limit
// than ttl, and not at ttl. The peer is never stale: every hop limit from
// the path's length on reaches it.
func (l *matchLink) stale(off netip.Addr, ttl int) bool {
	if off == l.peer || l.hops[ttl].addr == off {
		return false
	}
	for t := 1; t <= maxHops; t++ {
		if t != ttl && l.hops[t].addr == off {
			return true
		}
	}
	return false
}

// land ends probe i in flight with an answer from addr.
func (l *matchLink) land(link Link, i int, at time.Duration, addr netip.Addr) outcome {
	f := l.fl[i]
	l.drop(i)
	return outcome{Link: link, Num: f.num, TTL: f.ttl, Sent: f.sent, Wait: f.wait, RTT: at - f.sent, Addr: addr}
}

// drop removes probe i from the flights.
func (l *matchLink) drop(i int) {
	l.n--
	l.fl[i] = l.fl[l.n]
}
