package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/systool"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// The integration test: a real Prometheus server on loopback scrapes
// a live `lagscope demo --metrics` — the binary built here, four players on
// their own loopback UDP sockets, bob quitting the game 6 s in
// (--leave bob@6s) — and its HTTP API shows the six counters and the gauges
// with the right labels (session, player, peer), and not one counter going
// down across bob leaving (L5). `promtool check metrics` passes on the
// endpoint's output. Prometheus comes from Debian's package (.ci/run
// installs it).
//
// Every wait is bounded: the demo ends itself after --duration (and is
// killed with the test's context past that), and each condition polled on
// Prometheus has a deadline.
func TestPrometheusScrapesLiveDemo_L5(t *testing.T) {
	prom := systool.Need(t, "prometheus", "apt-get install prometheus; .ci/run does")
	promtool := systool.Need(t, "promtool", "it comes with Debian's prometheus package")
	bin := buildLagscope(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// Neither program picks a free port of its own: borrow them from the
	// kernel.
	demoAddr, promAddr := freePort(t), freePort(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\nscrape_configs:\n  - job_name: lagscope\n    static_configs:\n      - targets: [%q]\n", demoAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var plog syncBuffer
	pcmd := exec.CommandContext(ctx, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	pcmd.Stdout, pcmd.Stderr = &plog, &plog
	if err := pcmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer endProcess(pcmd)

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
			Data   struct{ Result []promSample }
		}
		if json.NewDecoder(r.Body).Decode(&res) != nil || res.Status != "success" {
			return nil
		}
		return res.Data.Result
	}
	var dout, derr syncBuffer
	// waitFor polls cond until limit; seen, when given, says what the
	// last poll found.
	waitFor := func(what string, limit time.Duration, cond func() bool, seen ...*string) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				last := ""
				if len(seen) > 0 {
					last = "; the last look found " + *seen[0]
				}
				t.Fatalf("waited %v for %s%s; prometheus said:\n%s\nthe demo said:\n%s\nits NDJSON ends:\n%s", limit, what, last, plog.String(), derr.String(), tail(dout.String(), 40))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("prometheus to answer", 20*time.Second, func() bool { return query("vector(1)") != nil })

	// The demo: stdout is NDJSON (no TUI), every machine publishes to the
	// exporter (--metrics), bob quits 6 s in.
	const leaveAt = 6 * time.Second
	demo := exec.CommandContext(ctx, bin, "demo", "--json", "--duration", "40s", "--leave", "bob@"+leaveAt.String(), "--metrics", demoAddr)
	demo.Stdout, demo.Stderr = &dout, &derr
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	defer endProcess(demo)

	// Before bob leaves: every machine's gauges are there, bob's too, and
	// Prometheus scrapes them.
	players := []string{"ada", "bob", "cyd", "you"}
	playersOf := func(name string) []string {
		var out []string
		for _, s := range query(name) {
			out = append(out, s.Metric["player"])
		}
		slices.Sort(out)
		return out
	}
	waitFor("all four machines' rung", leaveAt, func() bool { return slices.Equal(playersOf("lagscope_rung"), players) })
	if time.Since(started) >= leaveAt {
		t.Fatal("Prometheus saw the four machines only after bob left")
	}
	// After: bob's machine has gone (its gauges with it), and the links to
	// him have ended on every other machine (their gauges too).
	// seen says what the last look found, for the failure message.
	seen := ""
	linksOf := func(name string) []string {
		var out []string
		for _, s := range query(name) {
			out = append(out, s.Metric["player"]+"→"+s.Metric["peer"])
		}
		slices.Sort(out)
		return out
	}
	waitFor("bob to leave", leaveAt+20*time.Second, func() bool {
		if got := playersOf("lagscope_rung"); !slices.Equal(got, []string{"ada", "cyd", "you"}) {
			seen = fmt.Sprintf("lagscope_rung of %v", got)
			return false
		}
		for _, name := range linkGauges {
			if got := linksOf(name); len(got) != 6 {
				seen = fmt.Sprintf("%s of %v", name, got)
				return false
			}
		}
		seen = fmt.Sprintf("lagscope_srtt_seconds to bob: %v", linksOf(`lagscope_srtt_seconds{peer="bob"}`))
		return len(query(`lagscope_srtt_seconds{peer="bob"}`)) == 0
	}, &seen)
	// A few more scrapes of the session without him.
	scrapes := func() float64 {
		s := query(`count_over_time(up{job="lagscope"}[1h])`)
		if len(s) != 1 {
			return 0
		}
		return s[0].value()
	}
	n := scrapes()
	waitFor("more scrapes", 10*time.Second, func() bool { return scrapes() >= n+5 })
	waitFor("up", 5*time.Second, func() bool { s := query(`up{job="lagscope"}`); return len(s) == 1 && s[0].value() == 1 })

	session := ""
	// The matrix families hold the same pairs: the demo feeds
	// every machine's own row to the exporter. (peer_* are left out: a
	// matrix counter is absent until the peer's half is known, L3.)
	for _, name := range append(slices.Clone(contractCounters), matrixCounters[:4]...) {
		series := query(name)
		if len(series) != 12 {
			var labels []string
			for _, s := range series {
				labels = append(labels, fmt.Sprint(s.Metric))
			}
			t.Fatalf("%s: %d series, want 12 (4 players × 3 links, bob's kept after he left): %v", name, len(series), labels)
		}
		for _, s := range series {
			if session == "" {
				session = s.Metric["session"]
			}
			p, q := s.Metric["player"], s.Metric["peer"]
			if s.Metric["session"] != session || session == "" || !slices.Contains(players, p) || !slices.Contains(players, q) || p == q || len(s.Metric) != 6 {
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
	// The counters of bob's links, his own and the others' to him, were
	// scraped before he left and carry on after: the last sample of his
	// rung (his machine's last scrape) comes before the counters' last
	// samples, and they are not zero.
	bobLast := lastSampleTime(t, queryRange(t, client, api, `lagscope_rung{player="bob"}`))
	for _, q := range []string{`lagscope_datagrams_sent_total{player="bob",peer="you"}`, `lagscope_datagrams_expected_total{player="you",peer="bob"}`,
		`lagscope_datagrams_sent_total{player="ada",peer="bob"}`, `lagscope_datagrams_expected_total{player="cyd",peer="bob"}`} {
		rs := queryRange(t, client, api, q)
		if len(rs) != 1 || len(rs[0].Values) == 0 || rs[0].Values[0].t() >= bobLast || lastSampleTime(t, rs) < bobLast+0.5 || rs[0].Values[len(rs[0].Values)-1].v() <= 0 {
			t.Fatalf("%s around bob leaving at %.1f: %v", q, bobLast, rs)
		}
	}
	for _, name := range linkGauges {
		for _, x := range query(name) {
			p, q := x.Metric["player"], x.Metric["peer"]
			// RTTVAR of a link without jitter may well be 0; the rest cannot.
			if x.Metric["session"] != session || p == "bob" || q == "bob" || q == "" || p == q || x.value() < 0 || (x.value() == 0 && name != "lagscope_rttvar_seconds") {
				t.Fatalf("%s: %v", name, x)
			}
		}
	}
	for _, name := range machineGauges {
		if got := playersOf(name); !slices.Equal(got, []string{"ada", "cyd", "you"}) {
			t.Fatalf("%s for %v, want ada, cyd and you", name, got)
		}
		for _, x := range query(name) {
			if _, perLink := x.Metric["peer"]; perLink || x.Metric["session"] != session || len(x.Metric) != 5 {
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

	// The incident families: ada's incident (her connection spikes 10 s
	// in) is on the demo's NDJSON, and Prometheus reads the three
	// families with the values its lines carry.
	checkIncidentFamilies(t, query, waitFor, session, &dout)

	// promtool's lint of the endpoint's own output.
	r, err := client.Get("http://" + demoAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !bytes.Contains(body, []byte(`lagscope_datagrams_peer_lost_total{peer="bob",player="you",session="`+session+`"}`)) {
		t.Fatalf("the endpoint's output lacks a link to bob:\n%s", body)
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	out, err := check.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}

	// The demo leaves cleanly on SIGINT, as on Ctrl-C, and its NDJSON tells
	// the same story: the script's line, then bob's removal.
	demo.Process.Signal(os.Interrupt)
	if err := demo.Wait(); err != nil {
		t.Fatalf("demo: %v\n%s", err, derr.String())
	}
	quit, removed := -1, -1
	for i, line := range strings.Split(dout.String(), "\n") {
		switch {
		case strings.Contains(line, `"text":"Demo: bob quits the game"`):
			quit = i
		case strings.Contains(line, `"type":"removed"`) && strings.Contains(line, `"player":"bob"`) && removed < 0:
			removed = i
		}
	}
	if quit < 0 || removed < quit || !strings.Contains(dout.String(), `"session":"`+session+`"`) {
		t.Fatalf("the demo's NDJSON: quit line %d, bob removed at line %d, session %q", quit, removed, session)
	}
}

// incidentFigures are the incident families' values by cause, as the
// NDJSON's incident lines make them: incidents opened (under the first
// line's cause), seconds waited (each line's growth of wait_ms, under its
// cause) and open now (by the cause now).
type incidentFigures struct {
	opened, waited, open map[string]float64
	lines                int
}

func incidentFiguresOf(t *testing.T, ndjson string) incidentFigures {
	t.Helper()
	f := incidentFigures{opened: map[string]float64{}, waited: map[string]float64{}, open: map[string]float64{}}
	type state struct {
		cause  string
		waitMs float64
		closed bool
	}
	seen := map[int]*state{}
	for _, line := range strings.Split(ndjson, "\n") {
		if !strings.Contains(line, `"type":"incident"`) {
			continue
		}
		var e feed.IncidentEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		f.lines++
		cause := string(e.Cause)
		st := seen[e.ID]
		if st == nil {
			st = &state{cause: cause}
			seen[e.ID] = st
			f.opened[cause]++
			f.open[cause]++
		}
		if st.closed {
			continue
		}
		if e.WaitMs > st.waitMs {
			f.waited[cause] += (e.WaitMs - st.waitMs) / 1000
			st.waitMs = e.WaitMs
		}
		f.open[st.cause]--
		f.open[cause]++
		st.cause = cause
		if e.Phase == vocab.IncidentClose {
			st.closed = true
			f.open[cause]--
		}
	}
	return f
}

// checkIncidentFamilies waits for the demo's incident lines, then for
// Prometheus's latest scrape to hold what the lines seen by then carry: every incident cause has its three series, and their values are
// the lines' to a millionth of a second.
func checkIncidentFamilies(t *testing.T, query func(string) []promSample, waitFor func(string, time.Duration, func() bool, ...*string), session string, dout *syncBuffer) {
	t.Helper()
	// Five lines: the open line and updates whose wait has grown.
	waitFor("five incident lines from the demo", 25*time.Second, func() bool { return incidentFiguresOf(t, dout.String()).lines >= 5 })
	families := map[string]func(incidentFigures) map[string]float64{
		"lagscope_incidents_total":             func(f incidentFigures) map[string]float64 { return f.opened },
		"lagscope_incident_wait_seconds_total": func(f incidentFigures) map[string]float64 { return f.waited },
		"lagscope_incidents_open":              func(f incidentFigures) map[string]float64 { return f.open },
	}
	var last string
	agree := func() bool {
		want := incidentFiguresOf(t, dout.String())
		var diffs []string
		for name, of := range families {
			got := query(name)
			if len(got) != len(vocab.IncidentCauses) {
				diffs = append(diffs, fmt.Sprintf("%s: %d series", name, len(got)))
				continue
			}
			for _, s := range got {
				c := s.Metric["cause"]
				if s.Metric["session"] != session || len(s.Metric) != 5 || !vocab.Cause(c).Valid() {
					t.Fatalf("%s labels %v", name, s.Metric)
				}
				if w := of(want)[c]; math.Abs(s.value()-w) > 1e-6 {
					diffs = append(diffs, fmt.Sprintf("%s{cause=%q} %v, the lines %v", name, c, s.value(), w))
				}
			}
		}
		last = strings.Join(diffs, "; ")
		opened := 0.0
		for _, n := range want.opened {
			opened += n
		}
		return len(diffs) == 0 && opened >= 1
	}
	deadline := time.Now().Add(15 * time.Second)
	for !agree() {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus never agreed with the demo's incident lines: %s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f := incidentFiguresOf(t, dout.String())
	t.Logf("after %d incident lines Prometheus reads opened %v, waited %v s, open %v", f.lines, f.opened, f.waited, f.open)
}

// buildLagscope builds the command into a fresh directory: a plain build,
// without the race detector, so the demo runs at its real speed.
func buildLagscope(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lagscope")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer is a process's output, safe to read while the process writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// endProcess asks a process to end and kills it if it has not within 10 s;
// a process already waited for is left alone.
func endProcess(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
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

// t is the sample's time, seconds since the epoch.
func (p promPoint) t() float64 {
	f, _ := p[0].(float64)
	return f
}

func (s promSample) value() float64 { return promPoint(s.Value).v() }

// queryRange reads every raw sample of the last hour of a series selector.
func queryRange(t *testing.T, c *http.Client, api, sel string) []promSample {
	t.Helper()
	r, err := c.Get(api + "query?query=" + url.QueryEscape(sel+"[1h]"))
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
		t.Fatalf("%s: no samples", sel)
	}
	return res.Data.Result
}

// lastSampleTime is the time of the latest sample of any of the series.
func lastSampleTime(t *testing.T, ss []promSample) float64 {
	t.Helper()
	last := 0.0
	for _, s := range ss {
		for _, p := range s.Values {
			last = max(last, p.t())
		}
	}
	return last
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

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
