package trace

import (
	"net/netip"
	"time"
)

// Budget. The tracer is a guest on routers it does not own: any one router
// hears at most one probe a second from this machine, however many traced
// links cross it, and the machine sends at most maxRate probes a second in
// all.
const (
	// perHopInterval is the least time between two probes to one hop
	// address, across all links.
	perHopInterval = time.Second
	// maxRate is the most probes a second the machine sends, all links
	// together: one every rateInterval.
	maxRate      = 20
	rateInterval = time.Second / maxRate
	// silentGap is how many hop limits past the farthest that answered the
	// tracer explores while the peer has not answered: a peer that never
	// answers probes (one that does not know the record) must not send
	// the tracer to hop 30 on every path.
	silentGap = 5
)

// scheduler says which link and hop limit to probe next. A hop whose
// address is known shares its budget with every other link through it. A
// hop not known yet (not answered yet, or silent) may be any router: it
// shares the budget of its hop limit with every link's unknown hop there,
// and waits for the budget of the addresses other links know at that hop
// limit and of its own peer's address — a machine's paths share their
// first routers, and the router before a NATed peer answers from the
// peer's own address. Each
// link has one probe in flight at a time (the matcher relies on it). A
// link's probes explore one hop limit further each time the farthest has
// an outcome, and stop at the hop limit the peer answered at.
type scheduler struct {
	links    []*schedLink // in round-robin order
	turn     int          // index of the link to try first
	addrLast map[netip.Addr]time.Duration
	// unknownLast is when a hop not known yet was last probed, by hop
	// limit, across links.
	unknownLast [maxHops + 1]time.Duration
	unknownAny  [maxHops + 1]bool
	lastSend    time.Duration
	sentAny     bool
}

type schedLink struct {
	id       Link
	peer     netip.Addr
	flying   bool
	reach    int // highest hop limit to probe now
	end      int // hop limit the peer answered at; 0 while unknown
	answered int // farthest hop limit that answered
	hops     [maxHops + 1]schedHop
}

type schedHop struct {
	addr   netip.Addr
	last   time.Duration
	probed bool
}

// makeScheduler makes an empty scheduler.
func makeScheduler() *scheduler {
	return &scheduler{addrLast: map[netip.Addr]time.Duration{}}
}

// AddLink starts tracing link (the user views it, or the diagnosis blames
// it). Adding a link that is traced already keeps its state.
func (s *scheduler) AddLink(link Link, peer netip.Addr) {
	if s.find(link) >= 0 {
		return
	}
	s.links = append(s.links, &schedLink{id: link, peer: peer.Unmap(), reach: 1})
}

// RemoveLink stops tracing link. The addresses its probes went to keep
// their budget: another link through them waits as long as it would have.
func (s *scheduler) RemoveLink(link Link) {
	i := s.find(link)
	if i < 0 {
		return
	}
	s.links = append(s.links[:i], s.links[i+1:]...)
	if s.turn > i {
		s.turn--
	}
	if s.turn >= len(s.links) {
		s.turn = 0
	}
}

func (s *scheduler) find(link Link) int {
	for i, l := range s.links {
		if l.id == link {
			return i
		}
	}
	return -1
}

// Next picks the probe to send at now, if the budget allows one, and
// counts it as sent: the caller sends it (and tells the matcher) or
// reports it lost through Done. Of the links' candidates, the one that has
// waited longest since its own last probe goes, the link whose turn it is
// first among equals: links that share a router's budget take turns in
// it, instead of the first to ask taking it every time.
func (s *scheduler) Next(now time.Duration) (link Link, ttl int, ok bool) {
	if s.sentAny && now-s.lastSend < rateInterval {
		return 0, 0, false
	}
	var best *schedLink
	bestTTL, bestOwn, bestAt := 0, time.Duration(0), 0
	for k := range s.links {
		i := (s.turn + k) % len(s.links)
		if ttl, own := s.pick(s.links[i], now); ttl > 0 && (best == nil || own < bestOwn) {
			best, bestTTL, bestOwn, bestAt = s.links[i], ttl, own, i
		}
	}
	if best == nil {
		return 0, 0, false
	}
	s.turn = (bestAt + 1) % len(s.links)
	s.commit(best, bestTTL, now)
	return best.id, bestTTL, true
}

// pick is the hop limit link l probes at now, 0 for none, and when it
// last probed it itself (-1: never): of those whose budget allows a probe,
// the one that has waited longest since its own last probe, never probed
// first, nearest first among equals. The wait is the hop limit's own, not
// its address's: two hop limits of one link may share an address (the
// peer's NAT router answers from the peer's public address, one hop before
// the peer), and by the address's budget they would always tie, the
// nearer winning every time.
func (s *scheduler) pick(l *schedLink, now time.Duration) (int, time.Duration) {
	if l.flying {
		return 0, 0
	}
	best, bestOwn := 0, time.Duration(0)
	for ttl := 1; ttl <= l.reach; ttl++ {
		if last, probed := s.lastOf(l, ttl); probed && now-last < perHopInterval {
			continue
		}
		own := time.Duration(-1)
		if h := l.hops[ttl]; h.probed {
			own = h.last
		}
		if best == 0 || own < bestOwn {
			best, bestOwn = ttl, own
		}
	}
	return best, bestOwn
}

