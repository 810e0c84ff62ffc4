package ui

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// linkAt is a measured link picture with the given cumulative totals.
func linkAt(sent, retx, exp, miss uint64, peer *[2]uint64) feed.LinkView {
	lv := feed.LinkView{Peer: "bob"}
	lv.State = feed.LinkMeasured
	lv.RTTKnown, lv.SRTT, lv.RTO = true, 50*time.Millisecond, 100*time.Millisecond
	lv.LossKnown, lv.Sent, lv.Retransmitted, lv.Expected, lv.Missing = true, sent, retx, exp, miss
	if peer != nil {
		lv.PeerKnown, lv.PeerExpected, lv.PeerMissing = true, peer[0], peer[1]
	}
	return lv
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Shares are differenced per interval from the cumulative totals, never
// taken from the totals since the start (L5): a link that lost a lot early
// and nothing since shows 0 now.
func TestSharesDifferencedPerInterval_L5(t *testing.T) {
	h := &linkHist{peer: "bob"}
	h.observe(0, linkAt(100, 50, 100, 40, &[2]uint64{100, 30}))
	h.observe(time.Second, linkAt(200, 60, 300, 40, &[2]uint64{150, 30}))
	h.observe(2*time.Second, linkAt(300, 60, 400, 50, &[2]uint64{250, 40}))
	if n := len(h.samples); n != 3 {
		t.Fatalf("%d samples", n)
	}
	if sh := h.intervalShares(0); sh.resend.ok || sh.in.ok || sh.out.ok {
		t.Errorf("the oldest interval has nothing to difference against: %+v", sh)
	}
	sh := h.intervalShares(1)
	if !near(sh.resend.v, 0.10) || !near(sh.in.v, 0) || !near(sh.out.v, 0) {
		t.Errorf("interval 1: %+v, want resend 10%% (10/100), in 0 (0/200), out 0 (0/50)", sh)
	}
	sh = h.intervalShares(2)
	if !near(sh.resend.v, 0) || !near(sh.in.v, 0.10) || !near(sh.out.v, 0.10) {
		t.Errorf("interval 2: %+v, want resend 0, in 10%% (10/100), out 10%% (10/100)", sh)
	}
	// The window spans from the oldest kept reading to the newest.
	w := h.windowShares()
	if !near(w.resend.v, 10.0/200) || !near(w.in.v, 10.0/300) || !near(w.out.v, 10.0/150) {
		t.Errorf("window: %+v", w)
	}
}

// Several pictures inside one interval update that interval: its share is
// against the end of the previous interval, and a bad moment sticks.
func TestPicturesWithinAnIntervalMerge(t *testing.T) {
	h := &linkHist{peer: "bob"}
	h.observe(0, linkAt(100, 0, 100, 0, nil))
	bad := linkAt(150, 5, 150, 0, nil)
	bad.Bad, bad.State = true, feed.LinkBad
	h.observe(1100*time.Millisecond, bad)
	h.observe(1900*time.Millisecond, linkAt(200, 10, 200, 0, nil))
	if len(h.samples) != 2 {
		t.Fatalf("%d samples, want 2", len(h.samples))
	}
	if !h.samples[1].bad {
		t.Error("a bad moment inside an interval should mark it")
	}
	if sh := h.intervalShares(1); !near(sh.resend.v, 0.1) {
		t.Errorf("resend share %v, want 10/100", sh.resend)
	}
	if !h.retried(1) || h.retried(0) {
		t.Error("retried marks the interval with resends only")
	}
}

// Nothing sent in a span is an unknown share, not a zero one (L3); a peer
// that has not reported leaves the outbound share unknown (L4).
func TestNothingToDivideIsUnknown_L3_L4(t *testing.T) {
	h := &linkHist{peer: "bob"}
	h.observe(0, linkAt(100, 1, 100, 1, nil))
	h.observe(time.Second, linkAt(100, 1, 100, 1, nil))
	sh := h.intervalShares(1)
	if sh.resend.ok || sh.in.ok || sh.out.ok {
		t.Errorf("no traffic and no peer report should be unknown: %+v", sh)
	}
	if fmtShare(sh.resend) != unknown || fmtShare(share{0, true}) != "0.0%" {
		t.Error("unknown must print as — and a real zero as 0.0%")
	}
}

// Totals never fall on one link; when they do the link was replaced and its
// history starts over rather than showing a negative share.
func TestNewLinkRestartsHistory_L5(t *testing.T) {
	h := &linkHist{peer: "bob"}
	for i := 0; i < 5; i++ {
		h.observe(time.Duration(i)*time.Second, linkAt(uint64(100*(i+1)), 0, 100, 0, nil))
	}
	h.observe(5*time.Second, linkAt(10, 0, 10, 0, nil))
	if len(h.samples) != 1 {
		t.Fatalf("%d samples after the totals fell, want 1", len(h.samples))
	}
}

// Intervals with no picture repeat the last reading, so one column is one
// interval and a gap shows as zero-traffic (unknown) intervals.
func TestGapsKeepTheTimeAxis(t *testing.T) {
	h := &linkHist{peer: "bob"}
	h.observe(0, linkAt(100, 0, 100, 0, nil))
	h.observe(4*time.Second, linkAt(200, 0, 200, 0, nil))
	if len(h.samples) != 5 {
		t.Fatalf("%d samples, want 5 (one per interval)", len(h.samples))
	}
	for i, s := range h.samples {
		if s.bucket != int64(i) {
			t.Errorf("sample %d in bucket %d", i, s.bucket)
		}
	}
}

func TestHistoryIsBounded(t *testing.T) {
	h := &linkHist{peer: "bob"}
	for i := 0; i < 5*historyCap; i++ {
		h.observe(time.Duration(i)*time.Second, linkAt(uint64(i), 0, uint64(i), 0, nil))
	}
	if n := len(h.samples); n > 2*historyCap || n < historyCap {
		t.Fatalf("%d samples kept", n)
	}
	if h.samples[len(h.samples)-1].bucket != 5*historyCap-1 {
		t.Fatal("the newest interval must be kept")
	}
}

// L8: a resend share far above the observed loss says the round-trip
// estimate has fallen behind; resends that match loss say nothing.
func TestL8HintWhenResendsFarAboveLoss_L8(t *testing.T) {
	cases := []struct {
		name           string
		resend, in, ot share
		want           bool
	}{
		{"resends, no loss", share{0.20, true}, share{0, true}, share{0, true}, true},
		{"resends match loss", share{0.20, true}, share{0.10, true}, share{0.08, true}, false},
		{"few resends", share{0.02, true}, share{0, true}, share{0, true}, false},
		{"outbound loss explains it", share{0.20, true}, share{0, true}, share{0.15, true}, false},
		{"no peer report, no inbound loss", share{0.20, true}, share{0, true}, share{}, true},
		{"nothing observed at all", share{0.20, true}, share{}, share{}, false},
		{"resends unknown", share{}, share{0, true}, share{0, true}, false},
	}
	for _, c := range cases {
		_, _, got := l8Hint(shares{c.resend, c.in, c.ot})
		if got != c.want {
			t.Errorf("%s: hint %v, want %v", c.name, got, c.want)
		}
	}
}

// The steps of a staged decrease come from rungs.Schedule (S12): the new
// send period applies on activation, the look-ahead drops one old send
// period rounded up to new ones, then one new send period per step.
func TestStagedSteps_S12(t *testing.T) {
	cases := []struct {
		from, to rungs.Timing
		want     string
	}{
		{rungs.RungTiming(5), rungs.RungTiming(2), "5/15 2/10 2/8 2/6"},
		{rungs.RungTiming(3), rungs.RungTiming(2), "3/9 2/6"},
		{rungs.Timing{SendPeriod: 2, LookAhead: 10}, rungs.RungTiming(2), "2/10 2/8 2/6"},
		{rungs.Timing{SendPeriod: 10, LookAhead: 60}, rungs.RungTiming(10), "10/60 10/50 10/40 10/30"},
		{rungs.RungTiming(2), rungs.RungTiming(2), ""},
	}
	for _, c := range cases {
		var got []string
		for _, s := range stagedSteps(c.from, c.to, 30) {
			got = append(got, s.String())
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%v → %v: %q, want %q", c.from, c.to, g, c.want)
		}
	}
}

// The round-trip chart's y-range follows the data on screen: once a spike
// has scrolled away the scale comes back down.
func TestRoundTripScaleFollowsDataBackDown(t *testing.T) {
	m := model(t, newStaticFeed(), 120, 40, nil)
	h := &linkHist{peer: "bob"}
	at := time.Duration(0)
	add := func(n int, srtt float64) {
		for i := 0; i < n; i++ {
			lv := linkAt(uint64(at/time.Second+1), 0, 1, 0, nil)
			lv.SRTT, lv.RTO = msd(srtt), msd(srtt*1.5)
			h.observe(at, lv)
			at += time.Second
		}
	}
	top := func() float64 {
		lines := m.charts.rttChart(h, 65, 12)
		best := 0.0
		for _, l := range lines[1 : len(lines)-1] {
			f := strings.Fields(strings.Split(l, "│")[0])
			if len(f) == 1 {
				var v float64
				for _, r := range f[0] {
					if r >= '0' && r <= '9' {
						v = v*10 + float64(r-'0')
					}
				}
				best = max(best, v)
			}
		}
		return best
	}
	add(30, 80)
	add(5, 2000)
	spike := top()
	if spike < 2000*1.5*0.8 {
		t.Fatalf("with the spike on screen the top label is %v", spike)
	}
	add(60, 80) // the spike is now 60 columns back, off a 60-column chart
	calm := top()
	if calm > 200 {
		t.Fatalf("after the spike scrolled away the top label is still %v", calm)
	}
}

// Events become messages with their frame and the session time they
// happened at: the one a live line carries (game_ms), else their frame's,
// counted back from the picture at the rate in force; tier messages keep
// their tier for colouring (S18).
func TestEventsBecomeMessages_S18(t *testing.T) {
	s := newSession()
	game := 1500.0
	s.apply(feed.Update{View: fixtureView(2), Events: []feed.Event{
		&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster, Frame: 0}, Player: "alice"},
		&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 64, GameMs: &game}, Text: "Connection quality target: Poor", Kind: feed.MessageTier, Subject: "Poor"},
		&feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: 70}, Player: "alice", WaitMs: 40},
		&feed.RemovedEvent{Header: feed.Header{Type: vocab.EventRemoved, Frame: 80}, Player: "bob"},
		&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster, Frame: 80}, Player: "carol"},
	}})
	if len(s.msgs) != 4 {
		t.Fatalf("%d messages, want 4 (stalls are not messages)", len(s.msgs))
	}
	tier := s.msgs[1]
	if tier.kind != msgTier || tier.tier != "Poor" || tier.frame != 64 || tier.at != 1500*time.Millisecond {
		t.Errorf("tier message %+v", tier)
	}
	if s.msgs[0].at != 0 || s.msgs[2].at != 80*time.Second/30 || s.msgs[0].pregame {
		t.Errorf("events without game_ms at %v and %v (pregame %v), want their frames' times 0s and 2.67s",
			s.msgs[0].at, s.msgs[2].at, s.msgs[0].pregame)
	}
	if s.msgs[2].text != "bob left the session" || s.msgs[3].text != "carol took over as master" {
		t.Errorf("membership messages %q, %q", s.msgs[2].text, s.msgs[3].text)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	s := newSession()
	ups := fixtureUpdates()
	for _, u := range ups[:10] {
		s.apply(u)
	}
	c := s.clone()
	for _, u := range ups[10:] {
		s.apply(u)
	}
	if c.view.At != 9*time.Second || len(c.links["bob"].samples) != 10 || len(c.msgs) != 1 {
		t.Fatalf("clone changed: at %v, %d samples, %d msgs", c.view.At, len(c.links["bob"].samples), len(c.msgs))
	}
}

