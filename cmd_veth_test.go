//go:build linux

package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// pingAvg runs ICMP ping in ns to addr (count echoes, interval apart) and
// returns its average round trip in milliseconds.
func pingAvg(t *testing.T, ns, addr string, count int, interval string) float64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-q", "-n",
		"-c", strconv.Itoa(count), "-i", interval, addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	// rtt min/avg/max/mdev = 0.031/0.046/0.112/0.010 ms
	m := regexp.MustCompile(`= [0-9.]+/([0-9.]+)/`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("ping printed no average:\n%s", out)
	}
	avg, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return avg
}

// A live host and join in two network namespaces joined by one veth pair,
// ICMP ping on the same path in the same run (T2/T3): the link's
// final SRTT against ping's average, and against a bare UDP echo of the
// same run (veth_echo_linux_test.go) — what any answer from user space
// costs on this path.
//
// The acceptance is SRTT ≤ ping average + 50 µs. That is a timing
// target, and timing is not a pass/fail test on a shared 2-core machine
// (a neighbour's build can put a millisecond on any wake-up), so the test
// logs both numbers for the measured note (docs/live.md) and fails only on
// a gross miss — SRTT above ten times ping's average plus 1 ms — which is
// a turnaround bug (an ack held to the next tick, a send time taken long
// before the write), not noise.
func TestVethSRTTAgainstPing_T2_T3(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("veth SRTT-against-ping test: set " + netnsEnv + "=1 (needs root, iproute2 and iputils ping)")
	}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s=1 but %s is missing: %v", netnsEnv, tool, err)
		}
	}
	n := &netns{t: t, prefix: fmt.Sprintf("lv%d", os.Getpid()%100000)}
	t.Cleanup(func() {
		for _, ns := range n.made {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	a, b := n.ns("a"), n.ns("b")
	n.run("ip", "-n", a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b)
	n.run("ip", "-n", a, "addr", "add", "10.77.0.1/24", "dev", "eth0")
	n.run("ip", "-n", b, "addr", "add", "10.77.0.2/24", "dev", "eth0")
	n.run("ip", "-n", a, "link", "set", "eth0", "up")
	n.run("ip", "-n", b, "link", "set", "eth0", "up")

	bin := buildLagscope(t)
	in := func(ns, name string, args ...string) *proc {
		return startProc(t, "ip", name, append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	host := in(a, "ada", "host", "--open", "--name", "ada", "--listen", "10.77.0.1:7373", "--players", "2", "--json", "--duration", "17s")
	hostAddr(t, host)
	bob := in(b, "bob", "join", "10.77.0.1:7373", "--name", "bob", "--json", "--duration", "15s")
	// Ping in the middle of the session, on the same path: 200 echoes
	// 10 ms apart, about two seconds.
	time.Sleep(6 * time.Second)
	ping := pingAvg(t, b, "10.77.0.1", 200, "0.01")
	// And a bare UDP echo on the same path, timed as a link times its
	// samples: what any user-space answer costs here, lagscope or not.
	echo := bareEcho(t, a, netip.MustParseAddrPort("10.77.0.1:0"), b, netip.MustParseAddr("10.77.0.2"), 200, 10*time.Millisecond)
	echoAt := func(q float64) float64 { return echo[int(q*float64(len(echo)-1))] }
	for _, p := range []*proc{bob, host} {
		if code := p.exit(40 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	srtt := func(p *proc, to string) float64 {
		t.Helper()
		s := p.of("summary")
		if len(s) != 1 {
			t.Fatalf("%s: %d summaries", p.name, len(s))
		}
		for _, l := range s[0]["links"].([]any) {
			ln := ndjson(l.(map[string]any))
			if ln.str("to") == to && ln.num("srtt_ms") > 0 {
				return ln.num("srtt_ms")
			}
		}
		t.Fatalf("%s has no measured link to %s: %v", p.name, to, s[0]["links"])
		return 0
	}
	target := ping + 0.050
	for _, l := range []struct {
		p  *proc
		to string
	}{{bob, "ada"}, {host, "bob"}} {
		got := srtt(l.p, l.to)
		t.Logf("%s→%s SRTT %.3f ms; ping average %.3f ms; target ≤ %.3f ms (%s); bare UDP echo median %.3f ms (p10 %.3f, p90 %.3f): SRTT %+.0f µs from it",
			l.p.name, l.to, got, ping, target, map[bool]string{true: "met", false: "missed"}[got <= target],
			echoAt(0.5), echoAt(0.1), echoAt(0.9), 1000*(got-echoAt(0.5)))
		if gross := 10*ping + 1; got > gross {
			t.Errorf("%s→%s SRTT %.3f ms is over 10× ping's %.3f ms + 1 ms: the peer's turnaround, not the wire", l.p.name, l.to, got, ping)
		}
	}
}
