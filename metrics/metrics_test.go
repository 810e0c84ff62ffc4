package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/sim"
	"github.com/lagscope/lagscope/rungs"
)

// The names docs/metrics.md lists, with their label sets.
var contractCounters = []string{
	"lagscope_datagrams_sent_total", "lagscope_datagrams_retransmitted_total",
	"lagscope_datagrams_expected_total", "lagscope_datagrams_lost_total",
	"lagscope_datagrams_peer_expected_total", "lagscope_datagrams_peer_lost_total",
}

var linkGauges = []string{"lagscope_srtt_seconds", "lagscope_rttvar_seconds", "lagscope_rto_seconds", "lagscope_connection_timeout_seconds"}

var machineGauges = []string{"lagscope_rung", "lagscope_send_period_frames", "lagscope_look_ahead_frames", "lagscope_frame_rate", "lagscope_wait_seconds"}

func scrape(t testing.TB, e *Exporter) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, body)
	}
	return fams, body
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func labelNames(m *dto.Metric) string {
	var n []string
	for k := range labels(m) {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return -1
}

func find(fams map[string]*dto.MetricFamily, name, player, peer string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		l := labels(m)
		if l["player"] == player && l["peer"] == peer {
			return value(m), true
		}
	}
	return 0, false
}

func view(self string, links ...feed.LinkView) feed.View {
	return feed.View{Self: self, FPS: 30, Started: true, InForce: rungs.Timing{SendPeriod: 6, LookAhead: 18}, Links: links}
}

func lv(peer string, sent, exp uint64) feed.LinkView {
	ms := time.Millisecond
	return feed.LinkView{Peer: peer, Link: feed.Link{State: feed.LinkMeasured, RTTKnown: true, SRTT: 80 * ms, RTTVAR: 5 * ms, RTO: 120 * ms, ConnTimeout: 2000 * ms,
		LossKnown: true, Sent: sent, Retransmitted: sent / 10, Expected: exp, Missing: exp / 20, PeerKnown: true, PeerExpected: sent, PeerMissing: sent / 50}}
}

// Every name on /metrics is the one docs/metrics.md lists — no unit suffix
// added twice, no _total missing or doubled — with exactly the labels it
// names, and help text on each (L5).
func TestNamesMatchContract_L5(t *testing.T) {
	e, err := New("lan")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := view("alice", lv("bob", 100, 400))
	v.Players = []feed.PlayerView{{Name: "bob", Report: &feed.ReportView{Wait: 250 * time.Millisecond}}}
	e.Observe(feed.Update{View: v})
	fams, _ := scrape(t, e)
	want := map[string]string{"lagscope_caused_wait_seconds_total": "peer,player,session"}
	for _, n := range contractCounters {
		want[n] = "peer,player,session"
	}
	for _, n := range linkGauges {
		want[n] = "peer,player,session"
	}
	for _, n := range machineGauges {
		want[n] = "player,session"
	}
	for _, n := range incidentFamilies {
		want[n] = "cause,session"
	}
	for name, lbls := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		typ := dto.MetricType_GAUGE
		if strings.HasSuffix(name, "_total") {
			typ = dto.MetricType_COUNTER
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v", name, f.GetType())
		}
		for _, m := range f.GetMetric() {
			if got := labelNames(m); got != lbls {
				t.Errorf("%s labels %s, want %s", name, got, lbls)
			}
		}
	}
	for name := range fams {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected family %s", name)
		}
	}
	if v, _ := find(fams, "lagscope_srtt_seconds", "alice", "bob"); v != 0.08 {
		t.Errorf("srtt %v s, want 0.08", v)
	}
	if v, _ := find(fams, "lagscope_rung", "alice", ""); v != 6 {
		t.Errorf("rung %v", v)
	}
	if v, _ := find(fams, "lagscope_wait_seconds", "bob", ""); v != 0.25 {
		t.Errorf("wait %v", v)
	}
}

