package trace

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// simRoute is a link's path in the virtual world: the routers by hop limit
// (an invalid address never answers), then the peer, which answers when
// peerAnswers is set.
type simRoute struct {
	peer        netip.Addr
	routers     []netip.Addr
	peerAnswers bool
	rtt         time.Duration
}

// hit is who a probe with hop limit ttl reaches, and whether it answers.
func (r simRoute) hit(ttl int) (netip.Addr, bool, bool) {
	if ttl <= len(r.routers) {
		a := r.routers[ttl-1]
		return a, a.IsValid(), false
	}
	return r.peer, r.peerAnswers, true
}

type sent struct {
	at   time.Duration
	link Link
	ttl  int
	to   netip.Addr
}

// runSchedule drives a Scheduler on a virtual clock in 5 ms steps for d,
// answering each probe after its route's round trip and timing out the
// rest after DefaultTimeout. It returns every send in order.
func runSchedule(s *scheduler, routes map[Link]simRoute, d time.Duration, at func(time.Duration)) []sent {
	var log []sent
	type pending struct {
		due time.Duration
		o   outcome
	}
	var queue []pending
	for now := time.Duration(0); now < d; now += 5 * time.Millisecond {
		if at != nil {
			at(now)
		}
		rest := queue[:0]
		for _, p := range queue {
			if p.due <= now {
				s.Done(p.o)
			} else {
				rest = append(rest, p)
			}
		}
		queue = rest
		for {
			link, ttl, ok := s.Next(now)
			if !ok {
				break
			}
			r := routes[link]
			to, answers, peer := r.hit(ttl)
			log = append(log, sent{now, link, ttl, to})
			o := outcome{Link: link, TTL: ttl, Sent: now, Lost: true}
			due := now + defaultTimeout
			if answers {
				o = outcome{Link: link, TTL: ttl, Sent: now, RTT: r.rtt, Addr: to, Reached: peer}
				due = now + r.rtt
			}
			queue = append(queue, pending{due, o})
		}
	}
	return log
}

func newScheduler(routes map[Link]simRoute) *scheduler {
	s := makeScheduler()
	for id, r := range routes {
		s.AddLink(id, r.peer)
	}
	return s
}

// Two links through one home router and one ISP router: each router hears
// one probe a second in all once its address is known; no (link, ttl) is
// probed twice within a second; the machine never sends more than 20 in
// a second; each link stops at its peer.
func TestScheduleBudget(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, r2, pub1, pub2}, peerAnswers: true, rtt: msec(20)},
		linkB: {peer: peerB, routers: []netip.Addr{r1, r2, pub1, pub3, pub4}, peerAnswers: true, rtt: msec(30)},
	}
	log := runSchedule(newScheduler(routes), routes, time.Minute, nil)
	if len(log) < 300 {
		t.Fatalf("%d probes in a minute: the scheduler stalls", len(log))
	}
	lastTo := map[netip.Addr]time.Duration{}
	lastKey := map[[2]int]time.Duration{}
	maxTTL := map[Link]int{}
	perAddr := map[netip.Addr]int{}
	for i, p := range log {
		if i >= maxRate && p.at-log[i-maxRate].at < time.Second {
			t.Fatalf("probe %d at %v: %d probes within a second", i, p.at, maxRate+1)
		}
		key := [2]int{int(p.link), p.ttl}
		if last, ok := lastKey[key]; ok && p.at-last < time.Second {
			t.Fatalf("link %d ttl %d probed at %v and %v", p.link, p.ttl, last, p.at)
		}
		lastKey[key] = p.at
		if last, ok := lastTo[p.to]; ok && p.at-last < time.Second {
			t.Fatalf("%v probed at %v and %v", p.to, last, p.at)
		}
		lastTo[p.to] = p.at
		maxTTL[p.link] = max(maxTTL[p.link], p.ttl)
		perAddr[p.to]++
	}
	if maxTTL[linkA] != 5 || maxTTL[linkB] != 6 {
		t.Fatalf("farthest hop limits %v, want A 5 and B 6 (the peers)", maxTTL)
	}
	// Shared: r1 at hop 1 of both links hears no more than one a second.
	if n := perAddr[r1]; n > 62 || n < 50 {
		t.Fatalf("the shared home router heard %d probes in a minute, want about 60", n)
	}
	if n := perAddr[pub2]; n < 50 {
		t.Fatalf("a hop of one link only heard %d probes in a minute, want about 60", n)
	}
}

