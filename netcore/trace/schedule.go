package trace

import (
	"math"
	"net/netip"
	"time"
)

// Budget. The tracer is a guest on routers it does not own: any one router
// hears at most one probe a second from this machine, however many traced
// links cross it, and the machine sends at most maxRate probes a second in
// all (docs/path.md, "The schedule").
const (
	// perHopInterval is the least time between two probes to one hop
	// address, across all links.
	perHopInterval = time.Second
	// maxRate is the most probes a second the machine sends, all links
	// together: one every rateInterval.
	maxRate      = 20
	rateInterval = time.Second / maxRate
	// baselineRate is the share of maxRate the baseline rounds of every
	// link together plan for: the rest is the bursts' (a bursting link's
	// probes go before any baseline probe).
	baselineRate = 10
	// burstPeriod is a bursting link's round: every hop once a second, the
	// most the per-address budget allows.
	burstPeriod = time.Second
	// baselineMin and baselineMax bound the baseline round: one every
	// hops/baselineRate seconds, counted over every baseline link, a hop
	// that several links cross once.
	baselineMin = 2 * time.Second
	baselineMax = 30 * time.Second
	// silentRounds: a hop that never answered and missed this many rounds
	// in a row is silent; one that answered before, lostRounds (a lossy
	// hop loses three in a row now and then; ten, at a quarter lost, one
	// time in a million). A silent hop is probed once every silentEvery,
	// and its probes are untellable again (its router may have changed).
	silentRounds = 3
	lostRounds   = 10
	silentEvery  = 10 * time.Second
	// silentGap is how many hop limits past the farthest that answered the
	// tracer explores while the peer has not answered: a peer that never
	// answers probes (one that does not know the record) must not send
	// the tracer to hop 30 on every path.
	silentGap = 5
)

// scheduler says which link and hop limit to probe next.
//
// Each link is probed in rounds: every hop limit from 1 to the peer's (or,
// while the peer has not answered, the farthest explored) once a round, a
// round every second while the link bursts and every basePeriod otherwise.
// A round's probes go as the budget allows, several in flight at once, so a
// hop that does not answer holds no other back. Within a round a hop is
// left out when
//
//   - another link probed its address since the round began: the answer
//     serves every link through it (Tracer.land shares it);
//   - it is silent (missed silentRounds rounds in a row) and was probed
//     within silentEvery;
//   - its answer could not be told apart from another's (an unknown hop,
//     which may answer quoting only headers) while the link has such a
//     probe in flight already: at most one untellable probe per link.
//
// A hop whose address is known shares its budget with every other link
// through it. A hop not known yet (not answered yet, or silent) may be any
// router: it shares the budget of its hop limit with every link's unknown
// hop there, and waits for the budget of the addresses other links know at
// that hop limit and of its own peer's address — a machine's paths share
// their first routers, and the router before a NATed peer answers from the
// peer's own address. A link whose path is a single hop (the peer answered
// at hop limit 1) is not probed at all: one hop can place nothing.
type scheduler struct {
	links    []*schedLink // in round-robin order
	turn     int          // index of the link to try first
	addrLast map[netip.Addr]addrUse
	// unknownLast is when a hop not known yet was last probed, by hop
	// limit, across links.
	unknownLast [maxHops + 1]time.Duration
	unknownAny  [maxHops + 1]bool
	// knownLast is when a known address at a hop limit was last probed,
	// by any link, those removed since included.
	knownLast [maxHops + 1]time.Duration
	knownAny  [maxHops + 1]bool
	lastSend  time.Duration
	sentAny   bool
	// basePeriod is the baseline round, planned from the baseline links'
	// hops (plan); planned is false when it needs planning again.
	basePeriod time.Duration
	planned    bool
	scratch    []netip.Addr // plan's, reused
	// gen counts the changes to the state Next and NextAt read; time
	// passing is none. The answers kept below stand while it stays.
	gen uint64
	// NextAt's answer (atNext, atOK), worked out at gen atGen: it holds
	// for every now from atFrom until before atUntil.
	atGen           uint64
	atFrom, atUntil time.Duration
	atNext          time.Duration
	atOK            bool
	// A Next that found nothing at quietFrom, at gen quietGen, leaves
	// every round as it is: until before quietUntil, while gen stays,
	// another finds nothing and changes nothing (quiet). quietMulti:
	// some link has more than one hop, so that Next would plan the
	// baseline round if it is not planned.
	quietGen              uint64
	quietFrom, quietUntil time.Duration
	quietMulti            bool
}

