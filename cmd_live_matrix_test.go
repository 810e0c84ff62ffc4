package main

import (
	"fmt"
	"testing"
	"time"
)

// measuredPairs: every from→to p's link lines show measured, with a round
// trip and loss totals, at least once.
func measuredPairs(p *proc) map[string]bool {
	got := map[string]bool{}
	for _, e := range p.of("link") {
		if e.str("state") == "measured" && e["srtt_ms"] != nil && e["rto_ms"] != nil && e["expected"] != nil && e["sent"] != nil {
			got[e.str("from")+"→"+e.str("to")] = true
		}
	}
	return got
}

// Four players and a watcher, each its own process on loopback: the
// watcher, which links only to the players, prints link lines for all 12
// directed pairs between them with measured values — its own links from
// its endpoint, the others from the players' telemetry (Q1–Q4) —
// and so does a player for the pairs it is not part of.
func TestLiveWatchPrintsEveryPair_T1_Q4(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	names := []string{"alice", "bob", "carol", "dave"}
	host := startProc(t, bin, "alice", "host", "--open", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "4",
		"--json", "--duration", "22s")
	addr := hostAddr(t, host)
	eve := startProc(t, bin, "eve", "watch", addr, "--name", "eve", "--json", "--duration", "18s")
	eve.waitFor("roster", 10*time.Second, hasType("roster"))
	all := []*proc{host, eve}
	for _, n := range names[1:] {
		all = append(all, startProc(t, bin, n, "join", addr, "--name", n, "--json", "--duration", "18s"))
	}
	for _, p := range all {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	for _, p := range []*proc{eve, all[2]} {
		got := measuredPairs(p)
		var missing []string
		for _, a := range names {
			for _, b := range names {
				if a != b && !got[a+"→"+b] {
					missing = append(missing, a+"→"+b)
				}
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s printed no measured link line for %v (measured: %v)", p.name, missing, got)
		}
		// Each second's batch names every pair once: no duplicates.
		seen := map[string]int{}
		for _, e := range p.of("link") {
			seen[fmt.Sprintf("%v %s→%s", e["t_ms"], e.str("from"), e.str("to"))]++
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("%s: link line %s printed %d times", p.name, k, n)
			}
		}
	}
}
