package diagnosis

import (
	"bytes"
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"math"
	"slices"
	"strings"
	"testing"
)

// bloat is a load for one player, NaN for a direction not measured.
func bloat(player string, up, down float64) Load {
	return Load{Player: player, UploadMs: up, DownloadMs: down}
}

// The cause at its threshold, either direction (grade C from 60 ms), and
// what bufferbloat_ms holds: nil without a test or with one that measured
// neither direction, NaN for a direction not measured or a figure no test
// gives (negative, infinite, beyond 100 days). A player the fit leaves out
// gets the cause all the same: the test needs no fit.
func TestBufferbloatCauseAtItsThreshold(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name       string
		loads      []Load
		cause      bool
		nilLine    bool
		up, down   float64 // want; NaN = unknown
		unmeasured bool
	}{
		{name: "no test", nilLine: true},
		{name: "another player's test", loads: []Load{bloat("carol", 300, 300)}, nilLine: true},
		{name: "a player not in the input", loads: []Load{bloat("zed", 300, 300)}, nilLine: true},
		{name: "neither measured", loads: []Load{bloat("bob", nan, nan)}, nilLine: true},
		{name: "upload 59.9", loads: []Load{bloat("bob", 59.9, nan)}, up: 59.9, down: nan},
		{name: "upload 60", loads: []Load{bloat("bob", 60, nan)}, cause: true, up: 60, down: nan},
		{name: "download 59.9", loads: []Load{bloat("bob", 12, 59.9)}, up: 12, down: 59.9},
		{name: "download 60", loads: []Load{bloat("bob", 12, 60)}, cause: true, up: 12, down: 60},
		{name: "both", loads: []Load{bloat("bob", 380, 250)}, cause: true, up: 380, down: 250},
		{name: "negative upload", loads: []Load{bloat("bob", -5, 70)}, cause: true, up: nan, down: 70},
		{name: "infinite upload", loads: []Load{bloat("bob", math.Inf(1), 8)}, up: nan, down: 8},
		{name: "beyond 100 days", loads: []Load{bloat("bob", 1e300, 8)}, up: nan, down: 8},
		{name: "negative zero", loads: []Load{bloat("bob", math.Copysign(0, -1), nan)}, up: 0, down: nan},
		{name: "the first of two", loads: []Load{bloat("bob", 61, nan), bloat("bob", 10, 10)}, cause: true, up: 61, down: nan},
		{name: "unmeasured", loads: []Load{bloat("bob", 61, nan)}, cause: true, up: 61, down: nan, unmeasured: true},
	}
	same := func(got, want float64) bool {
		return got == want && !math.Signbit(got) || math.IsNaN(got) && math.IsNaN(want)
	}
	for _, c := range cases {
		in := erinSlow()
		in.Loads = c.loads
		if c.unmeasured {
			in.Players[1].Measured = false
		}
		d := Diagnose(in)
		bob := d.player("bob")
		if got := has(bob.Causes, CauseBufferbloat); got != c.cause {
			t.Errorf("%s: causes %v, want bufferbloat %v", c.name, bob.Causes, c.cause)
		}
		if c.unmeasured && !has(bob.Causes, CauseUnmeasured) {
			t.Errorf("%s: causes %v, want unmeasured too", c.name, bob.Causes)
		}
		switch b := bob.Bufferbloat; {
		case c.nilLine && b != nil:
			t.Errorf("%s: bufferbloat %+v, want nil", c.name, *b)
		case !c.nilLine && b == nil:
			t.Errorf("%s: bufferbloat nil, want %v/%v", c.name, c.up, c.down)
		case !c.nilLine && (!same(b.UploadMs, c.up) || !same(b.DownloadMs, c.down)):
			t.Errorf("%s: bufferbloat %v/%v, want %v/%v", c.name, b.UploadMs, b.DownloadMs, c.up, c.down)
		}
		for _, p := range d.Players {
			if p.Player != "bob" && (p.Bufferbloat != nil) != (p.Player == "carol" && c.name == "another player's test") {
				t.Errorf("%s: %s has bufferbloat %+v", c.name, p.Player, p.Bufferbloat)
			}
		}
		if d.Culprit != "erin" {
			t.Errorf("%s: culprit %q: a load test moves no culprit", c.name, d.Culprit)
		}
	}
	// Its place among the causes: after loss, before processing.
	in := erinSlow()
	in.Players[4].Process = 50e6 // 50 ms: caps 30 fps
	in.Players[4].Stale = true
	in.Loads = []Load{bloat("erin", 70, nan)}
	d := Diagnose(in)
	if got := d.player("erin").Causes; !slices.Equal(got, []vocab.Cause{CauseLatency, CauseBufferbloat, CauseProcessing, CauseStale}) {
		t.Errorf("erin's causes %v", got)
	}
}