type schedLink struct {
	id       Link
	peer     netip.Addr
	reach    int // highest hop limit to probe now
	end      int // hop limit the peer answered at; 0 while unknown
	answered int // farthest hop limit that answered
	hops     [maxHops + 1]schedHop
	// flying has bit ttl set for each hop limit with a probe in flight;
	// untold: one of them is untellable (untoldTTL).
	flying    uint64
	untold    bool
	untoldTTL int
	// The round: when it began and which hop limits it probed or left
	// out (bit ttl).
	roundAt time.Duration
	roundOn bool
	done    uint64
	// The burst: pinned (the Path view, --trace) or until burstUntil.
	pinned     bool
	burstUntil time.Duration
	// spent is the probe to a hop not known yet with no router answering
	// past it, which spent the peer's budget (it may have reached the
	// peer), and the budget before it: a router's answer to it gives it
	// back.
	spent spentPeer
}

// spentPeer is a probe that spent the peer's budget: its hop limit (0:
// none), when, and the peer's budget before it.
type spentPeer struct {
	ttl     int
	at      time.Duration
	prev    addrUse
	hadPrev bool
}

// addrUse is an address's last probe: when, by which link, at which hop
// limit.
type addrUse struct {
	at  time.Duration
	by  Link
	ttl int
}

type schedHop struct {
	addr   netip.Addr
	last   time.Duration
	probed bool
	// tell: the hop's answers can be told apart from other hops' — it
	// quotes the probe, answers from a confirmed address, or is the peer.
	tell bool
	// missed counts the rounds in a row its probe went unanswered;
	// heard says it ever answered.
	missed int
	heard  bool
}

// silent: the hop missed enough rounds in a row to be left out of most.
func (h *schedHop) silent() bool {
	return h.missed >= silentRounds && (!h.heard || h.missed >= lostRounds)
}

// makeScheduler makes an empty scheduler.
func makeScheduler() *scheduler {
	return &scheduler{addrLast: map[netip.Addr]addrUse{}, basePeriod: baselineMin, gen: 1}
}

// AddLink starts tracing link. Adding a link that is traced already keeps
// its state.
func (s *scheduler) AddLink(link Link, peer netip.Addr) {
	if s.find(link) >= 0 {
		return
	}
	s.links = append(s.links, &schedLink{id: link, peer: peer.Unmap(), reach: 1})
	s.planned = false
	s.gen++
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
	s.planned = false
	s.gen++
}

func (s *scheduler) find(link Link) int {
	for i, l := range s.links {
		if l.id == link {
			return i
		}
	}
	return -1
}

func (s *scheduler) link(id Link) *schedLink {
	if i := s.find(id); i >= 0 {
		return s.links[i]
	}
	return nil
}

// Pin makes link burst for as long as on holds (the Path view shows it, or
// --trace names it).
func (s *scheduler) Pin(link Link, on bool) {
	if l := s.link(link); l != nil && l.pinned != on {
		if on {
			l.roundOn = false // the first round starts at once
		}
		l.pinned = on
		s.planned = false
		s.gen++
	}
}

// Burst makes link burst until until; a link that was not bursting starts
// a round at once.
func (s *scheduler) Burst(link Link, now, until time.Duration) {
	l := s.link(link)
	if l == nil || until <= l.burstUntil {
		return
	}
	if !l.bursting(now) {
		l.roundOn = false
		s.planned = false
	}
	l.burstUntil = until
	s.gen++
}

func (l *schedLink) bursting(now time.Duration) bool { return l.pinned || now < l.burstUntil }

// oneHop: the peer answered at hop limit 1.
func (l *schedLink) oneHop() bool { return l.end == 1 }

