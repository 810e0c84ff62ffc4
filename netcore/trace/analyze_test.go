package trace

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/longtest"
	"github.com/lagscope/lagscope/units"
)

// hs is a hop's samples: n answers spread evenly over med ± spread (their
// median is med), and lost timeouts. addr "" is a hop that never answered.
func hs(ttl int, addr string, med, spread float64, n, lost int) hopSamples {
	h := hopSamples{TTL: ttl, Lost: lost}
	if addr != "" {
		h.Addr = netip.MustParseAddr(addr)
	}
	for i := range n {
		h.RTTs = append(h.RTTs, msec(med+float64(i%5-2)*spread/2))
	}
	return h
}

// silent is a hop that never answered n probes.
func silent(ttl, n int) hopSamples { return hopSamples{TTL: ttl, Lost: n} }

type verdict struct {
	delayTTL int // 0: no delay_starts
	delayAt  Label
	addedMS  float64
	lossTTL  int // 0: no loss_starts
	lossAt   Label
	limited  []int // the hops rate-limited
}

func check(t *testing.T, name string, r Result, want verdict) {
	t.Helper()
	got := verdict{}
	if d := r.DelayStarts; d != nil {
		got.delayTTL, got.delayAt, got.addedMS = d.TTL, d.Link, units.Millis(d.Added)
	}
	if l := r.LossStarts; l != nil {
		got.lossTTL, got.lossAt = l.TTL, l.Link
	}
	for _, h := range r.Hops {
		if h.RateLimited {
			got.limited = append(got.limited, h.TTL)
		}
	}
	if got.delayTTL != want.delayTTL || got.delayAt != want.delayAt || got.addedMS != want.addedMS ||
		got.lossTTL != want.lossTTL || got.lossAt != want.lossAt || !equalInts(got.limited, want.limited) {
		t.Errorf("%s:\n got %+v\nwant %+v\n%+v", name, got, want, r)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAnalyze(t *testing.T) {
	const peer = "203.0.113.7"
	for _, c := range []struct {
		name string
		hops []hopSamples
		want verdict
	}{
		{"a queue at hop 1", []hopSamples{
			hs(1, "192.168.1.1", 210, 40, 30, 0), hs(2, "100.64.0.1", 214, 40, 30, 0),
			hs(3, "81.2.69.1", 218, 40, 30, 0), hs(4, peer, 222, 40, 30, 0),
		}, verdict{delayTTL: 1, delayAt: labelLAN, addedMS: 210}},
		{"a queue at the uplink", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), hs(2, "100.64.0.1", 180, 30, 30, 0),
			hs(3, "81.2.69.1", 183, 30, 30, 0), hs(4, "81.2.69.2", 186, 30, 30, 0), hs(5, peer, 188, 30, 30, 0),
		}, verdict{delayTTL: 2, delayAt: labelUplink, addedMS: 179}},
		{"a 5% lossy router at hop 3, its loss seen from hop 4 on", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 400, 0), hs(2, "100.64.0.1", 4, 1, 400, 0),
			hs(3, "81.2.69.1", 7, 1, 400, 0), hs(4, "81.2.69.2", 9, 1, 361, 39),
			hs(5, "62.1.1.1", 12, 1, 361, 39), hs(6, peer, 14, 1, 361, 39),
		}, verdict{lossTTL: 4, lossAt: labelISP}},
		{"a rate-limited hop", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), hs(2, "100.64.0.1", 4, 1, 30, 0),
			hs(3, "81.2.69.1", 7, 1, 21, 9), hs(4, "81.2.69.2", 9, 1, 30, 0), hs(5, peer, 12, 1, 30, 0),
		}, verdict{limited: []int{3}}},
		{"a silent router, the hops after it answering", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), silent(2, 30),
			hs(3, "81.2.69.1", 4, 1, 30, 0), hs(4, peer, 7, 1, 30, 0),
		}, verdict{}},
		{"a delay spike at one hop, not kept", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), hs(2, "100.64.0.1", 4, 1, 30, 0),
			hs(3, "81.2.69.1", 80, 10, 30, 0), hs(4, "81.2.69.2", 8, 1, 30, 0), hs(5, peer, 11, 1, 30, 0),
		}, verdict{}},
		{"a spike, then delay that stays", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), hs(2, "100.64.0.1", 60, 4, 30, 0),
			hs(3, "81.2.69.1", 4, 1, 30, 0), hs(4, "81.2.69.2", 90, 2, 30, 0), hs(5, peer, 92, 2, 30, 0),
		}, verdict{delayTTL: 4, delayAt: labelISP, addedMS: 30}},
		{"fewer than 10 samples: nothing judged; 3 of 9 lost against none of the 9 before is not enough", []hopSamples{
			hs(1, "192.168.1.1", 210, 40, 9, 0), hs(2, "100.64.0.1", 214, 40, 9, 0), hs(3, peer, 218, 40, 6, 3),
		}, verdict{}},
		{"an unjudged hop starts no delay; its loss, against none after it, is rate limiting", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), hs(2, "100.64.0.1", 90, 1, 5, 4),
			hs(3, "81.2.69.1", 4, 1, 30, 0), hs(4, peer, 7, 1, 30, 0),
		}, verdict{limited: []int{2}}},
		{"2 of 40 lost at the peer against none of 80: not enough to say", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 40, 0), hs(2, "100.64.0.1", 4, 1, 40, 0), hs(3, peer, 7, 1, 38, 2),
		}, verdict{}},
		{"the farthest answering hop unjudged: no verdict yet", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 30, 0), hs(2, "100.64.0.1", 150, 1, 30, 0),
			hs(3, "81.2.69.1", 7, 1, 27, 3), hs(4, peer, 155, 1, 5, 0),
		}, verdict{}},
		{"12 of 120 lost from hop 3 on against none before: loss", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 120, 0), hs(2, "100.64.0.1", 150, 1, 120, 0),
			hs(3, "81.2.69.1", 152, 1, 108, 12), hs(4, peer, 153, 1, 20, 0),
		}, verdict{delayTTL: 2, delayAt: labelUplink, addedMS: 149, lossTTL: 3, lossAt: labelISP}},
		{"a later hop that lost a few more by chance is not named before the first lossy one", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 100, 0), hs(2, "100.64.0.1", 4, 1, 100, 0),
			hs(3, "81.2.69.1", 7, 1, 98, 2), hs(4, "81.2.69.2", 9, 1, 97, 3), hs(5, "62.1.1.1", 11, 1, 92, 8),
			hs(6, peer, 14, 1, 96, 4),
		}, verdict{lossTTL: 3, lossAt: labelISP}},
		{"loss on the last link only", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 120, 0), hs(2, "100.64.0.1", 4, 1, 120, 0), hs(3, peer, 7, 1, 114, 6),
		}, verdict{lossTTL: 3, lossAt: labelPeer}},
		{"rate limiting ahead of real loss", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 90, 0), hs(2, "100.64.0.1", 4, 1, 45, 45),
			hs(3, "81.2.69.1", 7, 1, 90, 0), hs(4, "81.2.69.2", 9, 1, 81, 9), hs(5, peer, 12, 1, 81, 9),
		}, verdict{lossTTL: 4, lossAt: labelISP, limited: []int{2}}},
		{"a start one hop late is not named: hop 3 loses as much, by chance a little less so far", []hopSamples{
			hs(1, "192.168.1.1", 1, 0.4, 45, 0), hs(2, "100.64.0.1", 4, 1, 45, 0),
			hs(3, "81.2.69.1", 7, 1, 44, 1), hs(4, "81.2.69.2", 9, 1, 40, 5), hs(5, peer, 12, 1, 40, 5),
		}, verdict{}},
		{"the peer behind its NAT router answers at hops 4 and 5 from one address, both past a lossy router: hop 4 lost fewer by chance, and the loss starts there all the same", []hopSamples{
			hs(1, "198.51.100.1", 1, 0.4, 70, 0), hs(2, "172.19.2.2", 1, 0.4, 70, 0), hs(3, "172.19.1.2", 1, 0.4, 70, 0),
			hs(4, peer, 1, 0.4, 68, 2), hs(5, peer, 1, 0.4, 58, 12),
		}, verdict{lossTTL: 4, lossAt: labelPeer}},
		{"a couple of dozen probes a hop: the last hop's 5 of 24 is not named before the hops have fifty each", []hopSamples{
			hs(1, "10.3.0.1", 1, 0.4, 24, 0), hs(2, "172.19.0.1", 1, 0.4, 24, 0), hs(3, "172.19.1.1", 1, 0.4, 24, 0),
			hs(4, "172.19.2.1", 1, 0.4, 24, 0), hs(5, peer, 1, 0.4, 19, 5),
		}, verdict{}},
		{"the same, hop 4 losing more than hop 5 by chance (p ≈ 0.002, not one in a thousand): not rate-limited, and the loss starts at hop 4", []hopSamples{
			hs(1, "198.51.100.1", 1, 0.4, 256, 0), hs(2, "172.19.2.2", 1, 0.4, 256, 0), hs(3, "172.19.1.2", 1, 0.4, 256, 0),
			hs(4, peer, 1, 0.4, 112, 23), hs(5, peer, 1, 0.4, 126, 8),
		}, verdict{lossTTL: 4, lossAt: labelPeer}},
		{"hop 4 limits its answers hard, hop 5 at its address loses 6 %: rate-limited, and hop 5's loss, past hop 4's link in, starts at hop 4", []hopSamples{
			hs(1, "198.51.100.1", 1, 0.4, 256, 0), hs(2, "172.19.2.2", 1, 0.4, 256, 0), hs(3, "172.19.1.2", 1, 0.4, 256, 0),
			hs(4, peer, 1, 0.4, 90, 45), hs(5, peer, 1, 0.4, 126, 8),
		}, verdict{lossTTL: 4, lossAt: labelPeer, limited: []int{4}}},
		{"a router past a 5 % lossy one loses a few more than the hops after it by chance (36, 22 and 16 of 256): not rate-limited, and the loss starts at it", []hopSamples{
			hs(1, "10.3.0.1", 1, 0.4, 256, 0), hs(2, "172.19.0.1", 1, 0.4, 256, 0), hs(3, "172.19.1.1", 1, 0.4, 220, 36),
			hs(4, "172.19.2.1", 1, 0.4, 234, 22), hs(5, peer, 1, 0.4, 240, 16),
		}, verdict{lossTTL: 3, lossAt: labelISP}},
		{"fifty probes a hop past a 5 % lossy router: the first hop past it lost 1, the two after it 5 and 6 — no start is named a hop late (the hop before alone is not below the rest at 99 %, as it must be while the start has under a hundred probes)", []hopSamples{
			hs(1, "10.3.0.1", 1, 0.4, 50, 0), hs(2, "172.19.0.1", 1, 0.4, 50, 0), hs(3, "172.19.1.1", 1, 0.4, 49, 1),
			hs(4, "172.19.2.1", 1, 0.4, 45, 5), hs(5, peer, 1, 0.4, 44, 6),
		}, verdict{}},
		{"a router losing 30 of 256 before hops that lose 15 and 11: 2.3 times their share, not the 2.5 a rate-limited router loses, and the loss starts at it", []hopSamples{
			hs(1, "10.3.0.1", 1, 0.4, 256, 0), hs(2, "172.19.0.1", 1, 0.4, 256, 0), hs(3, "172.19.1.1", 1, 0.4, 226, 30),
			hs(4, "172.19.2.1", 1, 0.4, 241, 15), hs(5, peer, 1, 0.4, 245, 11),
		}, verdict{lossTTL: 3, lossAt: labelISP}},
		{"a router losing 8 of 256 of its own before hops that lose 60 of 256 each: the loss starts past it, where the most of it begins", []hopSamples{
			hs(1, "10.3.0.1", 1, 0.4, 256, 0), hs(2, "172.19.0.1", 1, 0.4, 256, 0), hs(3, "172.19.1.1", 1, 0.4, 248, 8),
			hs(4, "172.19.2.1", 1, 0.4, 196, 60), hs(5, peer, 1, 0.4, 196, 60),
		}, verdict{lossTTL: 4, lossAt: labelISP}},
		{"the peer's NAT router rate-limits its answers and nothing is lost: hop 4 is rate-limited, no loss starts", []hopSamples{
			hs(1, "198.51.100.1", 1, 0.4, 256, 0), hs(2, "172.19.2.2", 1, 0.4, 256, 0), hs(3, "172.19.1.2", 1, 0.4, 256, 0),
			hs(4, peer, 1, 0.4, 95, 40), hs(5, peer, 1, 0.4, 134, 0),
		}, verdict{limited: []int{4}}},
		{"the same, later: the loss starts at hop 4, the first hop past the router", []hopSamples{
			hs(1, "198.51.100.1", 1, 0.4, 200, 0), hs(2, "172.19.2.2", 1, 0.4, 200, 0), hs(3, "172.19.1.2", 1, 0.4, 200, 0),
			hs(4, peer, 1, 0.4, 126, 9), hs(5, peer, 1, 0.4, 122, 13),
		}, verdict{lossTTL: 4, lossAt: labelPeer}},
	} {
		check(t, c.name, analyze(c.hops, true), c.want)
	}
}

