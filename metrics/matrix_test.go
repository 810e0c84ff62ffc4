package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	dto "github.com/prometheus/client_model/go"
)

// The matrix families and their label sets.
var matrixCounters = []string{
	"lagscope_matrix_datagrams_sent_total", "lagscope_matrix_datagrams_retransmitted_total",
	"lagscope_matrix_datagrams_expected_total", "lagscope_matrix_datagrams_lost_total",
	"lagscope_matrix_datagrams_peer_expected_total", "lagscope_matrix_datagrams_peer_lost_total",
	"lagscope_matrix_caused_wait_seconds_total",
}

var matrixGauges = []string{
	"lagscope_matrix_srtt_seconds", "lagscope_matrix_rttvar_seconds", "lagscope_matrix_rto_seconds",
	"lagscope_matrix_connection_timeout_seconds", "lagscope_matrix_link_state", "lagscope_matrix_relayed",
}

// ml is a link of a telemetry row, every value known.
func ml(from, to string, srttMs int, sent, exp uint64) feed.MatrixLink {
	ms := time.Millisecond
	return feed.MatrixLink{Caused: time.Duration(sent) * ms, Link: feed.Link{From: from, To: to, State: feed.LinkMeasured,
		RTTKnown: true, SRTT: time.Duration(srttMs) * ms, RTTVAR: 4 * ms, RTO: 200 * ms, ConnTimeout: 2 * time.Second,
		LossKnown: true, Sent: sent, Retransmitted: sent / 10, Expected: exp, Missing: exp / 20,
		PeerKnown: true, PeerExpected: sent, PeerMissing: sent / 50}}
}

func row(name string, links ...feed.MatrixLink) feed.MatrixPlayer {
	return feed.MatrixPlayer{Name: name, Known: true, Age: 300 * time.Millisecond, Links: links}
}

// watcherView is what a watcher "obs" sees: its own links to the players
// (first-hand, in Links) and the players' rows from their telemetry; it
// has no row itself (it makes nobody wait).
func watcherView(rows ...feed.MatrixPlayer) feed.View {
	v := view("obs", lv("ada", 40, 40), lv("bob", 40, 40), lv("cyd", 40, 40))
	v.Players = []feed.PlayerView{{Name: "ada"}, {Name: "bob"}, {Name: "cyd"}, {Name: "obs", Observer: true, Self: true}}
	v.Matrix = feed.MatrixView{Players: rows}
	return v
}

// series is every series of the family as "player>peer" → value.
func series(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		l := labels(m)
		out[l["player"]+">"+l["peer"]] = value(m)
	}
	return out
}

