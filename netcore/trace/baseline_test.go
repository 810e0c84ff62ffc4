package trace

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/units"
)

// bh is a hop with a baseline of n answers around base ms (spread evenly
// over ± spread) and recent answers at the given ms, each of them also in
// the window.
func bh(ttl int, addr string, base, spread float64, n int, recent ...float64) hopSamples {
	h := hs(ttl, addr, base, spread, n, 0)
	var b []float64
	for _, d := range h.RTTs {
		b = append(b, units.Millis(d))
	}
	slices.Sort(b)
	var bl baseline
	bl.setFrom(b)
	h.Base = &bl
	for _, r := range recent {
		h.RTTs = append(h.RTTs, msec(r))
	}
	h.Recent = recent
	return h
}

// Against their own baselines: a queue switching on shows as a rise at the
// hop it is in and every hop after, judged from three recent answers when
// the baseline varies by a millisecond; its added delay is the rise.
func TestAnalyzeAgainstTheBaseline(t *testing.T) {
	const peer = "203.0.113.7"
	for _, c := range []struct {
		name string
		hops []hopSamples
		want verdict
	}{
		{"a queue on this machine's own interface: hop 1 rises", []hopSamples{
			bh(1, "10.1.0.1", 0.1, 0.05, 40, 195, 201, 198), bh(2, "172.17.0.1", 0.2, 0.05, 40, 196, 199, 203),
			bh(3, "172.17.1.1", 0.3, 0.05, 40, 200, 197, 199), bh(4, peer, 0.4, 0.05, 40, 199, 204, 201),
		}, verdict{delayTTL: 1, delayAt: labelLAN, addedMS: 197.9}},
		{"a queue on the home router's WAN: hop 2 rises", []hopSamples{
			bh(1, "10.2.0.1", 0.1, 0.05, 40, 0.1, 0.12, 0.09), bh(2, "172.18.0.1", 0.2, 0.05, 40, 196, 199, 203),
			bh(3, "172.18.1.1", 0.3, 0.05, 40, 200, 197, 199), bh(4, peer, 0.4, 0.05, 40, 199, 204, 201),
		}, verdict{delayTTL: 2, delayAt: labelUplink, addedMS: 198.8}},
		{"a steady 120 ms uplink, nothing risen: the structure still says where", []hopSamples{
			bh(1, "192.168.1.1", 1, 0.4, 40, 1, 1, 1), bh(2, "100.64.0.1", 121, 1, 40, 121, 121, 121),
			bh(3, peer, 123, 1, 40, 123, 123, 123),
		}, verdict{delayTTL: 2, delayAt: labelUplink, addedMS: 120}},
		{"two recent answers: not enough to say it rose", []hopSamples{
			bh(1, "10.1.0.1", 0.1, 0.05, 40, 195, 201), bh(2, "172.17.0.1", 0.2, 0.05, 40, 196, 199),
			bh(3, peer, 0.3, 0.05, 40, 200, 197),
		}, verdict{}},
		{"one router answering slowly: its rise is not kept", []hopSamples{
			bh(1, "10.1.0.1", 0.1, 0.05, 40, 0.1, 0.1, 0.1), bh(2, "172.17.0.1", 0.2, 0.05, 40, 80, 95, 90),
			bh(3, "172.17.1.1", 0.3, 0.05, 40, 0.3, 0.3, 0.3), bh(4, peer, 0.4, 0.05, 40, 0.4, 0.4, 0.4),
		}, verdict{}},
		{"a noisy line's usual swing is no rise", []hopSamples{
			bh(1, "10.1.0.1", 1, 0.4, 40, 1, 1, 1), bh(2, peer, 3, 4, 40, 6, 7, 5),
		}, verdict{}},
		{"drained: back at the baseline", []hopSamples{
			bh(1, "10.1.0.1", 0.1, 0.05, 40, 0.1, 0.12, 0.09), bh(2, peer, 0.2, 0.05, 40, 0.2, 0.2, 0.2),
		}, verdict{}},
		{"the farthest hop without recent answers: no rise can be judged", []hopSamples{
			bh(1, "10.1.0.1", 0.1, 0.05, 40, 195, 201, 198), bh(2, peer, 0.2, 0.05, 40),
		}, verdict{}},
	} {
		check(t, c.name, analyze(c.hops, true), c.want)
	}
}

