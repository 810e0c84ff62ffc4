package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// inForceBefore is the timing in force on p once frame f-1 has executed:
// its last timing_active line before frame f, as "send/look fps".
func inForceBefore(p *proc, f int) string {
	got := ""
	for _, e := range p.of("timing_active") {
		if e.frame() < f {
			got = fmt.Sprintf("%v/%v %vfps", e["send_period"], e["look_ahead"], e["fps"])
		}
	}
	return got
}

// timingFrom keeps p's timing lines on frame f and after.
func timingFrom(p *proc, f int) []string {
	var out []string
	for i, e := range p.of("timing") {
		if e.frame() >= f {
			out = append(out, timingKeys(p)[i])
		}
	}
	return out
}

// `lagscope watch` attaches to a game that has been running for a while:
// the host admits it and hands it a snapshot, and its
// --json output has a link line for every pair of players — its own links
// measured by its keep-alives, the others' from the players' telemetry —
// the timing in force the players had at that frame, and from then on the
// same timing lines on the same frames as the players.
func TestLiveLateWatcher_T1_S12(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "24s")
	addr := hostAddr(t, host)
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--json", "--duration", "21s")
	cyd := startProc(t, bin, "cyd", "join", addr, "--name", "cyd", "--json", "--duration", "21s")
	players := []*proc{host, bob, cyd}
	// Late: once the host's link lines are past frame 200 (the first
	// timing event is at about frame 70).
	host.waitFor("frame 200", 30*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() >= 200 })
	})
	admin := startProc(t, bin, "admin", "watch", addr, "--name", "admin", "--json", "--duration", "8s")
	for _, p := range append(players, admin) {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}

	attached := -1
	for _, m := range admin.of("message") {
		if _, err := fmt.Sscanf(m.str("text"), "Watching a game in progress from frame %d", &attached); err == nil {
			break
		}
	}
	if attached < 200 {
		t.Fatalf("admin did not attach late (frame %d): %v", attached, admin.of("message"))
	}
	// Every pair of players, and admin's own links, in admin's link lines.
	seen := map[string]bool{}
	for _, e := range admin.of("link") {
		seen[e.str("from")+"→"+e.str("to")] = true
	}
	for _, p := range players {
		for _, q := range players {
			if p != q && !seen[p.name+"→"+q.name] {
				t.Errorf("admin printed no link line %s→%s (%d lines)", p.name, q.name, len(admin.of("link")))
			}
		}
	}
	own := measuredLinks(admin, "admin")
	for _, p := range players {
		if !own[p.name] {
			t.Errorf("admin's own link to %s never measured", p.name)
		}
		if !measuredLinks(p, p.name)["admin"] {
			t.Errorf("%s's link to admin never measured", p.name)
		}
	}
	// What it attached to: the timing the players had in force then.
	sum := admin.of("summary")
	if len(sum) != 1 {
		t.Fatalf("admin printed %d summaries", len(sum))
	}
	w, ok := sum[0]["watch"].(map[string]any)
	if !ok {
		t.Fatalf("admin's summary has no watch: %v", sum[0])
	}
	wf := int(w["frame"].(float64))
	got := fmt.Sprintf("%v/%v %vfps", w["send_period"], w["look_ahead"], w["fps"])
	for _, p := range players {
		if want := inForceBefore(p, wf); got != want {
			t.Errorf("admin attached at frame %d with %s in force; %s had %s", wf, got, p.name, want)
		}
	}
	if w["master"] != "ada" {
		t.Errorf("admin's master %v, want ada", w["master"])
	}
	n, ok := w["matrix_complete_after"].(float64)
	if !ok {
		t.Fatalf("admin's matrix never complete: %v", w)
	}
	// Each player sends at most ten updates a second: the matrix must be
	// complete within 5 s' worth of them.
	if n > 5*10*float64(len(players)) {
		t.Errorf("admin's matrix complete after %v telemetry updates, more than 5 s' worth", n)
	}
	t.Logf("admin attached at frame %d (%s), matrix complete after %v of %v telemetry updates", wf, got, n, w["telemetry_updates"])
	// From the attach on: the same timing lines on the same frames.
	if a, h := timingFrom(admin, wf), timingFrom(host, wf); !slices.Equal(a, h[:min(len(h), len(a))]) {
		t.Errorf("timing lines after the attach: admin %q, ada %q", a, h)
	}
	for _, m := range admin.of("stall") {
		t.Errorf("admin (a spectator) printed a stall: %v", m)
	}
	if !slices.ContainsFunc(host.of("message"), func(m ndjson) bool { return strings.HasPrefix(m.str("text"), "admin is watching") }) {
		t.Errorf("the host never said admin is watching: %v", host.of("message"))
	}
}