// The advice a bloated line gets: the direction that adds most, both when
// both reach 60 ms, in the player's name; its place among the other advice.
func TestBufferbloatAdvice(t *testing.T) {
	nan := math.NaN()
	const (
		sqm      = "Turning on smart queue management (SQM, often called QoS or cake) in the router, or keeping "
		upload   = "erin's upload adds 380 ms when erin's line is busy: the upload queue in erin's router or modem. " + sqm + "uploads off during matches, should fix it."
		download = "erin's download adds 250 ms when erin's line is busy: the queue in front of erin's line, at the ISP's end. " + sqm + "downloads and streams off during matches, should fix it."
		lan      = "erin's delay (148 ms) starts between erin's machine and the home router (Wi-Fi or cable): a cable, or being closer to the router, should help."
		uplink   = "erin's delay (148 ms) starts on erin's line out of the house, often the router's upload queue: a latency-under-load test will tell."
	)
	own := func(link vocab.HopLink, ttl int) []Trace {
		hops := addrs("192.168.1.1", "198.18.1.1", "100.64.0.1")
		return []Trace{{From: 4, To: 0, Delay: start(ttl, link, 148), Hops: hops}}
	}
	cases := []struct {
		name   string
		loads  []Load
		traces []Trace
		want   []string // the sentences after the first
	}{
		{name: "upload", loads: []Load{bloat("erin", 380, 20)}, want: []string{upload}},
		{name: "upload, download unmeasured", loads: []Load{bloat("erin", 380, nan)}, want: []string{upload}},
		{name: "download", loads: []Load{bloat("erin", 59.9, 250)}, want: []string{download}},
		{name: "both, upload most", loads: []Load{bloat("erin", 380, 250)}, want: []string{
			"erin's upload adds 380 ms and erin's download 250 ms when erin's line is busy: the queues both ways of erin's line. " +
				sqm + "uploads, downloads and streams off during matches, should fix it."}},
		{name: "both, download most", loads: []Load{bloat("erin", 90, 400)}, want: []string{
			"erin's download adds 400 ms and erin's upload 90 ms when erin's line is busy: the queues both ways of erin's line. " +
				sqm + "uploads, downloads and streams off during matches, should fix it."}},
		{name: "below the bar", loads: []Load{bloat("erin", 59.9, 59.9)}},
		// The traces put the delay on her line out: the test says what it
		// is and what to do, and replaces "a test will tell".
		{name: "uplink and bloated", loads: []Load{bloat("erin", 380, 20)}, traces: own(linkUplink, 2), want: []string{upload}},
		// In her home network: the Wi-Fi first, the line's queue next.
		{name: "lan and bloated", loads: []Load{bloat("erin", 380, 20)}, traces: own(linkLAN, 1), want: []string{lan, upload}},
		// A test that found no queue either way: the line itself is slow.
		{name: "uplink, no queue", loads: []Load{bloat("erin", 12, 30)}, traces: own(linkUplink, 2), want: []string{
			"erin's delay (148 ms) starts on erin's line out of the house, yet a latency-under-load test of erin's line found no deep queue " +
				"(at most 30 ms when busy): the line itself is slow, which the ISP or another kind of line may fix."}},
		// One direction unmeasured: the test has not told yet.
		{name: "uplink, download unmeasured", loads: []Load{bloat("erin", 12, nan)}, traces: own(linkUplink, 2), want: []string{uplink}},
		{name: "uplink, no test", traces: own(linkUplink, 2), want: []string{uplink}},
		// Another player's bloated line: advice only where none is given.
		{name: "bob bloated, erin's own advice", loads: []Load{bloat("bob", 200, 20)}, traces: own(linkLAN, 1), want: []string{lan}},
		{name: "bob bloated, nothing else", loads: []Load{bloat("bob", 200, 20)}, want: []string{
			"bob's upload adds 200 ms when bob's line is busy: the upload queue in bob's router or modem. " + sqm + "uploads off during matches, should fix it."}},
		{name: "the most bloated other", loads: []Load{bloat("alice", 70, nan), bloat("dave", nan, 310), bloat("bob", 200, 20)}, want: []string{
			"dave's download adds 310 ms when dave's line is busy: the queue in front of dave's line, at the ISP's end. " + sqm + "downloads and streams off during matches, should fix it."}},
	}
	for _, c := range cases {
		in := erinSlow()
		in.Loads, in.Traces = c.loads, c.traces
		d := Diagnose(in)
		if d.Culprit != "erin" {
			t.Fatalf("%s: culprit %q: %s", c.name, d.Culprit, d.Verdict)
		}
		s := d.Sentences(d.Worded())
		if !strings.HasPrefix(s[0], "erin's connection adds") || !slices.Equal(s[1:], c.want) {
			t.Errorf("%s: sentences\n %q\nwant after the first\n %q", c.name, s, c.want)
		}
		if d.Verdict != strings.Join(s, " ") {
			t.Errorf("%s: verdict %q is not its sentences", c.name, d.Verdict)
		}
	}
}

