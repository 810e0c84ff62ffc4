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

// probeCaps: the probes the tracer put on the wire keep to the budget, at
// most one a second to each hop address and twenty a second in all. The
// stamps are the kernel's, where the probes leave the tracer's interface:
// after home 1's queue, whose wait varies by some packets' worth (1200
// bytes at 2 Mbit/s: 4.8 ms each; 21 ms seen, the flood being paced by a
// sleeping loop), which jitter allows for.
func probeCaps(t *testing.T, tr *pathTrace, jitter time.Duration) {
	t.Helper()
	byAddr := map[string][]time.Time{}
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
		// Past the path's length a probe reaches the peer: the trace
		// explores there while the peer has not answered yet, as when
		// the first probe at the path's length was lost.
		k := fmt.Sprintf("silent hop %d", ttl)
		if a := path[min(ttl, len(path))-1]; a.IsValid() {
			k = a.String()
		}
		byAddr[k] = append(byAddr[k], p.at)
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
		slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
		gap := time.Duration(math.MaxInt64)
		for i := 1; i < len(ts); i++ {
			gap = min(gap, ts[i].Sub(ts[i-1]))
		}
		if gap < time.Second-jitter {
			t.Errorf("%v: two probes to %s %v apart, want at most one a second", tr, a, gap)
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

// checkQueues: delay starts where each queue is, at home 1's first hop
// (its LAN) and home 2's first ISP hop (its uplink), adding what the bare
// echo measures the queue to add, within 25 %. A full queue also drops
// what does not fit, so loss, if it starts at all, starts at the queue.
//
// How much it drops of the probes depends on the room the flood leaves: a
// 61-byte probe is refused when less than that is left under the limit,
// a few percent of the time (most of the queue is the flood's 1242-byte
// frames). The queue's own hop may then lose fewer than 2 of its latest
// 100 probes while a hop past it loses more, and the rules, which read
// under 0.02 as not losing, start loss past the queue: that case is
// logged, not failed, as long as no loss starts before the queue.
func checkQueues(t *testing.T, h1, h2 *pathTrace, q1, q2 float64) {
	t.Helper()
	for _, c := range []struct {
		tr   *pathTrace
		ttl  int
		link string
		q    float64
	}{{h1, 1, "lan", q1}, {h2, 2, "uplink", q2}} {
		d := c.tr.ev.DelayStarts
		if d == nil || d.TTL != c.ttl || d.Link != c.link {
			t.Errorf("%v: delay starts %+v, want at ttl %d (%s)", c.tr, d, c.ttl, c.link)
			continue
		}
		if math.Abs(d.AddedMS-c.q) > 0.25*c.q {
			t.Errorf("%v: delay starts adding %.1f ms, the bare echo measures the queue at %.1f ms: want within 25 %%", c.tr, d.AddedMS, c.q)
		}
		t.Logf("%v: delay starts at ttl %d (%s) adding %.1f ms; the bare echo's queue %.1f ms (%+.1f %%)", c.tr, d.TTL, d.Link, d.AddedMS, c.q, 100*(d.AddedMS-c.q)/c.q)
		l := c.tr.ev.LossStarts
		if l == nil || l.TTL == c.ttl || len(c.tr.ev.Hops) < c.ttl {
			continue
		}
		if q := c.tr.ev.Hops[c.ttl-1]; l.TTL < c.ttl || q.Loss >= 0.02 {
			t.Errorf("%v: loss starts at ttl %d, the queue is at %d (which loses %.4f)", c.tr, l.TTL, c.ttl, q.Loss)
		} else {
			t.Logf("%v: the queue's hop lost %.4f of %d probes, under the 0.02 the rules read as losing; loss starts past it, at ttl %d", c.tr, q.Loss, q.Sent, l.TTL)
		}
	}
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

// checkLoss: loss starts at the hop after the lossy router, both ways,
// at 1 − 0.95². The hops before it lose nothing. On the way back that hop
// is p3's home router, which answers from p3's own public address and so
// is labelled as the peer.
//
// A hop's loss is a count of its latest outcomes, at most 100 (the
// trace's window) and at one probe a second: 0.0975 has a binomial
// standard error of 0.030 on 100 probes, so the figure of one run is
// within ± 0.02 about half the time. Each path's figure is held to ± 0.02
// widened to three standard errors of its own count; every hop past the
// lossy router on both paths, pooled, to ± 0.02 widened the same way for
// the pooled count. Both are logged against the plain ± 0.02.
func checkLoss(t *testing.T, fwd, back *pathTrace) {
	t.Helper()
	bound := func(n int) float64 {
		return max(0.02, 3*math.Sqrt(pathLossPast*(1-pathLossPast)/float64(n)))
	}
	lost, sent := 0.0, 0
	for _, c := range []struct {
		tr   *pathTrace
		ttl  int
		link string
	}{{fwd, 3, "isp"}, {back, 4, "peer"}} {
		e := c.tr.ev
		l := e.LossStarts
		if l == nil || l.TTL != c.ttl || l.Link != c.link || len(e.Hops) < c.ttl {
			t.Errorf("%v: loss starts %+v, want at ttl %d (%s), the hop after the lossy router", c.tr, l, c.ttl, c.link)
			continue
		}
		for _, h := range e.Hops[:c.ttl-1] {
			if h.Loss >= 0.02 || h.RateLimited {
				t.Errorf("%v: hop %d before the lossy router loses %.4f", c.tr, h.TTL, h.Loss)
			}
		}
		n := e.Hops[c.ttl-1].Sent
		if b := bound(n); math.Abs(l.Loss-pathLossPast) > b {
			t.Errorf("%v: loss starts at %.4f over %d probes, want %.4f ± %.3f", c.tr, l.Loss, n, pathLossPast, b)
		}
		t.Logf("%v: loss starts at ttl %d: %.4f over %d probes (want %.4f; ± 0.02: %v)", c.tr, l.TTL, l.Loss, n, pathLossPast, math.Abs(l.Loss-pathLossPast) <= 0.02)
		for _, h := range e.Hops[c.ttl-1:] {
			lost += h.Loss * float64(h.Sent)
			sent += h.Sent
		}
	}
	if sent == 0 {
		return
	}
	pooled := lost / float64(sent)
	if b := bound(sent); math.Abs(pooled-pathLossPast) > b {
		t.Errorf("every hop past the lossy router together loses %.4f over %d probes, want %.4f ± %.3f", pooled, sent, pathLossPast, b)
	}
	t.Logf("past the lossy router, both ways: %.4f over %d probes (want %.4f; ± 0.02: %v)", pooled, sent, pathLossPast, math.Abs(pooled-pathLossPast) <= 0.02)
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

// checkWhere: the last diagnosis the host made with every player in, from its own traces
// and the summaries every player shared, says where each slow home's delay
// starts — home 1's on its LAN, home 2's on its line out — and the verdict
// gives each of them its advice, in its name.
func checkWhere(t *testing.T, host *proc) {
	t.Helper()
	d := lastDiagnosis(t, host, 6)
	verdict, _ := d["verdict"].(string)
	where := map[string]string{}
	players, _ := d["players"].([]any)
	for _, p := range players {
		pm, _ := p.(map[string]any)
		name, _ := pm["player"].(string)
		if w, ok := pm["where"].(map[string]any); ok {
			where[name] = fmt.Sprintf("%v ttl %v, %v ms", w["link"], w["ttl"], w["added_ms"])
			t.Logf("where %s: %s", name, where[name])
		}
	}
	t.Logf("the host's verdict: %s (culprit %v)", verdict, d["culprit"])
	if !strings.HasPrefix(where["p1"], "lan ttl 1,") {
		t.Errorf("p1's where %q, want lan at ttl 1", where["p1"])
	}
	if !strings.HasPrefix(where["p2"], "uplink ttl 2,") {
		t.Errorf("p2's where %q, want uplink at ttl 2", where["p2"])
	}
	for _, want := range []string{
		"starts between p1's machine and the home router (Wi-Fi or cable): a cable, or being closer to the router, should help.",
		"starts on p2's line out of the house, often the router's upload queue: a latency-under-load test will tell.",
	} {
		if !strings.Contains(verdict, want) {
			t.Errorf("the verdict lacks %q", want)
		}
	}
}
