package main

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// The path test's checks of what each traced path shows and what went on
// the wire (cmd_netns_path_linux_test.go).

// drainJitter is how much closer two probes may leave the interface than
// they were sent when the queue in front of it drains between them: its
// depth, 200 ms, and the packets' worth of jitter.
const drainJitter = 250 * time.Millisecond

// probeCaps: the probes the tracer put on the wire keep to the budget, at
// most one a second to each hop address and twenty a second in all. The
// stamps are the kernel's, where the probes leave the tracer's interface:
// after home 1's queue, whose wait varies by some packets' worth (1200
// bytes at 2 Mbit/s: 4.8 ms each; 21 ms seen, the flood being paced by a
// sleeping loop), which jitter allows for. When that queue drains (drain,
// zero for none), a probe that waited its whole depth (200 ms) and the next,
// which waits nothing, leave that much closer on the wire than they were
// sent: a pair of probes to one address the drain falls between may be up
// to drainJitter closer.
func probeCaps(t *testing.T, tr *pathTrace, jitter time.Duration, drain time.Time) {
	t.Helper()
	// A probe as the check keys it: when it left (shown from the tap's
	// first probe), its hop limit and where it went (which link), for the
	// message when two come close.
	type sent struct {
		at  time.Time
		ttl int
		dst netip.AddrPort
	}
	byAddr := map[string][]sent{}
	var first time.Time
	links := map[netip.Addr]int{}
	var all []time.Time
	for _, p := range tr.tap.packets() {
		ttl, ok := p.probeTTL()
		if !p.out || !ok {
			continue
		}
		path, known := tr.paths[p.dst.Addr()]
		if !known || ttl < 1 {
			t.Errorf("%v: a probe with hop limit %d to %v, a machine of no path", tr, ttl, p.dst)
			continue
		}
		// The path's last hop is the peer, and past the path's length a
		// probe reaches the peer too: the trace explores there while the
		// peer has not answered yet, as when the first probe at the
		// path's length was lost. A peer behind its NAT router is another
		// machine than the router, though both answer from the router's
		// address (the router's time-exceeded at the hop before the
		// peer's, the peer's own answer, masqueraded): each has its own
		// budget, and so its own key.
		k := fmt.Sprintf("silent hop %d", ttl)
		if a := path[min(ttl, len(path))-1]; a.IsValid() {
			k = a.String()
			if ttl >= len(path) {
				k = "the peer behind " + k
			}
		}
		if first.IsZero() {
			first = p.at
		}
		byAddr[k] = append(byAddr[k], sent{at: p.at, ttl: ttl, dst: p.dst})
		links[p.dst.Addr()]++
		all = append(all, p.at)
	}
	if len(all) == 0 {
		t.Errorf("%v: no probe on the wire", tr)
		return
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, j := 0, 0; i < len(all); i++ {
		for all[i].Sub(all[j]) >= time.Second-jitter {
			j++
		}
		most = max(most, i-j+1)
	}
	var b strings.Builder
	for a, ts := range byAddr {
		slices.SortFunc(ts, func(x, y sent) int { return x.at.Compare(y.at) })
		gap := time.Duration(math.MaxInt64)
		for i := 1; i < len(ts); i++ {
			d, allow := ts[i].at.Sub(ts[i-1].at), jitter
			if !drain.IsZero() && ts[i-1].at.Before(drain.Add(time.Second)) && ts[i].at.After(drain.Add(-time.Second)) {
				allow = drainJitter
			}
			if d < time.Second-allow {
				t.Errorf("%v: two probes to %s %v apart, want at most one a second: hop limit %d to %v at %v, hop limit %d to %v at %v",
					tr, a, d, ts[i-1].ttl, ts[i-1].dst, ts[i-1].at.Sub(first).Round(time.Millisecond), ts[i].ttl, ts[i].dst, ts[i].at.Sub(first).Round(time.Millisecond))
			}
			gap = min(gap, d)
		}
		fmt.Fprintf(&b, " %s %d (closest %v);", a, len(ts), gap.Round(time.Millisecond))
	}
	if most > 20 {
		t.Errorf("%v: %d probes within a second, want at most 20", tr, most)
	}
	t.Logf("%v: %d probes on the wire (by destination %v), at most %d in a second;%s", tr, len(all), links, most, b.String())
}

// gameTTL: at the far end every datagram of the player's that is not a
// probe arrives with the default hop limit, 64, less one per router.
func gameTTL(t *testing.T, hostTap []wirePacket, h pathHome, routers int) {
	t.Helper()
	want, n := 64-routers, 0
	for _, p := range hostTap {
		if p.out || p.src.Addr() != h.wan() || p.dst.Port() != pathHostPort {
			continue
		}
		if _, probe := p.probeTTL(); probe {
			continue
		}
		n++
		if p.ttl != want {
			t.Errorf("p%d's datagram of %d bytes arrived with TTL %d, want %d", h.k, p.size, p.ttl, want)
			return
		}
	}
	if n < 100 {
		t.Errorf("%d datagrams from p%d arrived at the host, want its game's", n, h.k)
	}
	t.Logf("p%d: %d game datagrams at the host, every one with TTL %d (64 less %d routers)", h.k, n, want, routers)
}

// checkSwitch: a queue at hop ttl (link) that switched on at on and drained
// at off, with a clean first part before it. The trace of tr has a
// baseline for that hop before the switch and judges no delay there; within
// 10 s of the switch its path events name delay_starts at ttl (link),
// adding what the bare echo measures the queue to add (q), within 25 %;
// within 10 s of the drain the hop is back at its baseline (its recent
// median within 5 ms of it) and no delay that large starts anywhere.
func checkSwitch(t *testing.T, tr *pathTrace, ttl int, link string, q float64, on, off time.Time) {
	t.Helper()
	es, at := pathEvents(t, tr.p, tr.to)
	var judged, back time.Time
	var added float64
	based := false
	for i, e := range es {
		d := e.DelayStarts
		switch {
		case at[i].Before(on):
			if d != nil && d.AddedMS > q/4 {
				t.Errorf("%v at %v, before the queue: delay starts %+v", tr, at[i].Sub(on), d)
			}
			if len(e.Hops) >= ttl && e.Hops[ttl-1].BaseMS != nil {
				based = true
			}
		case at[i].Before(off):
			if judged.IsZero() && d != nil && d.TTL == ttl && d.Link == link && math.Abs(d.AddedMS-q) <= 0.25*q {
				judged, added = at[i], d.AddedMS
			}
		default:
			if !back.IsZero() || len(e.Hops) < ttl {
				continue
			}
			h := e.Hops[ttl-1]
			if h.RTTMS != nil && h.BaseMS != nil && math.Abs(*h.RTTMS-*h.BaseMS) <= 5 && (d == nil || d.AddedMS < q/4) {
				back = at[i]
			}
		}
	}
	if !based {
		t.Errorf("%v: hop %d had no baseline before the queue switched on", tr, ttl)
	}
	if judged.IsZero() || judged.Sub(on) > 10*time.Second {
		t.Errorf("%v: delay starts at ttl %d (%s) within 25 %% of %.1f ms: at %v after the switch, want within 10 s", tr, ttl, link, q, judged.Sub(on))
	} else {
		t.Logf("%v: delay starts at ttl %d (%s) %v after the switch, adding %.1f ms; the bare echo's queue %.1f ms (%+.1f %%)", tr, ttl, link, judged.Sub(on).Round(100*time.Millisecond), added, q, 100*(added-q)/q)
	}
	if back.IsZero() || back.Sub(off) > 10*time.Second {
		t.Errorf("%v: hop %d back at its baseline %v after the drain, want within 10 s", tr, ttl, back.Sub(off))
	} else {
		t.Logf("%v: hop %d back at its baseline %v after the drain", tr, ttl, back.Sub(off).Round(100*time.Millisecond))
	}
}

// checkIncidentWhere: the host told an incident on player whose where is
// ttl (link): the trace's judgement, shared by the player.
func checkIncidentWhere(t *testing.T, host *runProc, player, link string, ttl int) {
	t.Helper()
	for _, e := range host.of("incident") {
		if e.str("player") != player {
			continue
		}
		if w, ok := e["where"].(map[string]any); ok && w["link"] == link && w["ttl"] == float64(ttl) {
			t.Logf("the host's incident on %s (%s, frame %v): where %v", player, e.str("phase"), e["frame"], w)
			return
		}
	}
	t.Errorf("no incident on %s at the host with where %s ttl %d: %v", player, link, ttl, host.of("incident"))
}

// checkSilent: the router that sends no Time Exceeded is a hop with no
// address that loses every probe, and the trace goes on past it.
func checkSilent(t *testing.T, tr *pathTrace) {
	t.Helper()
	if len(tr.ev.Hops) < 3 {
		return // checkHops said so
	}
	h := tr.ev.Hops[1]
	if h.Addr != nil || h.Loss != 1 || h.Sent < 10 || h.RateLimited || h.RTTMS != nil {
		t.Errorf("%v: the silent hop %+v, want no address, every one of at least 10 probes lost", tr, h)
	}
	for _, h := range tr.ev.Hops[2:] {
		if h.RTTMS == nil {
			t.Errorf("%v: hop %d past the silent router never answered", tr, h.TTL)
		}
	}
}

// pathLossTruth is the loss the lossy router left past it in the run, as
// its own counters say: a probe and its answer each cross it once.
func pathLossTruth(t *testing.T, lab *pathLab) float64 {
	t.Helper()
	c, err := newNftReader(t, lab.homes[2].isps[0], "lossy").read()
	if err != nil {
		t.Fatal(err)
	}
	fwd, lost := c["forwarded"].packets, c["dropped"].packets
	if fwd < 1000 {
		t.Fatalf("the lossy router forwarded %d datagrams", fwd)
	}
	q := float64(lost) / float64(fwd)
	truth := 1 - (1-q)*(1-q)
	t.Logf("the lossy router dropped %d of %d (%.4f): a probe past it is lost %.4f of the time", lost, fwd, q, truth)
	return truth
}

// checkLoss: the trace of tr, bursting from its start, places the loss at
// ttl (link), the hop after the lossy router, within 4 minutes; until then
// every path event says loss_starts null, and none ever names another hop.
// Its loss is within three binomial standard deviations of the truth the
// router's counters measured, over the probes its hop counts. The hops
// before the router lose nothing.
func checkLoss(t *testing.T, tr *pathTrace, ttl int, link string, truth float64) {
	t.Helper()
	es, at := pathEvents(t, tr.p, tr.to)
	if len(es) == 0 {
		t.Errorf("%v: no path event", tr)
		return
	}
	placed, pending := -1, 0
	for i, e := range es {
		if !e.Bursting && i > 0 {
			t.Errorf("%v at %v: not bursting, with --trace", tr, at[i].Sub(at[0]))
		}
		if e.LossPending != nil {
			pending++
		}
		l := e.LossStarts
		if l == nil {
			continue
		}
		if l.TTL != ttl || l.Link != link {
			t.Errorf("%v at %v: loss starts %+v, want ttl %d (%s)", tr, at[i].Sub(at[0]), l, ttl, link)
		}
		if placed < 0 {
			placed = i
		}
	}
	if placed < 0 || at[placed].Sub(at[0]) > 4*time.Minute {
		t.Errorf("%v: loss placed at event %d, want within 4 minutes of the burst's start", tr, placed)
		return
	}
	t.Logf("%v: loss placed %v after the trace began (%d events before said loss_starts null, %d of them with loss pending)", tr, at[placed].Sub(at[0]).Round(time.Second), placed, pending)
	e := tr.ev
	l := e.LossStarts
	if l == nil || len(e.Hops) < ttl {
		t.Errorf("%v: the last event's loss starts %+v", tr, l)
		return
	}
	for _, h := range e.Hops[:ttl-1] {
		if h.Loss >= 0.02 || h.RateLimited {
			t.Errorf("%v: hop %d before the lossy router loses %.4f", tr, h.TTL, h.Loss)
		}
	}
	n := e.Hops[ttl-1].Sent
	sd := math.Sqrt(truth * (1 - truth) / float64(n))
	if math.Abs(l.Loss-truth) > 3*sd {
		t.Errorf("%v: loss starts at %.4f over %d probes, the truth %.4f ± %.4f (3 sd)", tr, l.Loss, n, truth, 3*sd)
	}
	ci := e.Hops[ttl-1].LossCI
	t.Logf("%v: loss %.4f over %d probes (95 %%: %.4f–%.4f), the truth %.4f (%.1f sd)", tr, l.Loss, n, ci[0], ci[1], truth, (l.Loss-truth)/sd)
}

// checkRateLimited: the router that answers once per 5 s loses probes
// while the hops after it do not: rate_limited, and no loss starts.
func checkRateLimited(t *testing.T, tr *pathTrace) {
	t.Helper()
	e := tr.ev
	if len(e.Hops) < 3 {
		return
	}
	if h := e.Hops[1]; !h.RateLimited || h.Loss < 0.02 {
		t.Errorf("%v: hop 2, the rate-limited router: loss %.4f, rate_limited %v; want losing and rate_limited", tr, h.Loss, h.RateLimited)
	}
	for i, h := range e.Hops {
		if i != 1 && (h.RateLimited || h.Loss >= 0.02) {
			t.Errorf("%v: hop %d loses %.4f (rate_limited %v): only hop 2 does", tr, h.TTL, h.Loss, h.RateLimited)
		}
	}
	if e.LossStarts != nil {
		t.Errorf("%v: loss starts %+v; a rate-limited router is not loss", tr, e.LossStarts)
	}
}

// checkSilentRounds: the silent router never holds a bursting round back.
// tr bursts its link to the host from the start: past the first rounds,
// the host's hop (past the silent router) is probed once a second — not
// once per silent timeout — and when a round probes the silent router the
// probes after it to the hops that answer follow within the machine's
// spacing of the probes between, not after the silent probe's timeout
// (500 ms at the least).
// netsSent is a probe on a tap: when it left, its hop limit, where to.
type netsSent struct {
	at  time.Time
	ttl int
	dst netip.Addr
}

func checkSilentRounds(t *testing.T, tr *pathTrace) {
	t.Helper()
	var all []netsSent
	for _, p := range tr.tap.packets() {
		if ttl, ok := p.probeTTL(); ok && p.out {
			all = append(all, netsSent{p.at, ttl, p.dst.Addr()})
		}
	}
	if len(all) < 20 {
		t.Errorf("%v: %d probes", tr, len(all))
		return
	}
	from := all[0].at.Add(20 * time.Second)
	last := len(tr.want) // the host's hop limit
	peer, held, checked, budget := 0, 0, 0, 0
	for i, s := range all {
		if s.at.Before(from) || s.dst != pathHostAddr {
			continue
		}
		if s.ttl >= last {
			peer++
		}
		if s.ttl != 2 {
			continue
		}
		// The silent router's probe: the next probe to an answering hop
		// of this link within the round, and how many of the machine's
		// probes went between. A next hop whose router another of the
		// machine's links probed within the second before waits for that
		// router's budget (one probe a second), not for the silent one.
		for j := i + 1; j < len(all) && all[j].at.Sub(s.at) < time.Second; j++ {
			if all[j].dst != pathHostAddr || all[j].ttl <= 2 {
				continue
			}
			checked++
			gap := all[j].at.Sub(s.at)
			if gap <= time.Duration(j-i+2)*50*time.Millisecond {
				break
			}
			if prev, ok := lastAtRouter(all[:j], all[j], tr.paths); ok && all[j].at.Sub(prev) < time.Second+100*time.Millisecond {
				budget++
				break
			}
			held++
			t.Errorf("%v: %v after the silent router's probe, the next probe of its round (hop %d, %d of the machine's probes later)", tr, gap, all[j].ttl, j-i)
			break
		}
	}
	span := all[len(all)-1].at.Sub(from).Seconds()
	if rate := float64(peer) / span; rate < 0.85 {
		t.Errorf("%v: the host's hop probed %.2f times a second while bursting, want once a second: the silent router held rounds back", tr, rate)
	}
	if checked == 0 {
		t.Errorf("%v: no round probed the silent router and a hop past it", tr)
	}
	t.Logf("%v: the host's hop probed %d times in %.0f s; %d rounds with the silent router's probe, %d held back, %d waiting for the next router's own budget", tr, peer, span, checked, held, budget)
}

// lastAtRouter is when the last of the probes before p reached the router
// p reaches (its hop limit's address on its destination's path), by
// whichever link; false when none did or p reaches no known router.
func lastAtRouter(before []netsSent, p netsSent, paths map[netip.Addr][]netip.Addr) (time.Time, bool) {
	routerOf := func(q netsSent) (netip.Addr, bool) {
		path, ok := paths[q.dst]
		if !ok || q.ttl < 1 || q.ttl >= len(path) {
			return netip.Addr{}, false // unknown, or the peer: not a router
		}
		a := path[q.ttl-1]
		return a, a.IsValid()
	}
	r, ok := routerOf(p)
	if !ok {
		return time.Time{}, false
	}
	for i := len(before) - 1; i >= 0; i-- {
		if a, ok := routerOf(before[i]); ok && a == r {
			return before[i].at, true
		}
	}
	return time.Time{}, false
}

// probeCounters counts, at every router, the probes that die there (IP
// TTL 1 on arrival, 33 bytes of UDP payload), by source as the router sees
// it: the machines' LAN addresses, the homes' public ones, the host's.
func probeCounters(t *testing.T, lab *pathLab) *nftSampler {
	t.Helper()
	sources := []netip.Addr{pathHostAddr}
	for _, h := range lab.homes {
		sources = append(sources, h.lanAddr(2), h.lanAddr(3), h.wan())
	}
	routers := []string{lab.n.prefix + "core"}
	for _, h := range lab.homes {
		routers = append(routers, h.r)
		routers = append(routers, h.isps...)
	}
	var b strings.Builder
	b.WriteString("table ip probes {\n")
	for _, a := range sources {
		fmt.Fprintf(&b, "\tcounter %s { }\n", counterName(a))
	}
	b.WriteString("\tchain pre {\n\t\ttype filter hook prerouting priority -300;\n")
	for _, a := range sources {
		fmt.Fprintf(&b, "\t\tip saddr %s ip ttl 1 udp length 41 counter name %s;\n", a, counterName(a))
	}
	b.WriteString("\t}\n}\n")
	var readers []*nftReader
	for _, r := range routers {
		lab.n.nft(r, "probes", b.String())
		readers = append(readers, newNftReader(t, r, "probes"))
	}
	return startNftSampler(t, 5*time.Second, 10*time.Minute, readers...)
}

func counterName(a netip.Addr) string { return "s" + strings.ReplaceAll(a.String(), ".", "_") }

// checkProbeCounters: between two readings, no router counted more probes
// from one source than the caps allow its machines — one a second each,
// and one more for the readings' edges; two machines stand behind home
// 4's public address.
func checkProbeCounters(t *testing.T, s *nftSampler, lab *pathLab) {
	t.Helper()
	samples, _, err := s.taken()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]int{counterName(lab.homes[3].wan()): 2}
	most, total := 0.0, uint64(0)
	for i := 1; i < len(samples); i++ {
		secs := samples[i].at.Sub(samples[i-1].at).Seconds()
		for ns, counts := range samples[i].counts {
			for name, c := range counts {
				d := c.packets - samples[i-1].counts[ns][name].packets
				total += d
				k := max(1, machines[name])
				if limit := float64(k) * (math.Ceil(secs) + 1); float64(d) > limit {
					t.Errorf("%s counted %d probes from %s in %.1f s, the caps allow %.0f", ns, d, name, secs, limit)
				}
				most = max(most, float64(d)/secs/float64(k))
			}
		}
	}
	if total == 0 {
		t.Errorf("the routers counted no probe in %d readings", len(samples))
	}
	t.Logf("the routers counted %d probes dying there over %d readings; the most from one machine at one router: %.2f a second", total, len(samples), most)
}
