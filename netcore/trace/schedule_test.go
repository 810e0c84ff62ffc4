package trace

import (
	"fmt"
	"math/rand/v2"
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
	at     time.Duration
	link   Link
	ttl    int
	to     netip.Addr
	untold bool
}

// schedTimeout is how long runSchedule waits before a probe is lost.
const schedTimeout = 600 * time.Millisecond

// runSchedule drives a Scheduler on a virtual clock in 5 ms steps for d,
// answering each probe after its route's round trip and timing out the
// rest after schedTimeout. It returns every send in order.
func runSchedule(s *scheduler, routes map[Link]simRoute, d time.Duration, at func(time.Duration)) []sent {
	return runScheduleFrom(s, routes, 0, d, at)
}

func runScheduleFrom(s *scheduler, routes map[Link]simRoute, from, d time.Duration, at func(time.Duration)) []sent {
	var log []sent
	type pending struct {
		due time.Duration
		o   outcome
	}
	var queue []pending
	for now := from; now < d; now += 5 * time.Millisecond {
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
			link, ttl, untold, ok := s.Next(now)
			if !ok {
				break
			}
			r := routes[link]
			to, answers, peer := r.hit(ttl)
			log = append(log, sent{now, link, ttl, to, untold})
			o := outcome{Link: link, TTL: ttl, Sent: now, Lost: true}
			due := now + schedTimeout
			if answers {
				o = outcome{Link: link, TTL: ttl, Sent: now, RTT: r.rtt, Addr: to, Reached: peer}
				due = now + r.rtt
			}
			queue = append(queue, pending{due, o})
		}
	}
	return log
}

func newScheduler(routes map[Link]simRoute, pinned bool) *scheduler {
	s := makeScheduler()
	for id, r := range routes {
		s.AddLink(id, r.peer)
		s.Pin(id, pinned)
	}
	return s
}

// checkCaps: no address hears two probes within a second, no silent hop
// limit either, and the machine never sends more than 20 in a second.
func checkCaps(t *testing.T, log []sent) {
	t.Helper()
	last := map[string]time.Duration{}
	for i, p := range log {
		if i >= maxRate && p.at-log[i-maxRate].at < time.Second {
			t.Fatalf("probe %d at %v: %d probes within a second", i, p.at, maxRate+1)
		}
		if p.ttl < 1 || p.ttl > maxHops {
			t.Fatalf("probe with hop limit %d", p.ttl)
		}
		k := p.to.String()
		if !p.to.IsValid() {
			k = fmt.Sprintf("silent hop %d", p.ttl)
		}
		if at, ok := last[k]; ok && p.at-at < time.Second {
			t.Fatalf("%s probed at %v and %v (link %d ttl %d)", k, at, p.at, p.link, p.ttl)
		}
		last[k] = p.at
	}
}

// Two bursting links through one home router and one ISP router: each
// router hears one probe a second in all, and its answer serves both
// links; every other hop hears one a second; each link stops at its peer.
func TestScheduleBurstSharesRouters(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, r2, pub1, pub2}, peerAnswers: true, rtt: msec(20)},
		linkB: {peer: peerB, routers: []netip.Addr{r1, r2, pub1, pub3, pub4}, peerAnswers: true, rtt: msec(30)},
	}
	log := runSchedule(newScheduler(routes, true), routes, time.Minute, nil)
	checkCaps(t, log)
	maxTTL := map[Link]int{}
	perAddr := map[netip.Addr]int{}
	for _, p := range log {
		maxTTL[p.link] = max(maxTTL[p.link], p.ttl)
		perAddr[p.to]++
	}
	if maxTTL[linkA] != 5 || maxTTL[linkB] != 6 {
		t.Fatalf("farthest hop limits %v, want A 5 and B 6 (the peers)", maxTTL)
	}
	for _, a := range []netip.Addr{r1, r2, pub1} {
		if n := perAddr[a]; n > 61 || n < 50 {
			t.Errorf("the shared router %v heard %d probes in a minute, want about 60 (once a round for both links)", a, n)
		}
	}
	for _, a := range []netip.Addr{pub2, pub3, pub4, peerA, peerB} {
		if n := perAddr[a]; n < 50 {
			t.Errorf("%v, on one link only, heard %d probes in a minute, want about 60", a, n)
		}
	}
}

