package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Home routers that only masquerade, beside ones that also drop what
// nobody inside asked for: the host on the internet; bob and cyd behind
// masquerade-only routers, dan and eve behind filtering ones, all four
// endpoint-independent. An unsolicited datagram that reaches a
// masquerade-only router is answered with ICMP port unreachable and its
// conntrack entry stays, which would take the public port its inside
// machine's own datagrams to that peer need. Every pair of players finds
// a direct path: masquerade-only with masquerade-only, filtering with
// filtering, and the mixed pairs; no pair is relayed.
func TestNetnsMasqueradeOnly(t *testing.T) {
	// The internet is a router, as between any two homes: a datagram
	// that leaves a home router with hop limit 1 left dies there.
	n := newNetns(t, "lm", true, "ip", "nft")
	inet := n.ns("inet")
	n.run("ip", "netns", "exec", inet, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	hostNS := n.ns("h")
	n.wire(inet, hostNS, "198.51.100.10/24")
	bobNS := n.router(inet, "b", "198.18.1.2/24", 1, false, false)
	cydNS := n.router(inet, "c", "198.18.2.2/24", 2, false, false)
	danNS := n.router(inet, "d", "198.18.3.2/24", 3, false, true)
	eveNS := n.router(inet, "e", "198.18.4.2/24", 4, false, true)

	bin := buildLagscope(t)
	in := func(ns, name string, args ...string) *proc {
		return startProc(t, "ip", name, append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	host := in(hostNS, "ada", "host", "--open", "--name", "ada", "--listen", "198.51.100.10:7373", "--players", "5", "--json", "--duration", "20s")
	hostAddr(t, host)
	join := func(ns, name string) *proc {
		return in(ns, name, "join", "198.51.100.10:7373", "--name", name, "--json", "--duration", "14s")
	}
	bob := join(bobNS, "bob")
	cyd := join(cydNS, "cyd")
	dan := join(danNS, "dan")
	eve := join(eveNS, "eve")
	all := []*proc{host, bob, cyd, dan, eve}

	// What the routers kept once the game runs: conntrack's table (when
	// the tool is there) and the masquerade-only routers' count of
	// unsolicited datagrams that reached their input.
	host.waitFor("the game's start", 40*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool {
			return e.str("type") == "message" && strings.HasPrefix(e.str("text"), "The game starts")
		})
	})
	_, haveConntrack := exec.LookPath("conntrack")
	for _, r := range []string{"b", "c", "d", "e"} {
		ns := n.prefix + "r" + r
		if haveConntrack == nil {
			out, _ := exec.Command("ip", "netns", "exec", ns, "conntrack", "-L", "-p", "udp").CombinedOutput()
			t.Logf("router %s conntrack:\n%s", r, out)
		}
		if r == "b" || r == "c" {
			out, _ := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", "count").CombinedOutput()
			t.Logf("router %s unsolicited inbound:\n%s", r, out)
		}
	}

	for _, p := range all {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	for _, p := range all {
		for _, m := range p.of("message") {
			if s := m.str("text"); strings.Contains(s, "↔") {
				t.Logf("%s: %s", p.name, s)
			}
		}
	}
	// Each player's own links, and the path its link lines say.
	path := map[string]string{}
	for _, p := range all {
		for _, e := range p.of("link") {
			if e.str("from") == p.name {
				path[p.name+"→"+e.str("to")] = e.str("path")
			}
		}
	}
	for _, p := range all {
		got := measuredLinks(p, p.name)
		for _, q := range all {
			if q == p {
				continue
			}
			if !got[q.name] {
				t.Errorf("%s's link to %s never measured", p.name, q.name)
			}
			if k := p.name + "→" + q.name; path[k] != "direct" {
				t.Errorf("%s path %q, want direct", k, path[k])
			}
		}
	}
	sum := host.of("summary")
	if len(sum) != 1 {
		t.Fatalf("host printed %d summaries", len(sum))
	}
	if rel, ok := sum[0]["relay"].([]any); ok && len(rel) > 0 {
		t.Errorf("host relayed %v, want no pair relayed", rel)
	}
}
