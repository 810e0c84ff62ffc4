package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The integration test: a real Prometheus server on loopback scrapes
// /metrics while a session plays, and its HTTP API shows the six counters
// and the gauges with the right labels, and no counter reset across a
// player leaving (L5). `promtool check metrics` passes on the scrape.
//
// The session is a simulated one (handoff.json: alice leaves at frame 300)
// fed second by second into one Exporter, as a demo runs every machine in
// one process. Prometheus comes from Debian's package (.ci/run installs it).
func TestPrometheusScrapesCounters_L5(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (apt-get install prometheus; .ci/run does)")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed (it comes with Debian's prometheus package)")
	}
	batches := simFeed(t, "handoff.json")

	e, err := New("handoff")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.ServeListener(ctx, l) }()
	defer func() { cancel(); <-served }()

	// Prometheus picks no free port of its own: borrow one from the kernel.
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	promAddr := pl.Addr().String()
	pl.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\nscrape_configs:\n  - job_name: lagscope\n    static_configs:\n      - targets: [%q]\n", l.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var plog bytes.Buffer
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &plog, &plog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	api := "http://" + promAddr + "/api/v1/"
	client := &http.Client{Timeout: 5 * time.Second}
	query := func(q string) []promSample {
		r, err := client.Get(api + "query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil
		}
		defer r.Body.Close()
		var res struct {
			Status string
			Data   struct {
				ResultType string
				Result     []promSample
			}
		}
		if json.NewDecoder(r.Body).Decode(&res) != nil || res.Status != "success" {
			return nil
		}
		return res.Data.Result
	}
	// waitFor polls Prometheus until cond holds, bounded.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 30 s for %s; prometheus said:\n%s", what, plog.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("prometheus to answer", func() bool { return query("vector(1)") != nil })
	// One scrape after each step: the number of scrapes Prometheus has done.
	scrapes := func() float64 {
		s := query(`count_over_time(up{job="lagscope"}[1h])`)
		if len(s) != 1 {
			return 0
		}
		return s[0].value()
	}
	step := func() {
		n := scrapes()
		waitFor("a scrape", func() bool { return scrapes() >= n+2 })
	}

	// Before, through and after alice leaving, a scrape between steps.
	left := -1
	for i, b := range batches {
		for _, u := range b {
			e.Observe(u)
			if u.Done && left < 0 {
				left = i
			}
		}
		if i%8 == 0 || (left >= 0 && i <= left+1) {
			step()
		}
	}
	step()
	if left < 0 {
		t.Fatal("nobody left in the scenario")
	}
	waitFor("up", func() bool { s := query(`up{job="lagscope"}`); return len(s) == 1 && s[0].value() == 1 })

	for _, name := range contractCounters {
		series := query(name)
		if len(series) != 6 {
			t.Fatalf("%s: %d series, want 6 (3 players × 2 links)", name, len(series))
		}
		for _, s := range series {
			if s.Metric["session"] != "handoff" || s.Metric["player"] == "" || s.Metric["peer"] == "" || len(s.Metric) != 6 {
				t.Fatalf("%s labels %v", name, s.Metric)
			}
		}
		// Prometheus's own judgement: no counter reset in any series.
		for _, s := range query(fmt.Sprintf("resets(%s[1h])", name)) {
			if s.value() != 0 {
				t.Fatalf("%s%v reset %v times", name, s.Metric, s.value())
			}
		}
		// And sample by sample: never a step down.
		for _, s := range queryRange(t, client, api, name) {
			for i := 1; i < len(s.Values); i++ {
				if s.Values[i].v() < s.Values[i-1].v() {
					t.Fatalf("%s%v went down: %v then %v", name, s.Metric, s.Values[i-1], s.Values[i])
				}
			}
		}
	}
	// alice's links and the links to her outlived her leaving, at totals
	// that are not zero.
	for _, q := range []string{`lagscope_datagrams_sent_total{player="alice",peer="bob"}`, `lagscope_datagrams_expected_total{player="bob",peer="alice"}`,
		`lagscope_datagrams_peer_expected_total{player="carol",peer="bob"}`} {
		if s := query(q); len(s) != 1 || s[0].value() <= 0 {
			t.Fatalf("%s: %v", q, s)
		}
	}
	for _, name := range linkGauges {
		s := query(name)
		if len(s) != 2 { // bob↔carol, after alice left
			t.Fatalf("%s: %d series now, want 2: %v", name, len(s), s)
		}
		for _, x := range s {
			// RTTVAR of a link without jitter may well be 0; the rest cannot.
			if x.Metric["peer"] == "" || x.Metric["session"] != "handoff" || x.value() < 0 || (x.value() == 0 && name != "lagscope_rttvar_seconds") {
				t.Fatalf("%s: %v", name, x)
			}
		}
	}
	for _, name := range machineGauges {
		s := query(name)
		if len(s) == 0 {
			t.Fatalf("%s: no series", name)
		}
		for _, x := range s {
			if _, perLink := x.Metric["peer"]; perLink || x.Metric["player"] == "" || x.Metric["session"] != "handoff" {
				t.Fatalf("%s labels %v", name, x.Metric)
			}
		}
	}

	// Every query of the Grafana dashboard in docs/ runs on this data and
	// finds series: loss shares from the counters, SRTT per link, rung and
	// tier per session.
	for _, q := range dashboardQueries(t) {
		if s := query(q); len(s) == 0 {
			t.Fatalf("dashboard query finds nothing: %s", q)
		}
	}

	// promtool's lint of the very text Prometheus scraped.
	r, err := client.Get("http://" + l.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	out, err := check.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

type promSample struct {
	Metric map[string]string
	Value  [2]any
	Values []promPoint
}

type promPoint [2]any

func (p promPoint) v() float64 {
	s, _ := p[1].(string)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func (s promSample) value() float64 { return promPoint(s.Value).v() }

// queryRange reads every raw sample of the last hour of a metric.
func queryRange(t *testing.T, c *http.Client, api, name string) []promSample {
	t.Helper()
	r, err := c.Get(api + "query?query=" + url.QueryEscape(name+"[1h]"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var res struct {
		Data struct{ Result []promSample }
	}
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if len(res.Data.Result) == 0 {
		t.Fatalf("%s: no samples", name)
	}
	return res.Data.Result
}

// dashboardQueries reads docs/grafana-dashboard.json and returns its PromQL
// with Grafana's variables filled in as a viewer of every session would.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	r := strings.NewReplacer("$session", ".+", "$__rate_interval", "1m")
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, r.Replace(tg.Expr))
		}
	}
	if len(out) < 10 {
		t.Fatalf("dashboard has %d queries", len(out))
	}
	return out
}