// Nobody named: with two players, or a tie, a bloated line's advice
// follows the first sentence; a slow home's own advice in a tie comes
// before another player's bloated line.
func TestBufferbloatAdviceWithNobodyNamed(t *testing.T) {
	nan := math.NaN()
	w := world{names: names(2), share: []float64{20, 25}, seed: 1}
	in := w.build()
	in.Loads = []Load{bloat("alice", 420, nan)}
	d := Diagnose(in)
	s := d.Sentences(d.Worded())
	if len(s) != 2 || !strings.Contains(s[0], "cannot tell whose side") || !strings.HasPrefix(s[1], "alice's upload adds 420 ms when alice's line is busy") {
		t.Errorf("two players: %q", s)
	}
	if !has(d.player("alice").Causes, CauseBufferbloat) {
		t.Errorf("alice's causes %v", d.player("alice").Causes)
	}

	w = world{names: names(6), share: []float64{20, 25, 30, 20, 170, 170}, noise: 0.5, seed: 3}
	in = w.build()
	in.Traces = []Trace{{From: 4, To: 0, Delay: start(1, linkLAN, 150), Hops: addrs("10.1.0.1", "172.17.0.1")}}
	in.Loads = []Load{bloat("bob", 100, nan)}
	d = Diagnose(in)
	s = d.Sentences(d.Worded())
	if d.Culprit != "" || len(s) < 2 || !strings.HasPrefix(s[1], "erin's delay (150 ms) starts between") || strings.Contains(d.Verdict, "bob's upload") {
		t.Errorf("a tie: culprit %q, sentences %q", d.Culprit, s)
	}
	// frank's own line bloated, his traces showing nothing: his advice
	// comes from the test, after erin's from her traces.
	in.Loads = []Load{bloat("frank", 100, nan)}
	d = Diagnose(in)
	if s = d.Sentences(d.Worded()); len(s) < 2 || !strings.HasPrefix(s[1], "erin's delay") || strings.Contains(d.Verdict, "frank's upload") {
		t.Errorf("a tie, frank bloated: %q", s)
	}
	in.Traces = nil
	d = Diagnose(in)
	if s = d.Sentences(d.Worded()); len(s) < 2 || !strings.HasPrefix(s[1], "frank's upload adds 100 ms") {
		t.Errorf("a tie, no traces, frank bloated: %q", s)
	}
}

// bufferbloat_ms in the JSON: after where, an object with a null for a
// direction not measured, null without a test; rounded to 0.1 ms; read back
// to the same bytes.
func TestBufferbloatJSONRoundTrip(t *testing.T) {
	in := erinSlow()
	in.Loads = []Load{bloat("erin", 380.04, math.NaN()), bloat("bob", 12.35, 0)}
	d := Diagnose(in)
	b, err := json.Marshal(Event{Frame: 1280, Diagnosis: d})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"causes":["latency","bufferbloat"],"where":null,"bufferbloat_ms":{"upload":380,"download":null}}`,
		`"player":"bob",`,
		`"where":null,"bufferbloat_ms":{"upload":12.4,"download":0}}`,
		`"player":"alice","access_rtt_ms":`,
		`"causes":[],"where":null,"bufferbloat_ms":null}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(e); !bytes.Equal(again, b) {
		t.Fatalf("read back\n%s\nfrom\n%s", again, b)
	}
	if bb := e.player("erin").Bufferbloat; bb == nil || bb.UploadMs != 380 || !math.IsNaN(bb.DownloadMs) {
		t.Errorf("erin read back %+v", bb)
	}
	if e.player("alice").Bufferbloat != nil {
		t.Errorf("alice read back %+v", e.player("alice").Bufferbloat)
	}
}

// The decoder takes what a diagnosis can write — null, a null direction,
// 0 — and refuses a figure below 0 or beyond what it could write back.
func TestBufferbloatDecodeChecks(t *testing.T) {
	line := func(bb string) []byte {
		return []byte(`{"verdict":"v","players":[{"player":"ada","causes":[],"where":null,"bufferbloat_ms":` + bb + `}],"links":[]}`)
	}
	for _, good := range []string{`null`, `{"upload":null,"download":null}`, `{"upload":0,"download":1e300}`, `{"upload":380.5,"download":null}`} {
		var d Diagnosis
		if err := d.UnmarshalJSON(line(good)); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{`{"upload":-0.1,"download":null}`, `{"upload":null,"download":-1e300}`, `{"upload":1e308,"download":0}`,
		`{"upload":1e400,"download":0}`, `{"upload":"NaN","download":0}`, `[1,2]`} {
		var d Diagnosis
		if err := d.UnmarshalJSON(line(bad)); err == nil {
			t.Errorf("%s read without an error: %+v", bad, d.Players[0].Bufferbloat)
		}
	}
}
