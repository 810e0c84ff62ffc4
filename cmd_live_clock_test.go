package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// One clock for every machine: three live machines and two watchers that
// arrive late, on loopback, each its own process with its own start. Every
// line a machine prints once the game runs carries the session time of its
// frame (game_ms); for the same executed frame — a report every machine
// executes, a timing change — all five give the same session time, within
// 100 ms, while their t_ms clocks differ by when each process started. The
// second watcher's snapshot brings the host's line about the first, from
// before it arrived: it keeps the host's time for it, not the time it came.
func TestLiveSessionTimeIsOneClock_S15(t *testing.T) {
	bin := buildLagscope(t)
	host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "24s")
	addr := hostAddr(t, host)
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--json", "--duration", "21s")
	cyd := startProc(t, bin, "cyd", "join", addr, "--name", "cyd", "--json", "--duration", "21s")
	pastFrame := func(f int) func([]ndjson) bool {
		return func(es []ndjson) bool {
			return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() >= f })
		}
	}
	host.waitFor("frame 200", 30*time.Second, pastFrame(200))
	admin := startProc(t, bin, "admin", "watch", addr, "--name", "admin", "--json", "--duration", "12s")
	host.waitFor("frame 400", 30*time.Second, pastFrame(400))
	zed := startProc(t, bin, "zed", "watch", addr, "--name", "zed", "--json", "--duration", "6s")
	all := []*proc{host, bob, cyd, admin, zed}
	for _, p := range all {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}

	// The network events every machine prints on the same frame, by what
	// they are: a report of a player, a timing change.
	key := func(e ndjson) string {
		switch e.str("type") {
		case "report":
			return fmt.Sprintf("report %s f%d", e.str("player"), e.frame())
		case "timing", "timing_active":
			return fmt.Sprintf("%s f%d", e.str("type"), e.frame())
		}
		return ""
	}
	times := map[string]map[string]float64{} // key → machine → game_ms
	for _, p := range all {
		for _, e := range p.events() {
			k := key(e)
			if k == "" {
				continue
			}
			g, ok := e["game_ms"].(float64)
			if !ok {
				t.Fatalf("%s's line has no game_ms: %v", p.name, e)
			}
			if times[k] == nil {
				times[k] = map[string]float64{}
			}
			times[k][p.name] = g
		}
	}
	shared, withWatchers := 0, 0
	worst := 0.0
	for k, by := range times {
		if len(by) < 2 {
			continue
		}
		shared++
		if _, ok := by["admin"]; ok {
			withWatchers++
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, g := range by {
			lo, hi = min(lo, g), max(hi, g)
		}
		worst = max(worst, hi-lo)
		if hi-lo > 100 {
			t.Errorf("%s: the machines' session times differ by %.1f ms: %v", k, hi-lo, by)
		}
	}
	t.Logf("%d events printed by several machines (%d by the first watcher too); session times at most %.3f ms apart", shared, withWatchers, worst)
	if shared < 10 || withWatchers < 5 {
		t.Errorf("only %d shared events, %d with the watcher", shared, withWatchers)
	}
	// The wall clocks do differ: each process counts t_ms from its own
	// start, the joiners and watchers after the host.
	at := func(p *proc, k string) (float64, bool) {
		for _, e := range p.events() {
			if key(e) == k {
				return e.num("t_ms"), true
			}
		}
		return 0, false
	}
	for k, by := range times {
		if len(by) < 5 {
			continue
		}
		h, _ := at(host, k)
		z, _ := at(zed, k)
		if h-z < 1000 {
			t.Errorf("%s: the host's t_ms %.0f and zed's %.0f are within a second: zed started 10 s later", k, h, z)
		}
		break
	}
	// zed's snapshot brought the host's line about admin, from before zed
	// came: at the host's session time for it.
	var hostLine ndjson
	for _, e := range host.of("message") {
		if strings.HasPrefix(e.str("text"), "admin is watching") {
			hostLine = e
		}
	}
	if hostLine == nil {
		t.Fatalf("the host printed no line about admin: %v", host.of("message"))
	}
	found := false
	for _, e := range zed.of("message") {
		if e.str("text") != hostLine.str("text") {
			continue
		}
		found = true
		if d := math.Abs(e.num("game_ms") - hostLine.num("game_ms")); d > 100 || e["game_ms"] == nil {
			t.Errorf("zed shows the line %q at %v ms of session time, the host at %v", e.str("text"), e["game_ms"], hostLine["game_ms"])
		}
	}
	if !found {
		t.Errorf("zed's snapshot did not bring %q: %v", hostLine.str("text"), zed.of("message"))
	}
}