// The baseline: a round every max(2 s, hops/10 s) with the hops of every
// baseline link counted, a shared router once. Seven links of twelve hops
// through three shared routers hold 3 + 7×9 = 66 hops: a round every
// 6.6 s, and the machine sends about 10 probes a second.
func TestScheduleBaselineRound(t *testing.T) {
	routes := map[Link]simRoute{}
	shared := []netip.Addr{r1, r2, pub1}
	for id := Link(1); id <= 7; id++ {
		hops := append([]netip.Addr{}, shared...)
		for i := range 8 {
			hops = append(hops, netip.AddrFrom4([4]byte{82, byte(id), 0, byte(i + 1)}))
		}
		routes[id] = simRoute{peer: netip.AddrFrom4([4]byte{83, 0, 0, byte(id)}), routers: hops, peerAnswers: true, rtt: msec(15)}
	}
	s := newScheduler(routes, false)
	runSchedule(s, routes, time.Minute, nil)
	if want := 6600 * time.Millisecond; s.basePeriod != want {
		t.Fatalf("baseline round %v, want %v", s.basePeriod, want)
	}
	log := runScheduleFrom(s, routes, time.Minute, 3*time.Minute, nil)
	checkCaps(t, log)
	rate := float64(len(log)) / 120
	if rate < 9 || rate > 10.5 {
		t.Errorf("%.1f probes a second in the baseline, want about 66/6.6 = 10", rate)
	}
	// Every hop of every link is probed once a round; shared ones once a
	// round for all links together.
	per := map[netip.Addr]int{}
	for _, p := range log {
		per[p.to]++
	}
	for a, n := range per {
		if want := 120 / 6.6; float64(n) < want-2 || float64(n) > want+2 {
			t.Errorf("%v heard %d probes in 120 s, want one a round, about %.0f", a, n, want)
		}
	}
	// A single short link: the floor of 2 s.
	one := map[Link]simRoute{linkA: {peer: peerA, routers: []netip.Addr{r1, r2}, peerAnswers: true, rtt: msec(5)}}
	s1 := newScheduler(one, false)
	log = runSchedule(s1, one, time.Minute, nil)
	if s1.basePeriod != baselineMin {
		t.Errorf("a three-hop link's round %v, want %v", s1.basePeriod, baselineMin)
	}
	if n := len(log); n < 85 || n > 95 {
		t.Errorf("%d probes in a minute on a three-hop baseline, want about 90", n)
	}
}

// The machine-wide cap holds with many bursting links, bursts go before
// baselines, and no probe goes past hop 30 on a path longer than that.
func TestScheduleCapsAndDepth(t *testing.T) {
	routes := map[Link]simRoute{}
	for id := Link(1); id <= 6; id++ {
		hops := make([]netip.Addr, 40)
		for i := range hops {
			hops[i] = netip.AddrFrom4([4]byte{82, byte(id), 0, byte(i + 1)})
		}
		routes[id] = simRoute{peer: netip.AddrFrom4([4]byte{83, 0, 0, byte(id)}), routers: hops, rtt: msec(1)}
	}
	log := runSchedule(newScheduler(routes, true), routes, 30*time.Second, nil)
	checkCaps(t, log)
	if len(log) < 300 {
		t.Fatalf("%d probes in 30 s: the scheduler stalls", len(log))
	}
}

// A peer that never answers probes (one that does not know the record)
// leaves the path incomplete; the tracer explores silentGap hop limits
// past the farthest router that answered, no further.
func TestScheduleSilentGap(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, {}, pub1}, rtt: msec(10)},
	}
	log := runSchedule(newScheduler(routes, true), routes, time.Minute, nil)
	top := 0
	for _, p := range log {
		top = max(top, p.ttl)
	}
	if top != 3+silentGap {
		t.Fatalf("explored to hop %d, want %d", top, 3+silentGap)
	}
}