// A one-hop path places nothing, whatever rose: the peer is on this
// machine's LAN, and a trace cannot tell this machine, its LAN and the
// peer's machine apart.
func TestAnalyzeOneHop(t *testing.T) {
	r := analyze([]hopSamples{bh(1, "192.168.1.20", 0.3, 0.05, 40, 200, 210, 205)}, true)
	if !r.OneHop || r.DelayStarts != nil || r.LossStarts != nil {
		t.Fatalf("one hop: %+v, want one_hop and nothing placed", r)
	}
	r = analyze([]hopSamples{hs(1, "192.168.1.20", 0.3, 0.05, 40, 20)}, true)
	if !r.OneHop || r.LossStarts != nil || r.LossPending != nil {
		t.Fatalf("one lossy hop: %+v, want one_hop and nothing placed", r)
	}
}

// Until the test can place the loss, the path says how much the peer
// loses and about how many more probes it needs.
func TestAnalyzeLossPending(t *testing.T) {
	const peer = "203.0.113.7"
	r := analyze([]hopSamples{
		hs(1, "192.168.1.1", 1, 0.4, 40, 0), hs(2, "100.64.0.1", 4, 1, 40, 0), hs(3, peer, 7, 1, 38, 2),
	}, true)
	if r.LossStarts != nil || r.LossPending == nil || r.LossPending.Loss != 0.05 || r.LossPending.More <= 0 || r.LossPending.More%10 != 0 {
		t.Fatalf("2 of 40 lost at the peer: loss_starts %+v, pending %+v; want none placed, 0.05 pending with more probes asked for", r.LossStarts, r.LossPending)
	}
	// The estimate is what the test needs: with that many more at the
	// same shares, the loss is placed.
	f := 1 + float64(r.LossPending.More)/40
	n := int(math.Round(40 * f))
	k := int(math.Round(2 * f))
	r2 := analyze([]hopSamples{
		hs(1, "192.168.1.1", 1, 0.4, n, 0), hs(2, "100.64.0.1", 4, 1, n, 0), hs(3, peer, 7, 1, n-k, k),
	}, true)
	if r2.LossStarts == nil || r2.LossStarts.TTL != 3 {
		t.Fatalf("with %d more probes (%d of %d lost): loss_starts %+v, want hop 3", r.LossPending.More, k, n, r2.LossStarts)
	}
	// No loss at the peer: nothing pending.
	if r := analyze([]hopSamples{hs(1, "192.168.1.1", 1, 0.4, 40, 0), hs(2, peer, 4, 1, 40, 0)}, true); r.LossPending != nil {
		t.Fatalf("a clean path: pending %+v", r.LossPending)
	}
}

// The tests behind the judgements, against values worked out by hand.
func TestStats(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-4 }
	// P(X ≥ 3), X ~ Bin(3, 0.1) = 0.001; P(X ≥ 1), X ~ Bin(2, 0.5) = 0.75.
	if got := binomTail(3, 3, 0.1); !near(got, 0.001) {
		t.Errorf("binomTail(3, 3, 0.1) = %v", got)
	}
	if got := binomTail(1, 2, 0.5); !near(got, 0.75) {
		t.Errorf("binomTail(1, 2, 0.5) = %v", got)
	}
	if binomTail(0, 5, 0.2) != 1 || binomTail(6, 5, 0.2) != 0 {
		t.Error("binomTail's ends")
	}
	// Fisher, one-sided: 3 of 40 against 0 of 80 — all 3 losses among
	// the first 40 of 120: C(40,3)/C(120,3) = 9880/280840.
	if got := moreLoss(3, 40, 0, 80); !near(got, 9880.0/280840) {
		t.Errorf("moreLoss(3, 40, 0, 80) = %v", got)
	}
	// 1 of 2 against 1 of 2: P(X ≥ 1) with 2 losses among 4, 2 drawn = 5/6.
	if got := moreLoss(1, 2, 1, 2); !near(got, 5.0/6) {
		t.Errorf("moreLoss(1, 2, 1, 2) = %v", got)
	}
	if moreLoss(0, 10, 5, 10) != 1 {
		t.Error("no loss is never more")
	}
	// Wilson, 95 %: 10 of 100 is 0.0552 to 0.1744.
	if lo, hi := wilson(10, 100); !near(lo, 0.0552) || !near(hi, 0.1744) {
		t.Errorf("wilson(10, 100) = %v %v", lo, hi)
	}
}

