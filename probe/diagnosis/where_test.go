package diagnosis

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		if s == "" {
			out = append(out, netip.Addr{})
			continue
		}
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func start(ttl int, link vocab.HopLink, ms float64) *TraceStart {
	return &TraceStart{TTL: ttl, Link: link, AddedMs: ms}
}

// Five players, erin 150 ms slower than the rest: the round trips name her.
func erinSlow() Input {
	w := world{names: names(5), share: []float64{20, 25, 30, 35, 170}, noise: 1, seed: 3}
	return w.build()
}

// Each cause's advice, second in the verdict, in the player's name: the
// delay starting at erin's own router link (lan), on her line out
// (uplink), at her ISP (hop 3).
func TestWhereAdviceForEachCause(t *testing.T) {
	cases := []struct {
		link vocab.HopLink
		ttl  int
		want string
	}{
		{linkLAN, 1, "erin's delay (148 ms) starts between erin's machine and the home router (Wi-Fi or cable): a cable, or being closer to the router, should help."},
		{linkUplink, 2, "erin's delay (148 ms) starts on erin's line out of the house, often the router's upload queue: a latency-under-load test will tell."},
		{linkISP, 3, "erin's delay (148 ms) starts at erin's ISP (hop 3): nothing at home will fix it; the ISP or another time of day may."},
	}
	for _, c := range cases {
		in := erinSlow()
		hops := addrs("192.168.1.1", "198.18.1.1", "100.64.0.1", "203.0.113.9", "198.51.100.10")
		in.Traces = []Trace{
			{From: 4, To: 0, Delay: start(c.ttl, c.link, 148), Hops: hops},
			{From: 4, To: 1, Delay: start(c.ttl, c.link, 140), Hops: hops},
			// alice's trace toward erin: the delay starts on its last link.
			{From: 0, To: 4, Delay: start(5, linkPeer, 150), Hops: addrs("192.168.7.1", "198.18.7.1", "203.0.113.9", "198.18.5.1", "198.18.5.2")},
		}
		d := Diagnose(in)
		if d.Culprit != "erin" {
			t.Fatalf("%s: culprit %q, want erin (%s)", c.link, d.Culprit, d.Verdict)
		}
		w := d.player("erin").Where
		if w == nil || w.Link != c.link || w.TTL != c.ttl || w.AddedMs != 148 || w.Confirmed != 1 {
			t.Fatalf("%s: where %+v, want %s ttl %d 148 ms confirmed by alice's trace", c.link, w, c.link, c.ttl)
		}
		if d.player("alice").Where != nil {
			t.Errorf("%s: alice has a where from a trace that starts at erin's end: %+v", c.link, d.player("alice").Where)
		}
		s := d.Sentences(d.Worded())
		if len(s) < 2 || s[1] != c.want {
			t.Errorf("%s: sentences %q\nwant second %q", c.link, s, c.want)
		}
		if !strings.HasPrefix(s[0], "erin's connection adds") {
			t.Errorf("%s: first sentence %q", c.link, s[0])
		}
		if d.SharedHop != nil {
			t.Errorf("%s: shared hop %+v from one player's traces", c.link, d.SharedHop)
		}
	}
}

// A queue past the homes that two players' paths cross: their traces show
// delay starting at the same hop address, which the diagnosis reports as
// the shared hop; the player the round trips point at is named no cause
// when its own traces show nothing on its side, and the verdict says no
// one can fix it at home.
func TestSharedHopNamesNoPlayer(t *testing.T) {
	in := erinSlow()
	hop := "10.0.5.1"
	in.Traces = []Trace{
		{From: 1, To: 4, Delay: start(4, linkBeyond, 130), Hops: addrs("192.168.1.1", "198.18.1.1", "100.64.1.1", hop, "198.18.5.2")},
		{From: 2, To: 4, Delay: start(3, linkBeyond, 150), Hops: addrs("192.168.1.1", "198.18.2.1", hop, "198.18.5.2")},
		// erin's own traces: nothing stands out on her side.
		{From: 4, To: 1, Hops: addrs("192.168.1.1", "198.18.5.1", hop, "198.18.1.2")},
		// One trace alone at another hop is no shared hop.
		{From: 3, To: 4, Delay: start(3, linkISP, 20), Hops: addrs("192.168.1.1", "198.18.3.1", "100.64.3.1")},
	}
	d := Diagnose(in)
	h := d.SharedHop
	if h == nil || h.Addr != netip.MustParseAddr(hop) || !slices.Equal(h.Players, []string{"bob", "carol"}) || h.AddedMs != 140 {
		t.Fatalf("shared hop %+v, want %s shared by bob and carol, 140 ms", h, hop)
	}
	if d.Culprit != "" || d.Reason != reasonSharedHop {
		t.Fatalf("culprit %q (%s), want none for a shared hop", d.Culprit, d.Reason)
	}
	s := d.Sentences(d.Worded())
	want := "The delay starts past the players' ISPs, at 10.0.5.1, which bob's and carol's paths share (140 ms): nothing any player can change at home."
	if len(s) < 2 || s[1] != want {
		t.Errorf("sentences %q\nwant second %q", s, want)
	}
	if w := d.player("dave").Where; w == nil || w.Link != linkISP {
		t.Errorf("dave's own ISP start: %+v", w)
	}
	// With erin's own line slow as well, she stays the culprit, and the
	// advice is about her side.
	in.Traces[2].Delay = start(2, linkUplink, 120)
	d = Diagnose(in)
	if d.Culprit != "erin" || d.SharedHop == nil {
		t.Fatalf("culprit %q, shared %+v: want erin and the shared hop both", d.Culprit, d.SharedHop)
	}
	if s := d.Sentences(d.Worded()); len(s) < 2 || !strings.HasPrefix(s[1], "erin's delay (120 ms) starts on erin's line out") {
		t.Errorf("sentences %q", s)
	}
	// With erin's own delay starting at that same hop, her ISP's side of
	// it, she is one of the hop's players, not its cause: named no cause.
	in.Traces[2].Delay = start(3, linkISP, 140)
	d = Diagnose(in)
	if h := d.SharedHop; h == nil || !slices.Contains(h.Players, "erin") {
		t.Fatalf("shared hop %+v, want erin among its players", h)
	}
	if d.Culprit != "" || d.Reason != reasonSharedHop {
		t.Errorf("culprit %q (%s), want none: erin's delay starts at the shared hop", d.Culprit, d.Reason)
	}
}