// The machine-wide cap holds with many links, and no probe goes past hop
// 30 on a path longer than that.
func TestScheduleCapsAndDepth(t *testing.T) {
	routes := map[Link]simRoute{}
	for id := Link(1); id <= 6; id++ {
		hops := make([]netip.Addr, 40)
		for i := range hops {
			hops[i] = netip.AddrFrom4([4]byte{82, byte(id), 0, byte(i + 1)})
		}
		routes[id] = simRoute{peer: netip.AddrFrom4([4]byte{83, 0, 0, byte(id)}), routers: hops, rtt: msec(1)}
	}
	log := runSchedule(newScheduler(routes), routes, 30*time.Second, nil)
	for i, p := range log {
		if p.ttl < 1 || p.ttl > maxHops {
			t.Fatalf("probe with hop limit %d", p.ttl)
		}
		if i >= maxRate && p.at-log[i-maxRate].at < time.Second {
			t.Fatalf("probe %d at %v: %d probes within a second", i, p.at, maxRate+1)
		}
	}
	if len(log) < 19*29 {
		t.Fatalf("%d probes in 30 s with work for 20 a second", len(log))
	}
}

// A peer that never answers probes (one that does not know the record)
// leaves the path incomplete; the tracer explores silentGap hop limits
// past the farthest router that answered, no further.
func TestScheduleSilentGap(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, {}, pub1}, rtt: msec(10)},
	}
	log := runSchedule(newScheduler(routes), routes, time.Minute, nil)
	top := 0
	for _, p := range log {
		top = max(top, p.ttl)
	}
	if top != 3+silentGap {
		t.Fatalf("explored to hop %d, want %d", top, 3+silentGap)
	}
}

// Links come and go: a removed link is never probed again; one added later
// is probed from hop 1.
// The hop before a NATed peer is its home router, which answers from the
// peer's own public address: two hop limits of one link share one budget,
// and they take turns in it, one probe a second between them, neither
// starved by the other.
func TestScheduleSharedAddressTakesTurns(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, pub1, peerA}, peerAnswers: true, rtt: msec(5)},
	}
	log := runSchedule(newScheduler(routes), routes, time.Minute, nil)
	count := map[int]int{}
	var last time.Duration = -time.Second
	for _, p := range log {
		count[p.ttl]++
		if p.to != peerA {
			continue
		}
		if p.at-last < time.Second {
			t.Fatalf("%v probed at %v and %v", peerA, last, p.at)
		}
		last = p.at
	}
	if count[3] < 25 || count[4] < 25 || count[3]+count[4] > 62 {
		t.Fatalf("a minute's probes by hop limit %v: want hops 3 and 4, one address, about 30 each", count)
	}
}

// Two links through one home router and one silent router after it: the
// silent hop has no address to budget by, and is budgeted by its hop
// limit across the links, so the router it is hears one probe a second
// from this machine, not one a second per link. Nothing is ever probed
// twice within a second, not even on a link's first probes.
func TestScheduleSilentHopShared(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, {}, pub1}, peerAnswers: true, rtt: msec(5)},
		linkB: {peer: peerB, routers: []netip.Addr{r1, {}, pub3}, peerAnswers: true, rtt: msec(5)},
	}
	log := runSchedule(newScheduler(routes), routes, time.Minute, nil)
	last := map[string]time.Duration{}
	silent := 0
	for _, p := range log {
		k := p.to.String()
		if !p.to.IsValid() {
			k, silent = fmt.Sprintf("silent hop %d", p.ttl), silent+1
		}
		if at, ok := last[k]; ok && p.at-at < time.Second {
			t.Fatalf("%s probed at %v and %v", k, at, p.at)
		}
		last[k] = p.at
	}
	if silent < 20 {
		t.Fatalf("the silent hop probed %d times in a minute: the links stall on it", silent)
	}
}

func TestScheduleAddRemove(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, r2}, peerAnswers: true, rtt: msec(10)},
		linkB: {peer: peerB, routers: []netip.Addr{r1, r3}, peerAnswers: true, rtt: msec(10)},
	}
	s := makeScheduler()
	s.AddLink(linkA, peerA)
	log := runSchedule(s, routes, 20*time.Second, func(now time.Duration) {
		switch now {
		case 5 * time.Second:
			s.AddLink(linkB, peerB)
			s.AddLink(linkB, peerB) // again: kept, not doubled
		case 10 * time.Second:
			s.RemoveLink(linkA)
		}
	})
	firstB := true
	for _, p := range log {
		switch {
		case p.link == linkB && p.at < 5*time.Second:
			t.Fatalf("B probed at %v before it was added", p.at)
		case p.link == linkB && firstB:
			firstB = false
			if p.ttl != 1 {
				t.Fatalf("B's first probe at hop %d", p.ttl)
			}
		case p.link == linkA && p.at >= 10*time.Second:
			t.Fatalf("A probed at %v after it was removed", p.at)
		}
	}
	if firstB {
		t.Fatal("B never probed")
	}
}