// The margin is max(5 ms, 3 × the median absolute deviation of the hops
// before): hop 1's answers are 0 and 4 ms, five each — median 2, every
// deviation 2, margin 6 ms.
func TestDelayMargin(t *testing.T) {
	hop1 := hopSamples{TTL: 1, Addr: r1}
	for i := range 10 {
		hop1.RTTs = append(hop1.RTTs, msec(float64(4*(i%2))))
	}
	for _, c := range []struct {
		med  float64
		want verdict
	}{
		{7.9, verdict{}}, // added 5.9 < 6
		{8.1, verdict{delayTTL: 2, delayAt: labelPeer, addedMS: 6.1}}, // added 6.1 ≥ 6
	} {
		r := analyze([]hopSamples{hop1, hs(2, "203.0.113.7", c.med, 0, 10, 0)}, true)
		check(t, "hop 2 at "+time.Duration(c.med*float64(time.Millisecond)).String(), r, c.want)
	}
	// With quiet hops before it, 5 ms is the bound.
	quiet := hs(1, "192.168.1.1", 1, 0, 10, 0)
	check(t, "5.9 ms after a quiet hop", analyze([]hopSamples{quiet, hs(2, "203.0.113.7", 6.9, 0, 10, 0)}, true),
		verdict{delayTTL: 2, delayAt: labelPeer, addedMS: 5.9})
	check(t, "4.9 ms after a quiet hop", analyze([]hopSamples{quiet, hs(2, "203.0.113.7", 5.9, 0, 10, 0)}, true), verdict{})
}