// Traces come from other machines: out-of-range players, ttls past the
// hops, unknown or NaN figures, a trace to oneself are ignored, and no
// traces at all change nothing.
func TestTracesFromElsewhereAreChecked(t *testing.T) {
	base := Diagnose(erinSlow())
	in := erinSlow()
	in.Traces = []Trace{
		{From: -1, To: 0, Delay: start(1, linkLAN, 100)},
		{From: 9, To: 0, Delay: start(1, linkLAN, 100)},
		{From: 4, To: 4, Delay: start(1, linkLAN, 100)},
		{From: 4, To: 0, Delay: start(0, linkLAN, 100)},
		{From: 4, To: 0, Delay: start(1, "garage", 100)},
		{From: 4, To: 0, Delay: &TraceStart{TTL: 1, Link: linkLAN, AddedMs: math.NaN()}},
		{From: 1, To: 4, Delay: start(9, linkBeyond, 100), Hops: addrs("10.0.0.1")},
		{From: 2, To: 4, Delay: start(1, linkBeyond, 100), Hops: addrs("")},
	}
	d := Diagnose(in)
	for _, p := range d.Players {
		if p.Where != nil {
			t.Errorf("%s: where %+v from a trace that should be ignored", p.Player, p.Where)
		}
	}
	if d.SharedHop != nil || d.Culprit != base.Culprit || d.Verdict != base.Verdict {
		t.Errorf("diagnosis moved: shared %+v, culprit %q (was %q)\n%s\n%s", d.SharedHop, d.Culprit, base.Culprit, d.Verdict, base.Verdict)
	}
}