// A silent router is probed every round until it has missed three, then
// once every 10 s; the rest of a bursting round never waits for it: each
// round's probes to the hops that answer leave within the machine's
// spacing of each other. Its probes are untellable (its address unknown),
// at most one in flight per link.
func TestScheduleSilentRouterHoldsNothingBack(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, {}, pub1, {}, {}, pub2, {}, pub3}, peerAnswers: true, rtt: msec(40)},
	}
	log := runSchedule(newScheduler(routes, true), routes, 2*time.Minute, nil)
	checkCaps(t, log)
	var silent []time.Duration
	var rounds [][]sent // the answering hops' probes, in runs a round long
	for _, p := range log {
		if p.at < 30*time.Second {
			continue
		}
		if !p.to.IsValid() {
			silent = append(silent, p.at)
			continue
		}
		if n := len(rounds); n == 0 || p.at-rounds[n-1][len(rounds[n-1])-1].at > 300*time.Millisecond {
			rounds = append(rounds, nil)
		}
		rounds[len(rounds)-1] = append(rounds[len(rounds)-1], p)
	}
	// Four silent hops, each once per 10 s after its first rounds.
	if n := len(silent); n < 30 || n > 40 {
		t.Errorf("%d probes to silent hops in 90 s, want about 36 (four hops, one each every 10 s)", n)
	}
	whole := 0
	for _, r := range rounds {
		if spread := r[len(r)-1].at - r[0].at; spread > time.Duration(len(r)+2)*rateInterval {
			t.Errorf("a round's %d probes to answering hops spread over %v: it waited", len(r), spread)
		}
		if len(r) == 5 {
			whole++
		}
	}
	if whole < 80 {
		t.Errorf("%d whole rounds (all five answering hops) in 90 s, want one a second", whole)
	}
}

// At most one untellable probe in flight per link: probes to hops whose
// answers could not be told apart wait for each other; probes to known
// hops do not wait for them.
func TestScheduleOneUntellableInFlight(t *testing.T) {
	s := makeScheduler()
	s.AddLink(linkA, peerA)
	s.Pin(linkA, true)
	l := s.links[0]
	l.reach, l.answered = 5, 3
	l.hops[1] = schedHop{addr: r1, tell: true}
	l.hops[3] = schedHop{addr: pub1, tell: true}
	now := time.Duration(0)
	got := map[int]bool{}
	var untold []int
	for range 5 {
		link, ttl, u, ok := s.Next(now)
		now += rateInterval
		if !ok {
			continue
		}
		if link != linkA {
			t.Fatalf("link %d", link)
		}
		got[ttl] = true
		if u {
			untold = append(untold, ttl)
		}
	}
	if !got[1] || !got[3] || len(untold) != 1 {
		t.Fatalf("sent %v, untellable %v: want hops 1 and 3 and one untellable", got, untold)
	}
	s.Done(outcome{Link: linkA, TTL: untold[0], Sent: 0, Lost: true})
	_, ttl, u, ok := s.Next(now)
	if !ok || !u || ttl == untold[0] {
		t.Fatalf("after the untellable probe's outcome: hop %d untellable %v (%v), want the next unknown hop", ttl, u, ok)
	}
}

// The hop before a NATed peer is its home router, which answers from the
// peer's own public address: two hop limits of one link share one budget,
// and they take turns in it, one probe a second between them, neither
// starved by the other.
func TestScheduleSharedAddressTakesTurns(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, pub1, peerA}, peerAnswers: true, rtt: msec(5)},
	}
	log := runSchedule(newScheduler(routes, true), routes, time.Minute, nil)
	checkCaps(t, log)
	count := map[int]int{}
	for _, p := range log {
		count[p.ttl]++
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
	log := runSchedule(newScheduler(routes, true), routes, time.Minute, nil)
	checkCaps(t, log)
	silent := 0
	for _, p := range log {
		if !p.to.IsValid() {
			silent++
		}
	}
	if silent < 6 {
		t.Fatalf("the silent hop probed %d times in a minute, want one each 10 s per link after three rounds", silent)
	}
}

// Links come and go: a removed link is never probed again; one added later
// is probed from hop 1.
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

