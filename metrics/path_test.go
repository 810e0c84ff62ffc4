package metrics

import (
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

func findHop(t *testing.T, e *Exporter, name, peer, ttl string) (float64, bool) {
	t.Helper()
	fams, _ := scrape(t, e)
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if l := labels(m); l["player"] == "ada" && l["peer"] == peer && l["ttl"] == ttl {
			return value(m), true
		}
	}
	return 0, false
}

// A traced link's hops are on /metrics: the median round trip of each hop
// that answered and the loss share of each hop with an outcome, labelled
// session, player, peer and ttl, with help text that names no requirement;
// a path that cannot be traced has none, and a link that stops being
// traced loses its series.
func TestPathHopGauges(t *testing.T) {
	e, err := New("lan")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := view("ada", lv("bob", 100, 400))
	v.Paths = []feed.PathView{
		{Peer: "bob", Available: true, Complete: true, Hops: []feed.PathHop{
			{TTL: 1, Addr: netip.MustParseAddr("192.168.1.1"), Link: "lan", Sent: 20, Loss: 0.05, Answered: true,
				Best: time.Millisecond, Median: 2 * time.Millisecond, Worst: 9 * time.Millisecond},
			{TTL: 2, Link: "uplink", Sent: 20, Loss: 1},
			{TTL: 3, Link: "peer"},
		}},
		{Peer: "cyd", Why: "relayed"},
	}
	e.Observe(feed.Update{View: v})
	if got, ok := findHop(t, e, "lagscope_path_hop_rtt_seconds", "bob", "1"); !ok || got != 0.002 {
		t.Errorf("hop 1 rtt %v %v, want 0.002", got, ok)
	}
	if got, ok := findHop(t, e, "lagscope_path_hop_loss_ratio", "bob", "1"); !ok || got != 0.05 {
		t.Errorf("hop 1 loss %v %v, want 0.05", got, ok)
	}
	if _, ok := findHop(t, e, "lagscope_path_hop_rtt_seconds", "bob", "2"); ok {
		t.Error("a silent hop has a round trip")
	}
	if got, ok := findHop(t, e, "lagscope_path_hop_loss_ratio", "bob", "2"); !ok || got != 1 {
		t.Errorf("silent hop loss %v %v, want 1", got, ok)
	}
	if _, ok := findHop(t, e, "lagscope_path_hop_loss_ratio", "bob", "3"); ok {
		t.Error("a hop without an outcome has a loss share")
	}
	fams, _ := scrape(t, e)
	numbers := regexp.MustCompile(`\b[LSTQ]\d+\b|#\d`)
	for _, name := range []string{"lagscope_path_hop_rtt_seconds", "lagscope_path_hop_loss_ratio"} {
		f := fams[name]
		if f == nil {
			t.Fatalf("%s missing", name)
		}
		if h := f.GetHelp(); h == "" || numbers.MatchString(h) {
			t.Errorf("%s help %q", name, h)
		}
		for _, m := range f.GetMetric() {
			if got := labelNames(m); got != "peer,player,session,ttl" {
				t.Errorf("%s labels %s", name, got)
			}
			if labels(m)["peer"] == "cyd" {
				t.Errorf("%s has a series for a path that cannot be traced", name)
			}
		}
	}
	v.Paths = nil
	e.Observe(feed.Update{View: v})
	fams, _ = scrape(t, e)
	if fams["lagscope_path_hop_rtt_seconds"] != nil || fams["lagscope_path_hop_loss_ratio"] != nil {
		t.Error("an untraced link keeps its path series")
	}
}