// Unknown is not zero (L3): a link without an estimate has no SRTT series,
// and a peer that has not reported leaves peer_* at zero (a counter cannot
// say "not measured").
func TestUnknownIsAbsent_L3(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	l := feed.LinkView{Peer: "bob", Link: feed.Link{State: feed.LinkUnmeasured, RTO: time.Second, ConnTimeout: 10 * time.Second, LossKnown: true, Sent: 3}}
	e.Observe(feed.Update{View: view("alice", l)})
	fams, _ := scrape(t, e)
	if _, ok := find(fams, "lagscope_srtt_seconds", "alice", "bob"); ok {
		t.Error("srtt published for an unmeasured link")
	}
	if _, ok := find(fams, "lagscope_rto_seconds", "alice", "bob"); !ok {
		t.Error("rto missing")
	}
	if v, ok := find(fams, "lagscope_datagrams_peer_expected_total", "alice", "bob"); !ok || v != 0 {
		t.Errorf("peer_expected %v %v", v, ok)
	}
}

// The counters never decrease (L5): a link that ends folds its totals into
// the accumulator under the same labels, and a link that restarts (a player
// rejoins under the same name) counts on from there; peer totals arriving
// out of order do not walk it back (L4).
func TestCountersNeverDecrease_L5(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	sent := func() float64 {
		fams, _ := scrape(t, e)
		v, _ := find(fams, "lagscope_datagrams_sent_total", "alice", "bob")
		return v
	}
	peerExp := func() float64 {
		fams, _ := scrape(t, e)
		v, _ := find(fams, "lagscope_datagrams_peer_expected_total", "alice", "bob")
		return v
	}
	e.Observe(feed.Update{View: view("alice", lv("bob", 100, 400), lv("carol", 50, 50))})
	if sent() != 100 {
		t.Fatalf("sent %v", sent())
	}
	late := lv("bob", 120, 420)
	late.PeerExpected = 90 // an older LinkReport arriving late
	e.Observe(feed.Update{View: view("alice", late, lv("carol", 60, 60))})
	if sent() != 120 || peerExp() != 100 {
		t.Fatalf("sent %v peer_expected %v, want 120 and the high-water 100", sent(), peerExp())
	}
	// bob leaves: his link is gone from the picture.
	e.Observe(feed.Update{View: view("alice", lv("carol", 70, 70))})
	fams, _ := scrape(t, e)
	if v, ok := find(fams, "lagscope_datagrams_sent_total", "alice", "bob"); !ok || v != 120 {
		t.Fatalf("after bob left: %v %v", v, ok)
	}
	if _, ok := find(fams, "lagscope_srtt_seconds", "alice", "bob"); ok {
		t.Fatal("a gone link still has an SRTT")
	}
	// bob rejoins: a new link that starts from zero.
	e.Observe(feed.Update{View: view("alice", lv("bob", 5, 10), lv("carol", 80, 80))})
	if sent() != 125 {
		t.Fatalf("after rejoin: %v, want 125", sent())
	}
	// A restart seen without a gap in the picture (totals went down).
	e.Observe(feed.Update{View: view("alice", lv("bob", 2, 3), lv("carol", 90, 90))})
	if sent() != 127 {
		t.Fatalf("after a restart: %v, want 127", sent())
	}
	// alice's machine ends: counters stay, its gauges go.
	e.Observe(feed.Update{View: view("alice"), Done: true})
	fams, _ = scrape(t, e)
	if v, _ := find(fams, "lagscope_datagrams_sent_total", "alice", "carol"); v != 90 {
		t.Fatalf("carol link after alice ended: %v", v)
	}
	if _, ok := find(fams, "lagscope_rung", "alice", ""); ok {
		t.Fatal("an ended machine still has a rung")
	}
}