func TestScheduleNextAt(t *testing.T) {
	s := makeScheduler()
	if _, ok := s.NextAt(0); ok {
		t.Fatal("work with no link")
	}
	s.AddLink(linkA, peerA)
	if at, ok := s.NextAt(msec(3)); !ok || at != msec(3) {
		t.Fatalf("next %v %v, want now", at, ok)
	}
	link, ttl, _ := s.Next(msec(3))
	if _, ok := s.NextAt(msec(4)); ok {
		t.Fatal("work while the link's one probe is in flight")
	}
	s.Done(outcome{Link: link, TTL: ttl, Sent: msec(3), RTT: msec(1), Addr: r1})
	// Hop 2 may go at once but for the machine's spacing; hop 1 waits a second.
	if at, ok := s.NextAt(msec(4)); !ok || at != msec(3)+rateInterval {
		t.Fatalf("next %v %v, want %v", at, ok, msec(3)+rateInterval)
	}
	if _, ttl, ok := s.Next(msec(3) + rateInterval); !ok || ttl != 2 {
		t.Fatalf("then hop %d %v, want 2", ttl, ok)
	}
}

// Links added while another runs (the diagnosis blames a player, the Path
// view opens one) share their first routers with it: a new link's probe
// to a hop it does not know yet counts against the known router there, so
// no router hears two probes within a second, whatever link they came on,
// when links come, go and come back.
func TestScheduleLateLinksShareTheBudget(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	shared := []netip.Addr{a("10.3.0.1"), a("172.19.0.1"), a("172.19.1.1"), a("198.51.100.1")}
	routes := map[Link]simRoute{
		1: {peer: a("198.51.100.10"), routers: shared, peerAnswers: true, rtt: msec(3)},
		2: {peer: a("172.17.0.2"), routers: append(append([]netip.Addr{}, shared...), a("172.17.0.1"), a("172.17.0.2")), peerAnswers: true, rtt: msec(200)},
		3: {peer: a("172.18.0.2"), routers: append(append([]netip.Addr{}, shared...), a("172.18.0.1"), a("172.18.0.2")), peerAnswers: true, rtt: msec(200)},
	}
	s := makeScheduler()
	s.AddLink(1, routes[1].peer)
	log := runSchedule(s, routes, 2*time.Minute, func(now time.Duration) {
		if now == 20*time.Second {
			s.AddLink(2, routes[2].peer)
		}
		if now == 30*time.Second {
			s.AddLink(3, routes[3].peer)
		}
		if now == 60*time.Second {
			s.RemoveLink(2)
		}
		if now == 70*time.Second {
			s.AddLink(2, routes[2].peer)
		}
	})
	last := map[netip.Addr]time.Duration{}
	for _, p := range log {
		if at, ok := last[p.to]; ok && p.at-at < time.Second {
			t.Errorf("%s probed at %v and %v (link %d ttl %d)", p.to, at, p.at, p.link, p.ttl)
		}
		last[p.to] = p.at
	}
}

// A void outcome (answers that could not count) frees the link and lets
// the exploration go on past the hop, as a loss does, but teaches no
// address and moves no end.
func TestScheduleVoid(t *testing.T) {
	s := makeScheduler()
	s.AddLink(linkA, peerA)
	link, ttl, ok := s.Next(0)
	if !ok || link != linkA || ttl != 1 {
		t.Fatalf("first probe %v %v %v", link, ttl, ok)
	}
	s.Done(outcome{Link: linkA, TTL: 1, Sent: 0, Void: true})
	l := s.links[0]
	if l.flying || l.reach != 2 || l.hops[1].addr.IsValid() || l.end != 0 || l.answered != 0 {
		t.Fatalf("after a void outcome: flying %v reach %d addr %v end %d answered %d; want free, reach 2, nothing learnt",
			l.flying, l.reach, l.hops[1].addr, l.end, l.answered)
	}
	if _, ttl, ok := s.Next(rateInterval); !ok || ttl != 2 {
		t.Fatalf("next probe at hop %d (%v), want 2", ttl, ok)
	}
	// A void outcome at or past the path's end does not say the path grew.
	s.Done(outcome{Link: linkA, TTL: 2, Sent: rateInterval, RTT: msec(5), Addr: peerA, Reached: true})
	if l.end != 2 {
		t.Fatalf("end %d, want 2", l.end)
	}
	s.Next(2 * perHopInterval)
	s.Done(outcome{Link: linkA, TTL: 2, Sent: 2 * perHopInterval, Void: true})
	if l.end != 2 {
		t.Fatalf("a void outcome at the end moved it to %d", l.end)
	}
}