// period is l's round at now.
func (s *scheduler) period(l *schedLink, now time.Duration) time.Duration {
	if l.bursting(now) {
		return burstPeriod
	}
	if !s.planned {
		s.plan(now)
	}
	return s.basePeriod
}

// plan works out the baseline round from the hops the baseline links'
// rounds hold, each address once, silent hops left out: one every
// baselineRate-th of a second, within baselineMin and baselineMax.
func (s *scheduler) plan(now time.Duration) {
	s.scratch = s.scratch[:0]
	unknown := 0
	for _, l := range s.links {
		if l.oneHop() || l.bursting(now) {
			continue
		}
		for ttl := 1; ttl <= l.reach; ttl++ {
			if l.hops[ttl].silent() {
				continue
			}
			a := s.addrOf(l, ttl)
			if !a.IsValid() {
				unknown++
				continue
			}
			seen := false
			for _, b := range s.scratch {
				if b == a {
					seen = true
					break
				}
			}
			if !seen {
				s.scratch = append(s.scratch, a)
			}
		}
	}
	n := len(s.scratch) + unknown
	s.basePeriod = min(max(time.Duration(n)*time.Second/baselineRate, baselineMin), baselineMax)
	s.planned = true
}

// Next picks the probe to send at now, if the budget allows one, and
// counts it as sent: the caller sends it (and tells the matcher) or
// cancels it (Cancel). untold says its answer cannot be told apart from
// another hop's by address or number: the matcher takes it so. Of the
// links' candidates, a bursting link's go first; then the hop that has
// waited longest since its own last probe, the link whose turn it is
// first among equals: links that share a router's budget take turns in
// it, instead of the first to ask taking it every time. While quiet, Next
// finds what the last one found (nothing) without looking at the links.
func (s *scheduler) Next(now time.Duration) (link Link, ttl int, untold, ok bool) {
	if s.sentAny && now-s.lastSend < rateInterval {
		return 0, 0, false, false
	}
	if s.quiet(now) {
		return 0, 0, false, false
	}
	var best *schedLink
	bestTTL, bestOwn, bestAt, bestBurst := 0, time.Duration(0), 0, false
	quiet, multi := time.Duration(math.MaxInt64), false
	for k := range s.links {
		i := (s.turn + k) % len(s.links)
		l := s.links[i]
		if l.oneHop() {
			continue
		}
		multi = true
		s.startRound(l, now)
		ttl, own, later := s.pick(l, now, true)
		quiet = min(quiet, later, l.roundAt+s.leastPeriod(l, now))
		if ttl == 0 {
			continue
		}
		burst := l.bursting(now)
		if best == nil || (burst && !bestBurst) || (burst == bestBurst && own < bestOwn) {
			best, bestTTL, bestOwn, bestAt, bestBurst = l, ttl, own, i, burst
		}
	}
	if best == nil {
		// Every round has begun and marked the hops it leaves out: until
		// a round ends or a hop's budget allows a probe, a Next finds
		// nothing and changes nothing, unless the state changes first.
		s.quietGen, s.quietFrom, s.quietUntil, s.quietMulti = s.gen, now, quiet, multi
		return 0, 0, false, false
	}
	s.turn = (bestAt + 1) % len(s.links)
	untold = !s.tellable(best, bestTTL)
	s.commit(best, bestTTL, untold, now)
	return best.id, bestTTL, untold, true
}

// startRound begins l's next round when its period has passed.
func (s *scheduler) startRound(l *schedLink, now time.Duration) {
	if l.roundOn && now-l.roundAt < s.period(l, now) {
		return
	}
	l.roundAt, l.roundOn, l.done = now, true, 0
	s.gen++
}