func TestLabels(t *testing.T) {
	addrs := []string{
		"192.168.1.1", "100.64.3.1", "10.0.0.1", "", "81.2.69.1", "172.16.0.1",
		"81.2.69.2", "10.1.1.1", "", "62.1.1.1", "203.0.113.7",
	}
	want := []Label{
		labelLAN, labelUplink, labelISP, labelISP, labelISP, labelISP,
		labelISP, labelBeyond, labelBeyond, labelBeyond, labelPeer,
	}
	var hops []hopSamples
	for i, a := range addrs {
		hops = append(hops, hs(i+1, a, float64(i), 0, 10, 0))
	}
	r := analyze(hops, true)
	for i, h := range r.Hops {
		if h.Link != want[i] {
			t.Errorf("hop %d (%s): %s, want %s", h.TTL, addrs[i], h.Link, want[i])
		}
	}
	if r := analyze(hops, false); r.Hops[len(hops)-1].Link != labelBeyond {
		t.Errorf("incomplete path's last hop: %s, want beyond (not the peer)", r.Hops[len(hops)-1].Link)
	}
	// A peer on the LAN: its one hop is the peer.
	if r := analyze(hops[:1], true); r.Hops[0].Link != labelPeer || !r.OneHop {
		t.Errorf("single-hop path: %s, one hop %v; want peer, true", r.Hops[0].Link, r.OneHop)
	}
	if r := analyze(hops[:2], true); r.Hops[0].Link != labelLAN || r.Hops[1].Link != labelPeer {
		t.Errorf("two-hop path: %s %s, want lan peer", r.Hops[0].Link, r.Hops[1].Link)
	}
	// Behind NAT: the peer's router answers from the peer's public
	// address, one hop before the peer; both are the peer's link.
	nat := []hopSamples{hs(1, "192.168.1.1", 1, 0, 10, 0), hs(2, "198.18.1.1", 2, 0, 10, 0),
		hs(3, "203.0.113.7", 3, 0, 10, 0), hs(4, "203.0.113.7", 4, 0, 10, 0)}
	if got := analyze(nat, true).Hops; got[1].Link != labelUplink || got[2].Link != labelPeer || got[3].Link != labelPeer {
		t.Errorf("NATed peer: %s %s %s, want uplink peer peer", got[1].Link, got[2].Link, got[3].Link)
	}
	if got := analyze(nat, false).Hops; got[2].Link != labelISP {
		t.Errorf("incomplete path: hop 3 %s, want isp (no peer known)", got[2].Link)
	}
	// The peer's address known (the link's destination), before the
	// peer has answered: its router's hop is the peer's link already.
	if got := analyzeTo(nat[:3], false, netip.MustParseAddr("203.0.113.7")).Hops; got[1].Link != labelUplink || got[2].Link != labelPeer {
		t.Errorf("incomplete path toward a known peer: %s %s, want uplink peer", got[1].Link, got[2].Link)
	}
	v6 := []hopSamples{hs(1, "fe80::1", 1, 0, 10, 0), hs(2, "2001:db8::1", 2, 0, 10, 0),
		hs(3, "fd00::1", 3, 0, 10, 0), hs(4, "2001:db8::2", 4, 0, 10, 0), hs(5, "2001:db8::3", 5, 0, 10, 0),
		hs(6, "2001:db8::4", 6, 0, 10, 0)}
	got := analyze(v6, false).Hops
	for i, l := range []Label{labelLAN, labelUplink, labelISP, labelISP, labelISP, labelBeyond} {
		if got[i].Link != l {
			t.Errorf("IPv6 hop %d: %s, want %s", i+1, got[i].Link, l)
		}
	}
}