// The worst link stands out only when it is worse than every other: bad
// before slow, and a tie marks nothing.
func TestWorstLink(t *testing.T) {
	mk := func(peer string, srtt *float64, bad bool) *linkHist {
		h := &linkHist{peer: peer}
		if srtt != nil {
			h.last.RTTKnown, h.last.SRTT = true, msd(*srtt)
		}
		h.last.Bad = bad
		return h
	}
	cases := []struct {
		name  string
		links []*linkHist
		want  string
	}{
		{"slowest", []*linkHist{mk("a", ptr(60.0), false), mk("b", ptr(600.0), false)}, "b"},
		{"bad before slow", []*linkHist{mk("a", ptr(600.0), false), mk("b", ptr(60.0), true)}, "b"},
		{"tie", []*linkHist{mk("a", ptr(60.0), false), mk("b", ptr(60.0), false)}, ""},
		{"LAN noise", []*linkHist{mk("a", ptr(0.2), false), mk("b", ptr(0.3), false)}, ""},
		{"too close", []*linkHist{mk("a", ptr(100.0), false), mk("b", ptr(110.0), false)}, ""},
		{"nothing measured", []*linkHist{mk("a", nil, false), mk("b", nil, false)}, ""},
		{"one link", []*linkHist{mk("a", ptr(600.0), false)}, ""},
		{"measured beats unknown", []*linkHist{mk("a", nil, false), mk("b", ptr(60.0), false)}, "b"},
	}
	for _, c := range cases {
		if got := worst(c.links); got != c.want {
			t.Errorf("%s: worst %q, want %q", c.name, got, c.want)
		}
	}
}