// A watcher's scrape holds every pair of every known row, labelled by both
// ends (player measures, peer is the other end) and the session; a row not
// heard from yet and a value not known yet are absent, never zero (L3);
// the per-link families keep only the watcher's own links (L5).
func TestMatrixEveryPair_L3_L5(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	unmeasured := ml("bob", "cyd", 0, 5, 0)
	unmeasured.State, unmeasured.RTTKnown, unmeasured.SRTT, unmeasured.RTTVAR = feed.LinkUnmeasured, false, 0, 0
	unmeasured.PeerKnown, unmeasured.PeerExpected, unmeasured.PeerMissing = false, 0, 0
	relayed := ml("ada", "cyd", 180, 300, 280)
	relayed.Relayed = true
	e.Observe(feed.Update{View: watcherView(
		row("ada", ml("ada", "bob", 60, 300, 290), relayed, ml("ada", "obs", 30, 20, 20)),
		row("bob", ml("bob", "ada", 61, 310, 300), unmeasured),
		feed.MatrixPlayer{Name: "cyd"}, // no telemetry from cyd yet
	)})
	fams, body := scrape(t, e)
	pairs := []string{"ada>bob", "ada>cyd", "ada>obs", "bob>ada", "bob>cyd"}
	for _, name := range append(append([]string{}, matrixCounters...), matrixGauges...) {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		for _, m := range f.GetMetric() {
			if got := labelNames(m); got != "peer,player,session" {
				t.Errorf("%s labels %s", name, got)
			}
			if labels(m)["session"] != "lan" {
				t.Errorf("%s session %q", name, labels(m)["session"])
			}
		}
		want := pairs
		switch name {
		case "lagscope_matrix_srtt_seconds", "lagscope_matrix_rttvar_seconds",
			"lagscope_matrix_datagrams_peer_expected_total", "lagscope_matrix_datagrams_peer_lost_total":
			want = slices.DeleteFunc(slices.Clone(pairs), func(p string) bool { return p == "bob>cyd" })
		}
		got := series(fams, name)
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Errorf("%s pairs %v, want %v", name, keys, want)
		}
	}
	checks := []struct {
		name, pair string
		want       float64
	}{
		{"lagscope_matrix_srtt_seconds", "ada>cyd", 0.18},
		{"lagscope_matrix_srtt_seconds", "bob>ada", 0.061},
		{"lagscope_matrix_datagrams_sent_total", "ada>bob", 300},
		{"lagscope_matrix_datagrams_lost_total", "ada>bob", 14},
		{"lagscope_matrix_datagrams_peer_expected_total", "bob>ada", 310},
		{"lagscope_matrix_caused_wait_seconds_total", "bob>ada", 0.31},
		{"lagscope_matrix_link_state", "bob>cyd", 0},
		{"lagscope_matrix_link_state", "ada>bob", 2},
		{"lagscope_matrix_relayed", "ada>cyd", 1},
		{"lagscope_matrix_relayed", "ada>bob", 0},
	}
	for _, c := range checks {
		if v, ok := series(fams, c.name)[c.pair]; !ok || v != c.want {
			t.Errorf("%s{%s} = %v (%v), want %v", c.name, c.pair, v, ok, c.want)
		}
	}
	if age := fams["lagscope_matrix_age_seconds"]; age == nil || len(age.GetMetric()) != 2 || labelNames(age.GetMetric()[0]) != "player,session" {
		t.Errorf("age: %v", age)
	}
	if strings.Contains(body, `player="cyd"`) || strings.Contains(body, `lagscope_matrix_srtt_seconds{peer="cyd",player="bob"`) {
		t.Errorf("an unknown row or round trip was published:\n%s", body)
	}
	// The per-link families are first-hand only: the watcher's own links.
	if got := series(fams, "lagscope_datagrams_sent_total"); len(got) != 3 || got["obs>ada"] != 40 {
		t.Errorf("per-link sent %v", got)
	}
	if !strings.Contains(body, `lagscope_matrix_srtt_seconds{peer="cyd",player="ada",session="lan"} 0.18`) {
		t.Errorf("scrape lacks the documented line:\n%s", body)
	}
}