// A hop's figures, field for field: round trips rounded to 0.1 ms, the
// peer's 212.05 ms up to 212.1 ms.
func TestResultFigures(t *testing.T) {
	hop1 := hopSamples{TTL: 1, Addr: r1}
	for _, v := range []float64{0.6, 200, 210.4, 220, 260.1} {
		hop1.RTTs = append(hop1.RTTs, msec(v))
	}
	hop1.RTTs = append(hop1.RTTs, hop1.RTTs...)
	hop1.RTTs = append(hop1.RTTs, msec(210.4))
	peer := hopSamples{TTL: 3, Addr: peerA}
	for range 11 {
		peer.RTTs = append(peer.RTTs, msec(212.05))
	}
	r := analyze([]hopSamples{hop1, silent(2, 11), peer}, true)
	a1, ap := r1, peerA
	const us = time.Microsecond
	want := Result{Hops: []Hop{
		{TTL: 1, Addr: &a1, Link: labelLAN, Sent: 11, LossCI: [2]float64{0, 0.2588}, Answered: true,
			Best: 600 * us, Median: 210400 * us, Worst: 260100 * us, Last: 210400 * us, Judged: true},
		{TTL: 2, Link: labelUplink, Sent: 11, Loss: 1, LossCI: [2]float64{0.7412, 1}, Judged: true},
		{TTL: 3, Addr: &ap, Link: labelPeer, Sent: 11, LossCI: [2]float64{0, 0.2588}, Answered: true,
			Best: 212100 * us, Median: 212100 * us, Worst: 212100 * us, Last: 212100 * us, Judged: true},
	}, DelayStarts: &DelayStart{TTL: 1, Link: labelLAN, Added: 210400 * us}, Complete: true}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("result\n got %+v\nwant %+v", r, want)
	}
}