// pick is the hop limit link l probes at now, 0 for none, and when it
// last probed it itself (-1: never): of the round's hop limits not probed
// yet whose budget allows a probe, the one that has waited longest since
// its own last probe, never probed first, nearest first among equals. The
// wait is the hop limit's own, not its address's: two hop limits of one
// link may share an address (the peer's NAT router answers from the peer's
// public address, one hop before the peer), and by the address's budget
// they would always tie, the nearer winning every time. With mark, the hop
// limits the round leaves out are marked done. later is the earliest time
// after now a hop of the round is due (math.MaxInt64: none is).
func (s *scheduler) pick(l *schedLink, now time.Duration, mark bool) (ttl int, own, later time.Duration) {
	best, bestOwn := 0, time.Duration(0)
	later = math.MaxInt64
	for ttl := 1; ttl <= l.reach; ttl++ {
		at, ok := s.dueAt(l, ttl, now, mark)
		if !ok {
			continue
		}
		if at > now {
			later = min(later, at)
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
	return best, bestOwn, later
}

// dueAt is when the hop at ttl of l may be probed in l's current round,
// false when the round leaves it out or it waits for something other than
// time (its probe in flight, the link's untellable probe). With mark, a
// hop the round leaves out is marked done.
func (s *scheduler) dueAt(l *schedLink, ttl int, now time.Duration, mark bool) (time.Duration, bool) {
	bit := uint64(1) << ttl
	if l.done&bit != 0 || l.flying&bit != 0 {
		return 0, false
	}
	h := &l.hops[ttl]
	skip := h.silent() && h.probed && now-h.last < silentEvery
	if a := s.addrOf(l, ttl); !skip && a.IsValid() && h.tell {
		if u, ok := s.addrLast[a]; ok && u.by != l.id && u.ttl == ttl && u.at >= l.roundAt {
			skip = true // another link's probe this round serves this one
		}
	}
	if skip {
		if mark {
			l.done |= bit
			s.gen++
		}
		return 0, false
	}
	if l.untold && !s.tellable(l, ttl) {
		return 0, false
	}
	at := now
	if last, probed := s.lastOf(l, ttl); probed {
		at = max(now, last+perHopInterval)
	}
	return at, true
}

// tellable: an answer from the hop at ttl can be told apart from the
// answers of the link's other probes in flight — its router quotes the
// probe, answers from a confirmed address, or it is the peer.
func (s *scheduler) tellable(l *schedLink, ttl int) bool {
	return l.hops[ttl].tell || (l.end > 0 && ttl >= l.end)
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
		u, ok := s.addrLast[a]
		later(u.at, ok)
		return last, probed
	}
	// Not known: it may be any router known at this hop limit, or the
	// peer (the NAT router in front of it answers from its address).
	later(s.knownLast[ttl], s.knownAny[ttl])
	u, ok := s.addrLast[l.peer]
	later(u.at, ok)
	return last, probed
}

// addrOf is the known address of the hop at ttl: the peer at and past the
// end, else the last router that answered there.
func (s *scheduler) addrOf(l *schedLink, ttl int) netip.Addr {
	if l.end > 0 && ttl >= l.end {
		return l.peer
	}
	return l.hops[ttl].addr
}

func (s *scheduler) commit(l *schedLink, ttl int, untold bool, now time.Duration) {
	bit := uint64(1) << ttl
	l.flying |= bit
	l.done |= bit
	if untold {
		l.untold, l.untoldTTL = true, ttl
	}
	l.hops[ttl].last, l.hops[ttl].probed = now, true
	if a := s.addrOf(l, ttl); a.IsValid() {
		s.addrLast[a] = addrUse{at: now, by: l.id, ttl: ttl}
		s.knownLast[ttl], s.knownAny[ttl] = now, true
	} else {
		s.unknownLast[ttl], s.unknownAny[ttl] = now, true
		if !l.routerPast(ttl) {
			// Past every hop a router answered at, the probe may
			// reach the peer itself — before a hop limit the peer
			// answered at too, the peer's answer to it lost: it
			// spends the peer's budget too, until a router's answer
			// shows it did not.
			prev, had := s.addrLast[l.peer]
			l.spent = spentPeer{ttl: ttl, at: now, prev: prev, hadPrev: had}
			s.addrLast[l.peer] = addrUse{at: now, by: l.id}
		}
	}
	s.lastSend, s.sentAny = now, true
	s.prune(now)
	s.gen++
}

// routerPast: a router answered past ttl, from an address not the
// peer's, so a probe at ttl stops before the peer. An answer of the
// peer's own, or from its address (its NAT router's), shows no such thing.
func (l *schedLink) routerPast(ttl int) bool {
	for t := ttl + 1; t <= maxHops; t++ {
		if a := l.hops[t].addr; a.IsValid() && a != l.peer {
			return true
		}
	}
	return false
}

// prune bounds the address table: entries whose interval has passed
// budget nothing any more, and no round began before them.
func (s *scheduler) prune(now time.Duration) {
	if len(s.addrLast) < 4*maxHops*max(1, len(s.links)) {
		return
	}
	for a, u := range s.addrLast {
		if now-u.at >= baselineMax {
			delete(s.addrLast, a)
		}
	}
}

// Done takes in what became of the probe in flight on o.Link at o.TTL: the
// hop limit may be probed again, the hop's address is learnt, and the
// path's end and the farthest hop limit to explore move. A void outcome
// teaches no address and moves no end, but the exploration goes on past
// it as past a loss.
func (s *scheduler) Done(o outcome) {
	i := s.find(o.Link)
	if i < 0 || o.TTL < 1 || o.TTL > maxHops {
		return
	}
	l := s.links[i]
	s.gen++
	l.flying &^= uint64(1) << o.TTL
	if l.untold && l.untoldTTL == o.TTL {
		l.untold = false
	}
	if sp := l.spent; sp.ttl == o.TTL && sp.at == o.Sent {
		l.spent = spentPeer{}
		if !o.Lost && !o.Void && !o.Reached && o.Addr.IsValid() && o.Addr != l.peer {
			// A router answered: the probe never reached the peer.
			if u := s.addrLast[l.peer]; u.at == sp.at && u.by == l.id {
				if sp.hadPrev {
					s.addrLast[l.peer] = sp.prev
				} else {
					delete(s.addrLast, l.peer)
				}
			}
		}
	}
	s.learn(l, o)
	end := endAfter(l.end, o)
	if end != l.end {
		s.planned = false
	}
	l.end = end
	switch {
	case l.end > 0:
		l.reach = l.end
	case o.TTL >= l.reach && l.reach < maxHops && l.reach < l.answered+silentGap:
		l.reach++
		s.planned = false
	}
}

// learn takes in what outcome o says of l's hop at o.TTL: answered, it is
// heard, no longer missing and, answered by a router, at that address and
// tellable; lost, it missed one more round.
func (s *scheduler) learn(l *schedLink, o outcome) {
	h := &l.hops[o.TTL]
	was := h.silent()
	switch {
	case o.Lost:
		h.missed++
		if h.silent() && !was {
			h.tell = false // silent: whoever answers next must show who it is
		}
	case !o.Void:
		h.missed, h.heard = 0, true
		l.answered = max(l.answered, o.TTL)
		if o.Addr.IsValid() {
			if !o.Reached {
				if h.addr != o.Addr {
					s.planned = false
				}
				h.addr = o.Addr
				h.tell = true
			}
			if u, ok := s.addrLast[o.Addr]; !ok || o.Sent > u.at {
				s.addrLast[o.Addr] = addrUse{at: o.Sent, by: l.id, ttl: o.TTL}
			}
		}
	}
	if h.silent() != was {
		s.planned = false
	}
}

// Shared takes in, for link, an outcome another link's probe had at a
// router both cross at that hop limit (Tracer.land shares it): it counts
// for the hop as its own would, but frees nothing and explores nothing.
func (s *scheduler) Shared(link Link, o outcome) {
	if l := s.link(link); l != nil && o.TTL >= 1 && o.TTL <= maxHops && !o.Reached && !o.Void {
		o.Link = link
		s.learn(l, o)
		s.gen++
	}
}

// Cancel frees the hop limit Next picked when its probe was not sent after
// all; its budget stays spent.
func (s *scheduler) Cancel(link Link, ttl int) {
	if l := s.link(link); l != nil {
		l.flying &^= uint64(1) << ttl
		if l.untold && l.untoldTTL == ttl {
			l.untold = false
		}
		s.gen++
	}
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