// The matrix counters never decrease (L5) across what telemetry does: a
// row whose totals are left out for a moment, a row that goes unknown and
// comes back, a late LinkReport, a player's removal; and a player who
// comes back under the same name counts on from where the old one ended.
func TestMatrixCountersMonotonic_L5(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	sent := func() (float64, bool) {
		fams, _ := scrape(t, e)
		v, ok := series(fams, "lagscope_matrix_datagrams_sent_total")["bob>ada"]
		return v, ok
	}
	step := func(what string, want float64, v feed.View) {
		t.Helper()
		e.Observe(feed.Update{View: v})
		if got, ok := sent(); !ok || got != want {
			t.Fatalf("%s: sent %v (%v), want %v", what, got, ok, want)
		}
	}
	step("first telemetry", 100, watcherView(row("ada", ml("ada", "bob", 60, 90, 90)), row("bob", ml("bob", "ada", 60, 100, 100))))
	step("more", 150, watcherView(row("ada", ml("ada", "bob", 60, 140, 140)), row("bob", ml("bob", "ada", 60, 150, 150))))

	// bob's update leaves his own totals out (L3): nothing folds a zero.
	gap := ml("bob", "ada", 60, 0, 0)
	gap.LossKnown, gap.Sent, gap.Retransmitted, gap.Expected, gap.Missing = false, 0, 0, 0, 0
	step("totals left out", 150, watcherView(row("ada", ml("ada", "bob", 60, 150, 150)), row("bob", gap)))
	step("totals back", 160, watcherView(row("ada", ml("ada", "bob", 60, 160, 160)), row("bob", ml("bob", "ada", 60, 160, 160))))

	// bob's row goes unknown, then his link is missing from it for a
	// moment; the same life comes back: nothing is counted twice.
	step("row unknown", 160, watcherView(row("ada"), feed.MatrixPlayer{Name: "bob"}))
	step("link missing", 160, watcherView(row("ada"), row("bob")))
	late := ml("bob", "ada", 60, 170, 170)
	late.PeerExpected = 10 // an older LinkReport of ada's
	step("back", 170, watcherView(row("ada", ml("ada", "bob", 60, 170, 170)), row("bob", late)))
	fams, _ := scrape(t, e)
	if v := series(fams, "lagscope_matrix_datagrams_peer_expected_total")["bob>ada"]; v != 160 {
		t.Fatalf("peer_expected %v, want the high-water 160", v)
	}

	// bob is removed: his row leaves the matrix; the counters stay, the
	// gauges of his links and of links to him go.
	gone := watcherView(row("ada"))
	gone.Players[1].Removed = true
	step("removed", 170, gone)
	fams, body := scrape(t, e)
	if _, ok := series(fams, "lagscope_matrix_srtt_seconds")["bob>ada"]; ok {
		t.Fatal("a removed player's link still has an SRTT")
	}
	if _, ok := series(fams, "lagscope_matrix_srtt_seconds")["ada>bob"]; ok {
		t.Fatalf("a link to a removed player still has an SRTT:\n%s", body)
	}
	if v := series(fams, "lagscope_matrix_datagrams_sent_total")["ada>bob"]; v != 170 {
		t.Fatalf("ada>bob after bob's removal: %v", v)
	}

	// A new bob: his totals start again and add to the old life's.
	again := watcherView(row("ada", ml("ada", "bob", 60, 5, 5)), row("bob", ml("bob", "ada", 60, 8, 8)))
	step("a new bob", 178, again)
	fams, _ = scrape(t, e)
	if v := series(fams, "lagscope_matrix_datagrams_sent_total")["ada>bob"]; v != 175 {
		t.Fatalf("ada>bob after bob came back: %v, want 175", v)
	}

	// The watcher ends: counters stay, gauges go.
	e.Observe(feed.Update{View: again, Done: true})
	fams, _ = scrape(t, e)
	if v := series(fams, "lagscope_matrix_datagrams_sent_total")["bob>ada"]; v != 178 {
		t.Fatalf("after the watcher ended: %v", v)
	}
	if len(fams["lagscope_matrix_srtt_seconds"].GetMetric()) != 0 || fams["lagscope_matrix_age_seconds"] != nil {
		t.Fatal("an ended machine's matrix gauges stay")
	}
}

