package sim

import (
	"github.com/lagscope/lagscope/vocab"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// sharedRun runs doc with the traces given and returns the result.
func sharedRun(t *testing.T, doc string, trace map[string]string) *Result {
	t.Helper()
	sc, err := ParseScenario(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunWith(sc, io.Discard, Options{Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Every machine's share of the trace summaries stays within 200 bytes a
// second, every recipient counted, measured from its own counter on the
// virtual clock.
func checkShareRate(t *testing.T, res *Result) {
	t.Helper()
	secs := res.End.Seconds()
	any := false
	for _, p := range res.Peers {
		rate := float64(p.SharedPathBytes()) / secs
		t.Logf("%s: %d bytes of trace summaries in %.0f s, %.1f B/s", p.Name(), p.SharedPathBytes(), secs, rate)
		if rate > 200 {
			t.Errorf("%s shared %.1f B/s of trace summaries, over 200", p.Name(), rate)
		}
		any = any || p.SharedPathBytes() > 0
	}
	if !any {
		t.Fatal("no machine shared a trace")
	}
}

// ada's home line is slow (a queue at her router's upload: the hop past
// her router adds 130 ms). Every player traces: ada toward bob, the others
// toward ada. The diagnosis — made on each machine from its own traces and
// the summaries the others shared — names ada with where = uplink at hop
// 2, confirmed by the others' traces toward her, and the verdict's second
// sentence is the uplink advice in her name.
func TestSharedTracesSayWhere(t *testing.T) {
	doc := `{"fps": 30, "frames": 2400, "seed": 5, "players": ["ada", "bob", "cat", "dan"],
	  "network": {"rtt_ms": 20},
	  "access": {
	    "ada": {"rtt_ms": 150, "hops": [{"addr": "192.168.1.1", "rtt_ms": 2}, {"addr": "198.18.1.1", "rtt_ms": 132}]},
	    "bob": {"rtt_ms": 10, "hops": [{"addr": "192.168.2.1", "rtt_ms": 1}]},
	    "cat": {"rtt_ms": 10, "hops": [{"addr": "192.168.3.1", "rtt_ms": 1}]},
	    "dan": {"rtt_ms": 10, "hops": [{"addr": "192.168.4.1", "rtt_ms": 1}]}}}`
	res := sharedRun(t, doc, map[string]string{"ada": "bob", "bob": "ada", "cat": "ada", "dan": "ada"})
	checkShareRate(t, res)
	d := res.Summary.Diagnosis
	if d.Culprit != "ada" {
		t.Fatalf("culprit %q, want ada: %s", d.Culprit, d.Verdict)
	}
	var where vocab.HopLink
	for _, p := range d.Players {
		if p.Player == "ada" && p.Where != nil {
			where = p.Where.Link
			if p.Where.TTL != 2 || p.Where.AddedMs < 100 || p.Where.AddedMs > 160 || p.Where.Confirmed != 3 {
				t.Errorf("ada's where %+v, want uplink at ttl 2 adding about 130 ms, confirmed by the 3 others' traces", p.Where)
			}
		} else if p.Where != nil {
			t.Errorf("%s has a where: %+v", p.Player, p.Where)
		}
	}
	if where != "uplink" {
		t.Fatalf("ada's where %q, want uplink: %s", where, d.Verdict)
	}
	if !strings.Contains(d.Verdict, "starts on ada's line out of the house, often the router's upload queue: a latency-under-load test will tell.") {
		t.Errorf("verdict without the uplink advice: %s", d.Verdict)
	}
	if d.SharedHop != nil {
		t.Errorf("a shared hop from one home: %+v", d.SharedHop)
	}
}

// bob's and cat's paths cross one router past their homes, where a queue
// adds 120 ms; nothing at any home is slow. Their traces toward ada show
// the delay starting at that router: the diagnosis reports it as the
// shared hop, names no player, and the verdict says nobody can fix it at
// home.
func TestSharedTracesFindASharedHop(t *testing.T) {
	doc := `{"fps": 30, "frames": 2400, "seed": 9, "players": ["ada", "bob", "cat", "dan"],
	  "network": {"rtt_ms": 20},
	  "access": {
	    "ada": {"rtt_ms": 10, "hops": [{"addr": "192.168.1.1", "rtt_ms": 1}]},
	    "bob": {"rtt_ms": 130, "hops": [{"addr": "192.168.2.1", "rtt_ms": 1}, {"addr": "198.18.2.1", "rtt_ms": 3}, {"addr": "203.0.113.50", "rtt_ms": 125}]},
	    "cat": {"rtt_ms": 130, "hops": [{"addr": "192.168.3.1", "rtt_ms": 1}, {"addr": "198.18.3.1", "rtt_ms": 3}, {"addr": "203.0.113.50", "rtt_ms": 125}]},
	    "dan": {"rtt_ms": 10, "hops": [{"addr": "192.168.4.1", "rtt_ms": 1}]}}}`
	res := sharedRun(t, doc, map[string]string{"ada": "dan", "bob": "ada", "cat": "ada", "dan": "bob"})
	checkShareRate(t, res)
	d := res.Summary.Diagnosis
	h := d.SharedHop
	if h == nil || h.Addr != netip.MustParseAddr("203.0.113.50") || !slices.Equal(h.Players, []string{"bob", "cat"}) {
		t.Fatalf("shared hop %+v, want 203.0.113.50 shared by bob and cat: %s", h, d.Verdict)
	}
	if d.Culprit != "" {
		t.Errorf("culprit %q, want none for a shared hop: %s", d.Culprit, d.Verdict)
	}
	if !strings.Contains(d.Verdict, "at 203.0.113.50, which bob's and cat's paths share") ||
		!strings.Contains(d.Verdict, "nothing any player can change at home.") {
		t.Errorf("verdict without the shared-hop advice: %s", d.Verdict)
	}
}