// A path of one hop (the peer answers at hop limit 1) is not probed again:
// one hop can place nothing.
func TestScheduleOneHopIsNotTraced(t *testing.T) {
	routes := map[Link]simRoute{linkA: {peer: peerA, peerAnswers: true, rtt: msec(1)}}
	for _, pinned := range []bool{false, true} {
		log := runSchedule(newScheduler(routes, pinned), routes, time.Minute, nil)
		if len(log) != 1 || log[0].ttl != 1 {
			t.Errorf("pinned %v: %d probes to a one-hop path in a minute, want the first alone", pinned, len(log))
		}
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
	link, ttl, _, _ := s.Next(msec(3))
	if at, ok := s.NextAt(msec(4)); !ok || at != msec(3)+baselineMin {
		t.Fatalf("next %v %v while the round's one probe is in flight, want the next round at %v", at, ok, msec(3)+baselineMin)
	}
	s.Done(outcome{Link: link, TTL: ttl, Sent: msec(3), RTT: msec(1), Addr: r1})
	// Hop 2 may go at once but for the machine's spacing; hop 1 waits a round.
	if at, ok := s.NextAt(msec(4)); !ok || at != msec(3)+rateInterval {
		t.Fatalf("next %v %v, want %v", at, ok, msec(3)+rateInterval)
	}
	if _, ttl, _, ok := s.Next(msec(3) + rateInterval); !ok || ttl != 2 {
		t.Fatalf("then hop %d %v, want 2", ttl, ok)
	}
	// NextAt agrees with Next: at the time it names there is a probe.
	routes := map[Link]simRoute{linkA: {peer: peerA, routers: []netip.Addr{r1, {}, r2}, peerAnswers: true, rtt: msec(7)}}
	s = newScheduler(routes, false)
	runSchedule(s, routes, 30*time.Second, func(now time.Duration) {
		if at, ok := s.NextAt(now); ok && at < now {
			t.Fatalf("NextAt(%v) = %v, in the past", now, at)
		}
	})
}

// Links added while another runs share their first routers with it: a new
// link's probe to a hop it does not know yet counts against the known
// router there, so no router hears two probes within a second, whatever
// link they came on, when links come, go and come back, burst and calm.
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
		switch now {
		case 20 * time.Second:
			s.AddLink(2, routes[2].peer)
		case 25 * time.Second:
			s.Burst(2, now, now+20*time.Second)
		case 30 * time.Second:
			s.AddLink(3, routes[3].peer)
			s.Pin(3, true)
		case 60 * time.Second:
			s.RemoveLink(2)
		case 70 * time.Second:
			s.AddLink(2, routes[2].peer)
			s.Pin(3, false)
		}
	})
	checkCaps(t, log)
}

// Under random schedules — links added, removed, pinned, bursting and
// calm at random moments, paths with silent and shared routers — the caps
// hold: one probe a second to each address (and to each silent hop
// limit), twenty a second in all.
func TestScheduleCapsHoldUnderAnySchedule(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		routes := map[Link]simRoute{}
		for id := Link(1); id <= 9; id++ {
			// A router several links cross sits at one hop count from
			// this machine on all of them (shortest paths from one
			// source): the home router, the ISP's, and pub1 at hop 3 on
			// some links.
			hops := []netip.Addr{r1, r2}
			for i := range 3 + rng.IntN(10) {
				switch {
				case i == 0 && rng.IntN(2) == 0:
					hops = append(hops, pub1)
				case rng.IntN(5) == 0:
					hops = append(hops, netip.Addr{})
				default:
					hops = append(hops, netip.AddrFrom4([4]byte{82, byte(id), 0, byte(i + 1)}))
				}
			}
			routes[id] = simRoute{peer: netip.AddrFrom4([4]byte{83, 0, 0, byte(id)}), routers: hops, peerAnswers: rng.IntN(4) > 0, rtt: msec(float64(1 + rng.IntN(300)))}
		}
		s := makeScheduler()
		log := runSchedule(s, routes, 3*time.Minute, func(now time.Duration) {
			if now%(500*time.Millisecond) != 0 {
				return
			}
			id := Link(1 + rng.IntN(9))
			switch rng.IntN(6) {
			case 0:
				s.AddLink(id, routes[id].peer)
			case 1:
				s.RemoveLink(id)
			case 2:
				s.Pin(id, rng.IntN(2) == 0)
			case 3:
				s.Burst(id, now, now+time.Duration(rng.IntN(20))*time.Second)
			default:
				s.AddLink(id, routes[id].peer)
			}
		})
		checkCaps(t, log)
		if len(log) < 500 {
			t.Errorf("seed %d: %d probes in 3 minutes", seed, len(log))
		}
	}
}

// A void outcome (answers that could not count) frees the hop limit and
// lets the exploration go on past the hop, as a loss does, but teaches no
// address and moves no end.
func TestScheduleVoid(t *testing.T) {
	s := makeScheduler()
	s.AddLink(linkA, peerA)
	link, ttl, _, ok := s.Next(0)
	if !ok || link != linkA || ttl != 1 {
		t.Fatalf("first probe %v %v %v", link, ttl, ok)
	}
	s.Done(outcome{Link: linkA, TTL: 1, Sent: 0, Void: true})
	l := s.links[0]
	if l.flying != 0 || l.reach != 2 || l.hops[1].addr.IsValid() || l.end != 0 || l.answered != 0 {
		t.Fatalf("after a void outcome: flying %b reach %d addr %v end %d answered %d; want free, reach 2, nothing learnt",
			l.flying, l.reach, l.hops[1].addr, l.end, l.answered)
	}
	// Hop 2 may be the peer, as hop 1 might have been: it waits for the
	// peer's budget, which the void probe spent.
	if _, _, _, ok := s.Next(rateInterval); ok {
		t.Fatal("a probe past every answering hop within a second of the last")
	}
	if _, ttl, _, ok := s.Next(perHopInterval); !ok || ttl != 2 {
		t.Fatalf("next probe at hop %d (%v), want 2", ttl, ok)
	}
	// A void outcome at or past the path's end does not say the path grew.
	s.Done(outcome{Link: linkA, TTL: 2, Sent: perHopInterval, RTT: msec(5), Addr: peerA, Reached: true})
	if l.end != 2 {
		t.Fatalf("end %d, want 2", l.end)
	}
	s.Next(2 * baselineMin)
	s.Done(outcome{Link: linkA, TTL: 2, Sent: 2 * baselineMin, Void: true})
	if l.end != 2 {
		t.Fatalf("a void outcome at the end moved it to %d", l.end)
	}
}