// A player's own row is first-hand, published once: from its endpoint,
// never again from telemetry. When one exporter observes several machines
// (the demo), each pair comes from the machine that measures it.
func TestMatrixOwnRowOnce_L5(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	own := row("ada", ml("ada", "bob", 50, 200, 200))
	own.Self, own.Age = true, 0
	va := view("ada", lv("bob", 200, 200))
	va.Matrix.Players = []feed.MatrixPlayer{own, row("bob", ml("bob", "ada", 50, 90, 90))} // bob's row, older
	e.Observe(feed.Update{View: va})
	fams, _ := scrape(t, e)
	if got := series(fams, "lagscope_matrix_datagrams_sent_total"); len(got) != 2 || got["ada>bob"] != 200 || got["bob>ada"] != 90 {
		t.Fatalf("ada's matrix %v", got)
	}
	if got := series(fams, "lagscope_matrix_age_seconds"); got["ada>"] != 0 || got["bob>"] != 0.3 {
		t.Fatalf("age %v", got)
	}
	// bob's own machine in the same exporter: his row is now first-hand,
	// and ada's learned copy of it (older) changes nothing.
	ownB := row("bob", ml("bob", "ada", 50, 120, 120))
	ownB.Self, ownB.Age = true, 0
	vb := view("bob", lv("ada", 120, 120))
	vb.Matrix.Players = []feed.MatrixPlayer{row("ada", ml("ada", "bob", 50, 180, 180)), ownB}
	e.Observe(feed.Update{View: vb})
	e.Observe(feed.Update{View: va})
	fams, _ = scrape(t, e)
	if got := series(fams, "lagscope_matrix_datagrams_sent_total"); len(got) != 2 || got["ada>bob"] != 200 || got["bob>ada"] != 120 {
		t.Fatalf("two machines' matrix %v", got)
	}
}

// Fed every machine of a simulated session (as the demo feeds one
// exporter), the matrix families hold every pair once, with the very
// totals the per-link families publish, and never decrease (L5).
func TestMatrixSimAgreesWithLinks_L5(t *testing.T) {
	e, _ := New("handoff")
	defer e.Close()
	prev := map[string]float64{}
	pairs := 0
	for _, b := range simFeed(t, "handoff.json") {
		for _, u := range b {
			e.Observe(u)
		}
		fams, _ := scrape(t, e)
		for i, name := range matrixCounters[:6] {
			per := series(fams, contractCounters[i])
			for k, v := range series(fams, name) {
				if v < prev[name+k] {
					t.Fatalf("%s{%s} went from %v to %v", name, k, prev[name+k], v)
				}
				prev[name+k] = v
				if per[k] != v {
					t.Fatalf("%s{%s} = %v, the per-link family says %v", name, k, v, per[k])
				}
			}
		}
		got, per := len(series(fams, "lagscope_matrix_datagrams_sent_total")), len(series(fams, "lagscope_datagrams_sent_total"))
		if got != per {
			t.Fatalf("%d pairs in the matrix, %d links", got, per)
		}
		pairs = max(pairs, got)
	}
	if pairs != 3*2 { // three players, each with a link to the two others
		t.Fatalf("%d pairs in the matrix", pairs)
	}
}

// metricName finds the lagscope metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\blagscope_[a-z_]+\b`)

// Every PromQL expression of docs/grafana-dashboard.json names only
// metrics this exporter publishes, the session's Matrix panel is there
// and reads the matrix families, and the file is valid JSON.
func TestDashboardNamesExist_L5(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	v := watcherView(row("ada", ml("ada", "bob", 60, 300, 290)), row("bob", ml("bob", "ada", 61, 310, 300)))
	v.Players[0].Report = &feed.ReportView{Wait: time.Millisecond}
	v.Relay = []feed.RelayStat{{Between: [2]string{"ada", "bob"}, Datagrams: 1}}
	e.Observe(feed.Update{View: v})
	fams, _ := scrape(t, e)

	b, err := os.ReadFile(filepath.Join("..", "docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct{ Definition string }
		}
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exprs := []string{}
	for _, tv := range d.Templating.List {
		exprs = append(exprs, tv.Definition)
	}
	matrix := false
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
			if strings.Contains(p.Title, "Matrix") && strings.Contains(tg.Expr, "lagscope_matrix_srtt_seconds") {
				matrix = true
			}
		}
	}
	if !matrix {
		t.Error("no Matrix panel reads lagscope_matrix_srtt_seconds")
	}
	for _, x := range exprs {
		names := metricName.FindAllString(x, -1)
		if x != "" && len(names) == 0 {
			t.Errorf("%q names no lagscope metric", x)
		}
		for _, n := range names {
			if fams[n] == nil {
				t.Errorf("%q: the exporter publishes no %s", x, n)
			}
		}
	}
}