// simFeed runs a scenario and returns every machine's Views, one batch per
// virtual second, as the Updates a live feed would hand a sink; a machine
// whose Views stop (it left) gets its last update with Done set.
func simFeed(t testing.TB, scenario string) [][]feed.Update {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "scenarios", scenario))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, err := sim.ParseScenario(f)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]feed.Update
	var at time.Duration = -1
	if _, err := sim.RunWith(sc, io.Discard, sim.Options{OnView: func(v feed.View) {
		if v.At != at {
			batches = append(batches, nil)
			at = v.At
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], feed.Update{View: v})
	}}); err != nil {
		t.Fatal(err)
	}
	last := map[string]feed.View{}
	for i, b := range batches {
		here := map[string]bool{}
		for _, u := range b {
			here[u.View.Self] = true
		}
		for name, v := range last {
			if !here[name] {
				batches[i] = append(batches[i], feed.Update{View: v, Done: true})
				delete(last, name)
			}
		}
		for _, u := range b {
			last[u.View.Self] = u.View
		}
	}
	return batches
}

// Fed by a simulated session in which alice leaves at frame 300, no counter
// of any link ever goes down between two scrapes (L5).
func TestSimSessionCountersMonotonic_L5(t *testing.T) {
	batches := simFeed(t, "handoff.json")
	e, _ := New("handoff")
	defer e.Close()
	prev := map[string]float64{}
	sawGone, sawPeer := false, false
	for _, b := range batches {
		for _, u := range b {
			e.Observe(u)
			if u.Done {
				sawGone = true
			}
		}
		fams, _ := scrape(t, e)
		for _, name := range contractCounters {
			for _, m := range fams[name].GetMetric() {
				l := labels(m)
				k := name + "/" + l["player"] + "/" + l["peer"]
				if value(m) < prev[k] {
					t.Fatalf("%s went from %v to %v", k, prev[k], value(m))
				}
				prev[k] = value(m)
				if name == "lagscope_datagrams_peer_expected_total" && value(m) > 0 {
					sawPeer = true
				}
			}
		}
	}
	if !sawGone || !sawPeer || prev["lagscope_datagrams_sent_total/bob/alice"] == 0 || len(prev) != 6*6 {
		t.Fatalf("gone %v peer %v, %d series: %v", sawGone, sawPeer, len(prev), prev)
	}
}

func TestServeStopsWithContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	e, _ := New("lan")
	defer e.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.serveListener(ctx, l) }()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := c.Get("http://" + l.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("status %d", r.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := e.serve(context.Background(), "256.0.0.1:bad"); err == nil {
		t.Fatal("a bad address served")
	}
}

func BenchmarkScrape(b *testing.B) {
	e, _ := New("lan")
	defer e.Close()
	var links []feed.LinkView
	for i := 0; i < 7; i++ {
		links = append(links, lv(string(rune('b'+i)), 100, 100))
	}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		e.Observe(feed.Update{View: view(p, links...)})
	}
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	}
}

// A host that relays a pair exports what it forwarded as
// lagscope_relayed_datagrams_total, labelled by the pair; it never
// decreases (L5).
func TestRelayedDatagrams_L5(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	v := view("alice", lv("bob", 100, 400))
	v.Relay = []feed.RelayStat{{Between: [2]string{"bob", "dan"}, Datagrams: 70, Bytes: 7000}}
	e.Observe(feed.Update{View: v})
	fams, _ := scrape(t, e)
	f := fams["lagscope_relayed_datagrams_total"]
	if f == nil || f.GetType() != dto.MetricType_COUNTER || len(f.GetMetric()) != 1 {
		t.Fatalf("family %v", f)
	}
	if got := labelNames(f.GetMetric()[0]); got != "peer,player,session" {
		t.Errorf("labels %s", got)
	}
	if v, _ := find(fams, "lagscope_relayed_datagrams_total", "bob", "dan"); v != 70 {
		t.Errorf("relayed %v, want 70", v)
	}
	v.Relay[0].Datagrams = 10 // a restarted host counts from zero: the series does not go back
	e.Observe(feed.Update{View: v})
	fams, _ = scrape(t, e)
	if v, _ := find(fams, "lagscope_relayed_datagrams_total", "bob", "dan"); v != 70 {
		t.Errorf("relayed %v after a smaller count, want 70", v)
	}
}