// A peer behind its NAT router, the router answering from the peer's
// address at the hop before it. When the path's end is lost (an answer
// from that address at a hop limit past the peer says the path grew) and
// the rounds explore past the peer again, the probes that reach the peer
// — at its hop limit and past it — stay a second apart: the router's
// budget, under the same address, holds them.
func TestSchedulePeerKeepsItsBudgetWhenTheEndIsLost(t *testing.T) {
	routes := map[Link]simRoute{
		linkA: {peer: peerA, routers: []netip.Addr{r1, r2, pub1, pub2, peerA}, peerAnswers: true, rtt: msec(20)},
	}
	s := newScheduler(routes, true)
	runSchedule(s, routes, 10*time.Second, nil)
	l := s.links[0]
	if l.end != 6 {
		t.Fatalf("the peer answered at hop limit %d, want 6", l.end)
	}
	lost := 10*time.Second + 5*time.Millisecond
	s.Done(outcome{Link: linkA, TTL: 7, Sent: lost - msec(20), RTT: msec(20), Addr: peerA})
	if l.end != 0 {
		t.Fatalf("after a router's answer past the end, the end is %d", l.end)
	}
	log := runScheduleFrom(s, routes, lost, 20*time.Second, nil)
	var peer []sent
	for _, p := range log {
		if p.ttl >= 6 {
			peer = append(peer, p)
		}
	}
	if len(peer) < 5 {
		t.Fatalf("%d probes at or past the peer in 10 s", len(peer))
	}
	for i := 1; i < len(peer); i++ {
		if d := peer[i].at - peer[i-1].at; d < time.Second {
			t.Fatalf("the peer heard hop limits %d and %d %v apart, want a second", peer[i-1].ttl, peer[i].ttl, d)
		}
	}
}

// The same peer, its end lost by an answer from past it, and a hop limit
// at which only the peer ever answered: whichever of that hop limit and
// the one past it goes first, the other waits a second, since both reach
// the peer (the one past it answered from the peer's address, the other
// by the peer's own answer).
func TestScheduleHopThePeerAnsweredAtKeepsThePeersBudget(t *testing.T) {
	for _, first := range []int{6, 7} {
		t.Run(fmt.Sprintf("hop limit %d first", first), func(t *testing.T) {
			routes := map[Link]simRoute{
				linkA: {peer: peerA, routers: []netip.Addr{r1, r2, pub1, pub2, peerA}, peerAnswers: true, rtt: msec(20)},
			}
			s := newScheduler(routes, true)
			runSchedule(s, routes, 10*time.Second, nil)
			l := s.links[0]
			if l.end != 6 || l.hops[6].addr.IsValid() {
				t.Fatalf("the peer answered at hop limit %d (the router there %v), want 6 and none", l.end, l.hops[6].addr)
			}
			s.Done(outcome{Link: linkA, TTL: 7, Sent: 12 * time.Second, RTT: msec(20), Addr: peerA})
			now := 13 * time.Second // every hop's budget free again
			if l.end != 0 || l.reach < 7 {
				t.Fatalf("after a router's answer past the end: end %d, reach %d", l.end, l.reach)
			}
			other := 13 - first
			s.startRound(l, now)
			if at, ok := s.dueAt(l, first, now, false); !ok || at != now {
				t.Fatalf("hop limit %d due at %v (%v), want now, %v", first, at, ok, now)
			}
			s.commit(l, first, false, now)
			if at, ok := s.dueAt(l, other, now, false); ok && at < now+perHopInterval {
				t.Errorf("after hop limit %d at %v, hop limit %d is due at %v: the peer hears both within a second", first, now, other, at)
			}
		})
	}
}
