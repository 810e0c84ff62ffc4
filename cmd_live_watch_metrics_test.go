package main

import (
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lagscope/lagscope/vocab"
)

// A host, two joiners and a watcher with --metrics, each its own process on
// loopback: the watcher's one scrape target carries every directed pair
// between the players in the lagscope_matrix_* families, labelled by both
// ends (player measures, peer is the other end), and its per-link families
// keep only its own links (L5).
func TestLiveWatcherMetricsEveryPair_L5(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	maddr := l.Addr().String()
	l.Close()
	names := []string{"alice", "bob", "carol"}
	host := startProc(t, bin, "alice", "host", "--open", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "16s")
	addr := hostAddr(t, host)
	eve := startProc(t, bin, "eve", "watch", addr, "--name", "eve", "--json", "--duration", "12s", "--metrics", maddr)
	eve.waitFor("roster", 10*time.Second, hasType("roster"))
	all := []*proc{host, eve}
	for _, n := range names[1:] {
		all = append(all, startProc(t, bin, n, "join", addr, "--name", n, "--json", "--duration", "12s"))
	}

	client := &http.Client{Timeout: 2 * time.Second}
	scrape := func() map[string]*dto.MetricFamily {
		r, err := client.Get("http://" + maddr + "/metrics")
		if err != nil {
			return nil
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusOK {
			return nil
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("the watcher's scrape does not parse: %v\n%s", err, body)
		}
		return fams
	}
	pairsOf := func(f *dto.MetricFamily) []string {
		var out []string
		for _, m := range f.GetMetric() {
			lb := map[string]string{}
			for _, p := range m.GetLabel() {
				lb[p.GetName()] = p.GetValue()
			}
			if slices.Contains(names, lb["player"]) && slices.Contains(names, lb["peer"]) {
				out = append(out, lb["player"]+">"+lb["peer"])
			}
		}
		slices.Sort(out)
		return out
	}
	var want []string
	for _, a := range names {
		for _, b := range names {
			if a != b {
				want = append(want, a+">"+b)
			}
		}
	}
	families := []string{"lagscope_matrix_srtt_seconds", "lagscope_matrix_link_state", "lagscope_matrix_datagrams_sent_total",
		"lagscope_matrix_datagrams_expected_total", "lagscope_matrix_caused_wait_seconds_total"}
	// Polled while the session runs; the limit only bounds a broken run.
	var fams map[string]*dto.MetricFamily
	complete, start := false, time.Now()
	for end := time.Now().Add(11 * time.Second); !complete && time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if fams = scrape(); fams == nil {
			continue
		}
		complete = true
		for _, n := range families {
			if !slices.Equal(pairsOf(fams[n]), want) {
				complete = false
			}
		}
	}
	if !complete {
		for _, n := range families {
			t.Errorf("%s: pairs %v, want %v", n, pairsOf(fams[n]), want)
		}
		t.FailNow()
	}
	t.Logf("the watcher's scrape had every pair %v after the last joiner started", time.Since(start).Round(100*time.Millisecond))
	for _, m := range fams["lagscope_datagrams_sent_total"].GetMetric() {
		for _, p := range m.GetLabel() {
			if p.GetName() == "player" && p.GetValue() != "eve" {
				t.Errorf("the watcher's per-link family has a link of %s: first-hand only", p.GetValue())
			}
		}
	}
	// The session's incidents as the watcher tells them: every incident
	// cause has its series, and the incidents opened are the watcher's own
	// incident lines (polled: a line and a scrape are not one instant).
	incidentsAgree := func() (string, bool) {
		fams := scrape()
		if fams == nil {
			return "no scrape", false
		}
		for _, n := range []string{"lagscope_incidents_total", "lagscope_incident_wait_seconds_total", "lagscope_incidents_open"} {
			if f := fams[n]; f == nil || len(f.GetMetric()) != len(vocab.IncidentCauses) {
				return n + ": not a series per cause", false
			}
		}
		opened := map[string]float64{}
		for _, e := range eve.of("incident") {
			if e.str("phase") == "open" {
				opened[e.str("cause")]++
			}
		}
		for _, m := range fams["lagscope_incidents_total"].GetMetric() {
			for _, p := range m.GetLabel() {
				if p.GetName() == "cause" && m.GetCounter().GetValue() != opened[p.GetValue()] {
					return "lagscope_incidents_total{cause=" + p.GetValue() + "} is not the watcher's lines'", false
				}
			}
		}
		return "", true
	}
	why, ok := incidentsAgree()
	for end := time.Now().Add(3 * time.Second); !ok && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		why, ok = incidentsAgree()
	}
	if !ok {
		t.Errorf("the watcher's incident families: %s", why)
	}
	for _, p := range all {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
}
