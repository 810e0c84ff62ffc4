//go:build linux

package main

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestNetnsLANSRTTAgainstBareEcho_T2: how close a link's SRTT comes to the
// floor on a LAN. Four namespaces on one bridge — the host ada, the
// players bob and cyd, the watcher eve — play for 26 s; in the middle of
// the session a bare UDP echo (veth_echo_linux_test.go) runs between every
// two players in each direction: its server a process of its own in the
// peer's namespace answering from a plain blocking read, its client in
// the link's own namespace sending echoSamples datagrams echoGap apart
// and ending each round trip at the kernel's receive stamp, as a link's
// samples end (T2). Any program that answers from user space pays what
// the bare echo pays; the link pays its own turnaround on top. Each
// directed link's SRTT — the median of its link lines once the session
// settled — is logged against the bare echo's median between the same
// namespaces, as a ratio (docs/live.md, "Round trips on a LAN"). The
// host's link to the watcher is logged the same way, apart: the watcher
// runs no frames, so its acks never wait for a frame's work of its own,
// where a player's do when a packet arrives while the player runs the
// same frame (a lockstep's machines run each frame at nearly the same
// moment).
//
// A timing target is not a pass/fail test on a shared machine, so the
// test fails only on a gross miss — an SRTT above ten times the bare
// echo plus 1 ms, a turnaround bug such as an ack held to the next tick —
// and on a link that never settled.
func TestNetnsLANSRTTAgainstBareEcho_T2(t *testing.T) {
	n := newNetns(t, "ls", false, "ip")
	addrs := map[string]netip.Addr{
		"ada": netip.MustParseAddr("10.88.0.1"),
		"bob": netip.MustParseAddr("10.88.0.2"),
		"cyd": netip.MustParseAddr("10.88.0.3"),
		"eve": netip.MustParseAddr("10.88.0.4"),
	}
	ns := n.flatLAN(addrs)
	bin := buildLagscope(t)
	cfg := t.TempDir()
	const (
		session     = 26 * time.Second
		settled     = 8 * time.Second // link lines before this are the start's
		echoSamples = 100
		echoGap     = 10 * time.Millisecond
	)
	at := netip.AddrPortFrom(addrs["ada"], 7373).String()
	dur := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
	host := nsProc(t, bin, cfg, ns["ada"], "ada", "host", "--open", "--name", "ada", "--listen", at, "--players", "3",
		"--json", "--duration", dur(session+4*time.Second))
	hostAddr(t, host)
	procs := map[string]*proc{"ada": host}
	for _, who := range []string{"bob", "cyd"} {
		procs[who] = nsProc(t, bin, cfg, ns[who], who, "join", at, "--name", who, "--json", "--duration", dur(session))
	}
	eve := nsProc(t, bin, cfg, ns["eve"], "eve", "watch", at, "--name", "eve", "--json", "--duration", dur(session))
	procs["eve"] = eve

	// The echoes run once the game has run a while, while it goes on.
	host.waitFor("frame 300", 30*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() >= 300 })
	})
	players := []string{"ada", "bob", "cyd"}
	var pairs [][2]string
	for _, from := range players {
		for _, to := range players {
			if from != to {
				pairs = append(pairs, [2]string{from, to})
			}
		}
	}
	watcher := [2]string{"ada", "eve"}
	echo := map[[2]string][]float64{}
	for _, p := range append(pairs, watcher) {
		from, to := p[0], p[1]
		echo[p] = bareEcho(t, ns[to], netip.AddrPortFrom(addrs[to], 0), ns[from], addrs[from], echoSamples, echoGap)
	}
	for _, p := range []*proc{procs["bob"], procs["cyd"], eve, host} {
		if code := p.exit(session + time.Minute); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	var ratios []float64
	for _, p := range append(pairs, watcher) {
		from, to := p[0], p[1]
		var srtts []float64
		for _, e := range procs[from].of("link") {
			if e.str("from") == from && e.str("to") == to && e.str("state") == "measured" && e.num("t_ms") >= float64(settled/time.Millisecond) {
				srtts = append(srtts, e.num("srtt_ms"))
			}
		}
		if len(srtts) < 5 {
			t.Errorf("%s → %s: %d measured link lines after %v, want 5 at least", from, to, len(srtts), settled)
			continue
		}
		slices.Sort(srtts)
		e := echo[p]
		srtt, bare := sortedMedian(srtts), sortedMedian(e)
		what := ""
		if p == watcher {
			what = " (the watcher: no frames of its own)"
		} else {
			ratios = append(ratios, srtt/bare)
		}
		t.Logf("%s → %s%s: SRTT %.3f ms (median of %d link lines), bare UDP echo %.3f ms (p10 %.3f, p90 %.3f; %d echoes): %.2f× the bare echo, %+.0f µs",
			from, to, what, srtt, len(srtts), bare, e[len(e)/10], e[len(e)*9/10], len(e), srtt/bare, 1000*(srtt-bare))
		if srtt > 10*bare+1 {
			t.Errorf("%s → %s: SRTT %.3f ms is over 10× the bare echo's %.3f ms + 1 ms: the peer's turnaround, not the wire", from, to, srtt, bare)
		}
	}
	// Each process's own share of the round trips its peers measure: how
	// long datagrams waited in its socket before it read them (the
	// summary's read delay, from the kernel's arrival stamp to the read).
	for _, who := range []string{"ada", "bob", "cyd", "eve"} {
		var proc map[string]any
		for _, e := range procs[who].of("summary") {
			proc, _ = e["process"].(map[string]any)
		}
		p50, ok50 := proc["read_delay_p50_ms"].(float64)
		p99, ok99 := proc["read_delay_p99_ms"].(float64)
		if !ok50 || !ok99 || p50 <= 0 || p99 < p50 {
			t.Errorf("%s: the summary's read delay is %v / %v, want a median above 0 and a p99 not below it (the kernel stamps every arrival here)", who, proc["read_delay_p50_ms"], proc["read_delay_p99_ms"])
			continue
		}
		t.Logf("%s read its datagrams %.3f ms after the kernel's stamp at the median, %.3f ms at p99", who, p50, p99)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		t.Logf("SRTT over the bare echo between the same namespaces: median %.2f×, %.2f×–%.2f× over the %d links between players", sortedMedian(ratios), ratios[0], ratios[len(ratios)-1], len(ratios))
	}
}