// A hop's baseline is its answers before the recent ones over the last
// minutes; a held path keeps it; the recent answers alone show a rise.
func TestBaselineOfAPath(t *testing.T) {
	p := &hopPath{peer: peerA}
	at := time.Duration(0)
	add := func(rtt time.Duration) {
		at += time.Second
		p.Add(outcome{TTL: 1, Sent: at, RTT: rtt, Addr: r1})
		p.Add(outcome{TTL: 2, Sent: at, RTT: rtt + msec(0.1), Addr: peerA, Reached: true})
		p.refreshBase(at, false)
	}
	for range 60 {
		add(msec(1))
	}
	// Worked out every 5 s, the last time at 56 s: 56 answers, the newest
	// five recent.
	if h := p.hops[1]; !h.baseOK || h.base.med != 1 || len(h.base.sorted) != 51 {
		t.Fatalf("after a minute at 1 ms: baseline %+v (ok %v, %d answers), want 1 ms over 51", h.base.med, h.baseOK, len(h.base.sorted))
	}
	for range 4 {
		add(msec(201))
	}
	r := p.Result(at)
	if d := r.DelayStarts; d == nil || d.TTL != 1 || d.Added != 200*time.Millisecond {
		t.Fatalf("4 answers at 201 ms: delay starts %+v, want hop 1 +200", d)
	}
	if h := r.Hops[0]; !h.HasBase || h.Base != time.Millisecond || h.Median != 201*time.Millisecond {
		t.Fatalf("hop 1: base %v (%v), recent %v", h.Base, h.HasBase, h.Median)
	}
	// Held: ten more minutes of the queue do not become the baseline.
	for range 600 {
		at += time.Second
		p.Add(outcome{TTL: 1, Sent: at, RTT: msec(201), Addr: r1})
		p.Add(outcome{TTL: 2, Sent: at, RTT: msec(201.1), Addr: peerA, Reached: true})
		p.refreshBase(at, true)
	}
	if d := p.Result(at).DelayStarts; d == nil || d.Added != 200*time.Millisecond {
		t.Fatalf("held for ten minutes: delay starts %+v, want still +200", d)
	}
	// Released: the window is all queue now, and that is the line: its
	// baseline, no rise over it.
	p.refreshBase(at+baseEvery, false)
	if h := p.Result(at).Hops[0]; !h.HasBase || h.Base != 201*time.Millisecond || h.Median != 201*time.Millisecond {
		t.Fatalf("released after ten minutes: hop 1 %+v, want its baseline at 201 ms", h)
	}
}

// Until a hop first answers, its silence may be the path not being there
// yet (a peer that has not linked this machine answers no probe): those
// timeouts count for nothing once it answers. A hop that never answers
// keeps its losses: it is silent.
func TestLossesBeforeTheFirstAnswerCountForNothing(t *testing.T) {
	p := &hopPath{peer: peerA}
	at := time.Duration(0)
	for i := range 40 {
		at += time.Second
		p.Add(outcome{TTL: 1, Sent: at, RTT: msec(1), Addr: r1})
		p.Add(outcome{TTL: 2, Sent: at, Lost: true})
		if i < 6 {
			p.Add(outcome{TTL: 3, Sent: at, Lost: true})
		} else {
			p.Add(outcome{TTL: 3, Sent: at, RTT: msec(3), Addr: peerA, Reached: true})
		}
	}
	r := p.Result(at)
	if h := r.Hops[2]; h.Sent != 34 || h.Loss != 0 {
		t.Errorf("the peer, silent for its first 6 probes: %d outcomes, loss %v; want 34, none lost", h.Sent, h.Loss)
	}
	if h := r.Hops[1]; h.Sent != 40 || h.Loss != 1 || h.Addr != nil {
		t.Errorf("a silent hop: %+v, want all 40 lost", h)
	}
	if r.LossStarts != nil || r.LossPending != nil {
		t.Errorf("loss starts %+v, pending %+v: want none", r.LossStarts, r.LossPending)
	}
}
