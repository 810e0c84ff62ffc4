package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// A late watcher outlives the host on real network stacks: the host on the
// internet, bob, cyd and the watcher mon each behind a filtering home
// router. mon attaches 10 s into the game; 10 s later the host leaves with
// Ctrl-C (its removal, S7; the master passes on, S16). Then bob's home
// line fills: a tbf queue on his router's upload (the kernel's, nothing of
// ours on the path), kept full by a bounded ping flood from bob, makes his
// round trips some 400 ms longer and the new master raises the timing.
// mon's frame keeps moving past the host's removal, it prints the host's
// removal and the new master, and its timing events from its attach on are
// the players' own, the ones after the host left included.
func TestNetnsWatcherOutlivesTheHost_S16(t *testing.T) {
	n := newNetns(t, "lw", true, "ip", "nft", "ping")
	inet := n.ns("inet")
	n.run("ip", "netns", "exec", inet, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	hostNS := n.ns("h")
	n.wire(inet, hostNS, "198.51.100.10/24")
	bobNS := n.behind(inet, "b", "198.18.1.2/24", 1, false)
	cydNS := n.behind(inet, "c", "198.18.2.2/24", 2, false)
	monNS := n.behind(inet, "m", "198.18.3.2/24", 3, false)

	bin := buildLagscope(t)
	in := func(ns, name string, args ...string) *proc {
		return startProc(t, "ip", name, append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	host := in(hostNS, "ada", "host", "--name", "ada", "--listen", "198.51.100.10:7373", "--players", "3", "--json", "--duration", "120s")
	hostAddr(t, host)
	code := joinCode(t, host)
	bob := in(bobNS, "bob", "join", "198.51.100.10:7373", "--key", code, "--name", "bob", "--json", "--duration", "62s")
	cyd := in(cydNS, "cyd", "join", "198.51.100.10:7373", "--key", code, "--name", "cyd", "--json", "--duration", "62s")
	linkPast := func(f int) func([]ndjson) bool {
		return func(es []ndjson) bool {
			return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() >= f })
		}
	}
	// 10 s into the game: 300 frames at 30 fps.
	host.waitFor("frame 300", 60*time.Second, linkPast(300))
	mon := in(monNS, "mon", "watch", "198.51.100.10:7373", "--key", code, "--name", "mon", "--json", "--duration", "45s")
	attached := -1
	mon.waitFor("mon's attach", 20*time.Second, func(es []ndjson) bool {
		for _, e := range es {
			if e.str("type") == "message" {
				if _, err := fmt.Sscanf(e.str("text"), "Watching a game in progress from frame %d", &attached); err == nil {
					return true
				}
			}
		}
		return false
	})
	// 10 s after the attach, the host leaves.
	mon.waitFor("10 s after the attach", 30*time.Second, linkPast(attached+300))
	host.cmd.Process.Signal(os.Interrupt)
	if c := host.exit(20 * time.Second); c != 0 {
		t.Fatalf("the host exited %d after Ctrl-C: %s", c, host.stderr.String())
	}
	removedAt := func(p *proc) int {
		for _, e := range p.of("removed") {
			if e.str("player") == "ada" {
				return e.frame()
			}
		}
		return -1
	}
	for _, p := range []*proc{bob, cyd, mon} {
		p.waitFor("the host's removal", 20*time.Second, func([]ndjson) bool { return removedAt(p) >= 0 })
	}
	left := removedAt(bob)
	if removedAt(cyd) != left || removedAt(mon) != left {
		t.Fatalf("the host's removal on frames %d (bob), %d (cyd), %d (mon)", left, removedAt(cyd), removedAt(mon))
	}

	// bob's upload fills: 1 Mbit/s with 50 kB of queue, about 400 ms,
	// kept full for 15 s by a ping flood of 4 kB echoes (ping sends some 200 a second:
	// over 6 Mbit/s).
	n.run("tc", "-n", n.prefix+"rb", "qdisc", "add", "dev", "wan", "root", "tbf", "rate", "1mbit", "burst", "4kb", "limit", "50000")
	flood := exec.Command("ip", "netns", "exec", bobNS, "ping", "-q", "-i", "0.002", "-s", "4000", "-c", "3200", "-w", "16", "198.51.100.10")
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flood.Process.Kill(); flood.Wait() })

	raisedAfter := func(p *proc) bool {
		return slices.ContainsFunc(p.of("timing"), func(e ndjson) bool { return e.frame() > left })
	}
	for end := time.Now().Add(40 * time.Second); !raisedAfter(bob); {
		select {
		case <-bob.done:
		case <-time.After(100 * time.Millisecond):
			if time.Now().Before(end) {
				continue
			}
		}
		for _, e := range bob.of("link") {
			if e.frame() > left && e.frame()%60 == 0 && e.str("from") == "bob" {
				t.Logf("bob→%s f%d srtt %v ms, lost %v of %v", e.str("to"), e.frame(), e["srtt_ms"], e["lost"], e["expected"])
			}
		}
		t.Fatalf("bob's timing never changed after the host left on frame %d: %v", left, timingKeys(bob))
	}
	flood.Wait()
	for _, p := range []*proc{bob, cyd, mon} {
		if c := p.exit(60 * time.Second); c != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, c, p.stderr.String(), p.of("message"))
		}
	}

	// mon kept moving: link lines well past the host's removal, the new
	// master's handoff, and the timing change the players made after it.
	last := 0
	for _, e := range mon.of("link") {
		last = max(last, e.frame())
	}
	if last < left+300 {
		t.Errorf("mon's last link line on frame %d, the host left on %d: the feed stopped", last, left)
	}
	// mon ends before the players (a player's leave at the end may hand
	// the master on once more): what it must have printed runs from its
	// attach to the last frame it printed anything on.
	end := 0
	for _, e := range mon.events() {
		end = max(end, e.frame())
	}
	masters := func(p *proc) []string {
		var out []string
		for _, e := range p.of("master") {
			if e.frame() >= attached && e.frame() <= end {
				out = append(out, fmt.Sprintf("f%d %s", e.frame(), e.str("player")))
			}
		}
		return out
	}
	if m, b := masters(mon), masters(bob); len(b) == 0 || !slices.Equal(m, b) {
		t.Errorf("masters after the attach: mon %v, bob %v", m, b)
	}
	if !raisedAfter(mon) {
		t.Errorf("mon printed no timing event after the host left on frame %d: %v", left, timingFrom(mon, attached))
	}
	m, b, c := timingFrom(mon, attached), timingFrom(bob, attached), timingFrom(cyd, attached)
	if !slices.Equal(b, c) {
		t.Errorf("bob's and cyd's timing events differ:\n%v\n%v", b, c)
	}
	// mon ends before the players: bob's events up to the last frame mon
	// printed anything on are the ones it must have printed.
	var upTo []string
	for _, e := range bob.of("timing") {
		if e.frame() >= attached && e.frame() <= end {
			upTo = append(upTo, fmt.Sprintf("f%d d%v %v/%v %vfps %s", e.frame(), e["decided"], e["send_period"], e["look_ahead"], e["fps"], e.str("reason")))
		}
	}
	if !slices.Equal(m, upTo) {
		t.Errorf("mon's timing events from its attach (frame %d) to its last frame (%d) differ from bob's:\n%v\n%v", attached, end, m, upTo)
	}
	for _, e := range mon.of("message") {
		if s := e.str("text"); strings.Contains(s, "ada") {
			t.Logf("mon: %s", s)
		}
	}
	t.Logf("mon attached on frame %d, the host left on frame %d, mon's last link line on frame %d; timing after the attach: %v", attached, left, last, m)
}
