package metrics

import (
	"encoding/json"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
	dto "github.com/prometheus/client_model/go"
)

// loadEvent is a `load` line as a tester's sink prints it.
func loadEvent(t *testing.T, line string) *feed.LoadEvent {
	t.Helper()
	var e feed.LoadEvent
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return &e
}

const (
	completeLoad = `{"type":"load","t_ms":90000,"from":"ada","to":"bob","idle_rtt_ms":12.1,` +
		`"upload":{"added_ms":368.0,"p90_added_ms":420.5,"mbps":9.6,"loss":0.002,"grade":"D","capped":false},` +
		`"download":{"added_ms":8.2,"p90_added_ms":11.0,"mbps":48.0,"loss":0.0,"grade":"A","capped":false},` +
		`"both":{"added_ms":371.0,"p90_added_ms":430.0,"loss":0.003},"where":null,"cost":null,"stopped":null}`
	// The next test toward bob is cancelled after its upload hold.
	uploadOnlyLoad = `{"type":"load","from":"ada","to":"bob","idle_rtt_ms":12.0,` +
		`"upload":{"added_ms":50.0,"p90_added_ms":61.0,"mbps":9.6,"loss":0.0,"grade":"B","capped":false},` +
		`"download":null,"both":null,"where":null,"cost":null,"stopped":"cancelled"}`
	refusedLoad = `{"type":"load","from":"ada","to":"cyd","idle_rtt_ms":null,"upload":null,"download":null,` +
		`"both":null,"where":null,"cost":null,"stopped":"peer refused"}`
)

// loadSeries is the load family's series by direction, for the pair.
func loadSeries(t *testing.T, e *Exporter, player, peer string) (map[string]float64, *dto.MetricFamily) {
	t.Helper()
	fams, _ := scrape(t, e)
	f := fams["lagscope_load_added_seconds"]
	out := map[string]float64{}
	if f == nil {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		if l := labels(m); l["player"] == player && l["peer"] == peer {
			out[l["direction"]] = value(m)
		}
	}
	return out, f
}

// A load test's median added round trips are gauges per direction,
// labelled session, player (the tester), peer and direction, in seconds;
// a later test that stops early replaces only the directions it measured,
// a refused test publishes nothing, and the tester's last update takes
// its series away.
func TestLoadAddedGauge(t *testing.T) {
	e, err := New("lan")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := view("ada", lv("bob", 100, 400))
	if _, f := loadSeries(t, e, "ada", "bob"); f != nil {
		t.Fatal("a load family before any test")
	}
	e.Observe(feed.Update{View: v, Events: []feed.Event{loadEvent(t, completeLoad), loadEvent(t, refusedLoad)}})
	got, f := loadSeries(t, e, "ada", "bob")
	if len(got) != 3 || got["upload"] != 0.368 || got["download"] != 0.0082 || got["both"] != 0.371 {
		t.Fatalf("ada → bob %v, want upload 0.368, download 0.0082, both 0.371", got)
	}
	if f.GetType() != dto.MetricType_GAUGE || f.GetHelp() == "" {
		t.Errorf("family %v with help %q", f.GetType(), f.GetHelp())
	}
	for _, m := range f.GetMetric() {
		if n := labelNames(m); n != "direction,peer,player,session" {
			t.Errorf("labels %s", n)
		}
	}
	if got, _ := loadSeries(t, e, "ada", "cyd"); len(got) != 0 {
		t.Errorf("a refused test has series %v", got)
	}
	e.Observe(feed.Update{View: v, Events: []feed.Event{loadEvent(t, uploadOnlyLoad)}})
	if got, _ := loadSeries(t, e, "ada", "bob"); len(got) != 3 || got["upload"] != 0.05 || got["download"] != 0.0082 || got["both"] != 0.371 {
		t.Errorf("after a test stopped after its upload: %v, want upload 0.05 and the rest kept", got)
	}
	e.Observe(feed.Update{View: v, Done: true})
	if _, f := loadSeries(t, e, "ada", "bob"); f != nil {
		t.Errorf("a machine that left keeps its load series: %v", f.GetMetric())
	}
}