// A round trip held as a Duration and rounded to tenth is the figure the
// rules' ms round to: at every halfway point and a nanosecond either side,
// up to 100 s.
func TestTenthRoundsAsTheMillis(t *testing.T) {
	for k := range time.Duration(1_000_000) {
		for _, d := range []time.Duration{k*tenth + tenth/2 - 1, k*tenth + tenth/2, k*tenth + tenth/2 + 1} {
			if a, b := tenthOf(units.Millis(d)), d.Round(tenth); a != b {
				t.Fatalf("%v: %v from its ms, %v from the Duration", d, a, b)
			}
		}
	}
}

// The judgement is asked every second of a trace, each time over the
// latest probes, so a chance result at one look is a wrong event. Traces
// of a path that loses 9.57 % from hop 3 on (the netns path test's lossy
// router: 5 % each way), one probe a second a hop in windows of 256, and
// of one that loses the same from hop 4 on, judged every second for 250
// s: seldom does any second name another hop, and every trace places the
// start within two and a half minutes (at most 3 % of the traces name
// another hop; at 95 % for the hop before the start, 6 % did). The seeds are fixed: the counts are the same
// every run.
func TestLossStartOverRepeatedLooks(t *testing.T) {
	const seconds, window, loss = 250, 256, 0.0957
	runs := longtest.Count(60, 150)
	most := (runs*3 + 99) / 100 // 3 %, rounded up
	// Every hop's answers, at most a window's; each look takes as many as
	// it has. Their round trips are all alike (loss is what is judged), so
	// the race detector's run stays short.
	full := []hopSamples{
		hs(1, "10.3.0.1", 1, 0, window, 0), hs(2, "172.19.0.1", 1, 0, window, 0), hs(3, "172.19.1.1", 1, 0, window, 0),
		hs(4, "172.19.2.1", 1, 0, window, 0), hs(5, "203.0.113.7", 1, 0, window, 0),
	}
	hops := make([]hopSamples, len(full))
	copy(hops, full)
	for _, first := range []int{3, 4} {
		rng := rand.New(rand.NewPCG(7, uint64(first)))
		wrong, latest := 0, 0
		for range runs {
			var win [3][]bool
			named, placed := false, -1
			for sec := range seconds {
				for h := range win {
					win[h] = append(win[h], h+3 >= first && rng.Float64() < loss)
					if len(win[h]) > window {
						win[h] = win[h][1:]
					}
				}
				n := len(win[0])
				var k [3]int
				for h := range win {
					for _, lost := range win[h] {
						if lost {
							k[h]++
						}
					}
				}
				for i := range hops {
					lost := 0
					if i >= 2 {
						lost = k[i-2]
					}
					hops[i].RTTs, hops[i].Lost = full[i].RTTs[:n-lost], lost
				}
				r := analyze(hops, true)
				if l := r.LossStarts; l != nil {
					if placed < 0 {
						placed = sec
					}
					named = named || l.TTL != first
				}
			}
			if named {
				wrong++
			}
			if placed < 0 {
				placed = seconds
			}
			latest = max(latest, placed)
		}
		t.Logf("loss from hop %d: %d of %d traces named another hop at some second; the latest placed at %d s", first, wrong, runs, latest)
		if wrong > most || latest > 150 {
			t.Errorf("loss from hop %d: %d of %d traces named another hop (want at most %d), the latest placed at %d s (want at most 150)", first, wrong, runs, most, latest)
		}
	}
}