func TestListNames(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"bob"}, "bob's"},
		{[]string{"bob", "cyd"}, "bob's and cyd's"},
		{[]string{"ada", "bob", "cyd"}, "ada's, bob's and cyd's"},
	} {
		if got := listNames(c.in); got != c.want {
			t.Errorf("listNames(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// where and shared_hop in the JSON: objects as the contract gives them,
// null when unknown, and read back as written.
func TestWhereJSONRoundTrip(t *testing.T) {
	in := erinSlow()
	in.Traces = []Trace{
		{From: 4, To: 0, Delay: start(2, linkUplink, 148.04), Hops: addrs("192.168.1.1", "198.18.5.1")},
		{From: 1, To: 4, Delay: start(3, linkBeyond, 30), Hops: addrs("192.168.1.1", "198.18.1.1", "10.0.5.1")},
		{From: 2, To: 4, Delay: start(3, linkBeyond, 40), Hops: addrs("192.168.1.1", "198.18.2.1", "10.0.5.1")},
	}
	d := Diagnose(in)
	b, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"shared_hop":{"addr":"10.0.5.1","players":["bob","carol"],"added_ms":35}`,
		`"where":{"link":"uplink","ttl":2,"added_ms":148}`,
		`"player":"alice",`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
	var back Diagnosis
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if w := back.player("erin").Where; w == nil || *w != (Where{Link: linkUplink, TTL: 2, AddedMs: 148}) {
		t.Errorf("erin's where read back %+v", w)
	}
	if back.player("alice").Where != nil || back.SharedHop == nil || back.SharedHop.Addr != netip.MustParseAddr("10.0.5.1") {
		t.Errorf("read back: alice %+v, shared %+v", back.player("alice").Where, back.SharedHop)
	}
	for _, bad := range []string{
		`{"shared_hop":{"addr":"","players":[],"added_ms":1}}`,
		`{"shared_hop":{"addr":"10.0.0.300","players":[],"added_ms":1}}`,
		`{"players":[{"player":"a","where":{"link":"lan","ttl":0,"added_ms":1}}]}`,
	} {
		if err := back.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s read without an error", bad)
		}
	}
}

// Two homes equally slow: nobody is named (a tie), and each player's own
// traces still give its advice, both in the verdict.
func TestWhereAdviceForEachSlowHomeInATie(t *testing.T) {
	w := world{names: names(6), share: []float64{20, 25, 30, 20, 170, 170}, noise: 0.5, seed: 3}
	in := w.build()
	in.Traces = []Trace{
		{From: 4, To: 0, Delay: start(1, linkLAN, 150), Hops: addrs("10.1.0.1", "172.17.0.1")},
		{From: 5, To: 0, Delay: start(2, linkUplink, 148), Hops: addrs("10.2.0.1", "172.18.0.1")},
		{From: 0, To: 1, Delay: start(2, linkUplink, 10), Hops: addrs("10.3.0.1", "172.19.0.1")},
	}
	d := Diagnose(in)
	if d.Culprit != "" {
		t.Fatalf("culprit %q in a tie: %s", d.Culprit, d.Verdict)
	}
	for _, want := range []string{
		"erin's delay (150 ms) starts between erin's machine and the home router",
		"frank's delay (148 ms) starts on frank's line out of the house",
	} {
		if !strings.Contains(d.Verdict, want) {
			t.Errorf("verdict without %q: %s", want, d.Verdict)
		}
	}
	if strings.Contains(d.Verdict, "alice's delay") {
		t.Errorf("advice for a 10 ms delay: %s", d.Verdict)
	}
	if !strings.HasPrefix(d.Verdict, "No single player holds the match back: erin's and frank's connections add about as much to every round trip; together they hold it at ") {
		t.Errorf("a tie's first sentence: %s", d.Verdict)
	}
}

// One of two slow homes named: its advice comes first, the other's next.
func TestWhereAdviceCulpritThenTheOther(t *testing.T) {
	w := world{names: names(6), share: []float64{20, 25, 30, 20, 150, 260}, noise: 0.5, seed: 3}
	in := w.build()
	in.Traces = []Trace{
		{From: 4, To: 0, Delay: start(1, linkLAN, 130), Hops: addrs("10.1.0.1", "172.17.0.1")},
		{From: 5, To: 0, Delay: start(2, linkUplink, 240), Hops: addrs("10.2.0.1", "172.18.0.1")},
	}
	d := Diagnose(in)
	if d.Culprit != "frank" {
		t.Fatalf("culprit %q, want frank: %s", d.Culprit, d.Verdict)
	}
	s := d.Sentences(d.Worded())
	if len(s) < 3 || !strings.HasPrefix(s[1], "frank's delay (240 ms) starts on frank's line out") || !strings.HasPrefix(s[2], "erin's delay (130 ms) starts between erin's machine") {
		t.Errorf("sentences %q", s)
	}
}

// A player's own trace can read a queue its probes' answers cross on the
// way back as a delay on its own line. Another player's whole path toward
// it with no delay at all says its line is fine: that where is dropped,
// and no advice tells it to fix what is not broken.
func TestWhereContradictedByAWholePathToward(t *testing.T) {
	in := erinSlow()
	in.Traces = []Trace{
		{From: 0, To: 4, Delay: start(2, linkUplink, 140), Hops: addrs("10.9.0.1", "198.18.9.1", "198.18.5.2"), Complete: true},
		{From: 4, To: 0, Delay: start(2, linkUplink, 148), Hops: addrs("192.168.1.1", "198.18.1.1")},
		{From: 1, To: 0, Hops: addrs("192.168.2.1", "198.18.2.1", "198.18.7.2"), Complete: true},
	}
	d := Diagnose(in)
	if w := d.player("alice").Where; w != nil {
		t.Errorf("alice's where %+v survives bob's whole path toward her without delay", w)
	}
	if w := d.player("erin").Where; w == nil || w.Link != linkUplink {
		t.Errorf("erin's where %+v, want uplink (nothing contradicts it)", w)
	}
	if strings.Contains(d.Verdict, "alice's delay") {
		t.Errorf("advice for alice: %s", d.Verdict)
	}
	// An incomplete trace without delay contradicts nothing: it may not
	// have reached the far end's home yet.
	in.Traces[2].Complete = false
	if d := Diagnose(in); d.player("alice").Where == nil {
		t.Error("an incomplete trace dropped alice's where")
	}
}