// lastOf is when the hop at ttl of l was last probed, by any link: by its
// address when known, else by whatever it may be (the scheduler's doc).
func (s *scheduler) lastOf(l *schedLink, ttl int) (time.Duration, bool) {
	h := l.hops[ttl]
	last, probed := h.last, h.probed
	later := func(at time.Duration, ok bool) {
		if ok && (!probed || at > last) {
			last, probed = at, true
		}
	}
	// A probe another link sent at this hop limit to a hop it did not
	// know yet may have reached this very router: it counts too.
	later(s.unknownLast[ttl], s.unknownAny[ttl])
	if a := s.addrOf(l, ttl); a.IsValid() {
		at, ok := s.addrLast[a]
		later(at, ok)
		return last, probed
	}
	at, ok := s.addrLast[l.peer]
	later(at, ok)
	for _, o := range s.links {
		if a := s.addrOf(o, ttl); o != l && a.IsValid() {
			at, ok := s.addrLast[a]
			later(at, ok)
		}
	}
	return last, probed
}

// addrOf is the known address of the hop at ttl: the peer at and past the
// end, else the last that answered there.
func (s *scheduler) addrOf(l *schedLink, ttl int) netip.Addr {
	if l.end > 0 && ttl >= l.end {
		return l.peer
	}
	return l.hops[ttl].addr
}

func (s *scheduler) commit(l *schedLink, ttl int, now time.Duration) {
	l.flying = true
	l.hops[ttl].last, l.hops[ttl].probed = now, true
	if a := s.addrOf(l, ttl); a.IsValid() {
		s.addrLast[a] = now
	} else {
		s.unknownLast[ttl], s.unknownAny[ttl] = now, true
	}
	s.lastSend, s.sentAny = now, true
	s.prune(now)
}

// prune bounds the address table: entries whose interval has passed
// budget nothing any more.
func (s *scheduler) prune(now time.Duration) {
	if len(s.addrLast) < 4*maxHops*max(1, len(s.links)) {
		return
	}
	for a, last := range s.addrLast {
		if now-last >= perHopInterval {
			delete(s.addrLast, a)
		}
	}
}

// Done takes in what became of the probe in flight on o.Link: the link may
// send again, the hop's address is learnt, and the path's end and the
// farthest hop limit to explore move. A void outcome teaches no address
// and moves no end, but the exploration goes on past it as past a loss.
func (s *scheduler) Done(o outcome) {
	i := s.find(o.Link)
	if i < 0 || o.TTL < 1 || o.TTL > maxHops {
		return
	}
	l := s.links[i]
	l.flying = false
	if !o.Lost && !o.Void {
		l.answered = max(l.answered, o.TTL)
		if o.Addr.IsValid() {
			if !o.Reached {
				l.hops[o.TTL].addr = o.Addr
			}
			if last, ok := s.addrLast[o.Addr]; !ok || o.Sent > last {
				s.addrLast[o.Addr] = o.Sent
			}
		}
	}
	l.end = endAfter(l.end, o)
	switch {
	case l.end > 0:
		l.reach = l.end
	case o.TTL >= l.reach && l.reach < maxHops && l.reach < l.answered+silentGap:
		l.reach++
	}
}

// Cancel frees link for its next probe when the one Next picked was not
// sent after all; its budget stays spent.
func (s *scheduler) Cancel(link Link) {
	if i := s.find(link); i >= 0 {
		s.links[i].flying = false
	}
}

// NextAt is the earliest time from now on at which Next may have a probe,
// false when every link waits for an answer (or none is traced).
func (s *scheduler) NextAt(now time.Duration) (time.Duration, bool) {
	next, ok := time.Duration(0), false
	for _, l := range s.links {
		if l.flying {
			continue
		}
		for ttl := 1; ttl <= l.reach; ttl++ {
			at := now
			if last, probed := s.lastOf(l, ttl); probed {
				at = max(now, last+perHopInterval)
			}
			if !ok || at < next {
				next, ok = at, true
			}
		}
	}
	if ok && s.sentAny {
		next = max(next, s.lastSend+rateInterval)
	}
	return next, ok
}

// endAfter is the hop limit the path ends at after outcome o, given end
// before it (0: unknown). The peer answering at a lower hop limit shortens
// the path; a router answering at or past the end means the path grew.
func endAfter(end int, o outcome) int {
	switch {
	case o.Reached && (end == 0 || o.TTL < end):
		return o.TTL
	case o.Reached || o.Lost || o.Void:
		return end
	case end > 0 && o.TTL >= end:
		return 0
	}
	return end
}
