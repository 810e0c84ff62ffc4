package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// A queue past every home, on a router two homes' paths share: nothing at
// any home is slow. Homes 1 and 2 reach the core through one ISP router,
// s, whose link up to the core holds a tbf queue kept full by a bounded
// flood from a machine on home 1's ISP side; home 3 has a path of its
// own. Every player traces its link to the host (ada). Their traces show
// the delay starting at the core, the same address for both homes: the
// diagnosis reports it as the shared hop, names no player, and the
// verdict says nobody can fix it at home.
//
//	p1 — r1 ─┐
//	         s [tbf toward the core] — core — h (ada)
//	p2 — r2 ─┘                          │
//	p3 — r3 ————————————————————————————┘
//
// Addresses: home k's LAN 10.k.0.0/24 (router .1, player .2); r1 and r2
// meet s on 172.30.k.0/24 (s .1, router .2); s meets the core on
// 172.30.9.0/24 (core .1, s .2); r3 meets the core on 172.30.3.0/24
// (core .1, r3 .2); the host as in the path test.
func TestNetnsSharedHop(t *testing.T) {
	n := newNetns(t, "ss", false, "ip", "nft", "tc", "setpriv")
	a4 := func(a, b, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b, c, d}) }
	core := n.ns("core")
	n.sysctl(core, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
	hostNS := n.ns("h")
	n.veth(core, "host", pathCoreAddr, hostNS, "wan", pathHostAddr)
	n.run("ip", "-n", hostNS, "route", "add", "default", "via", pathCoreAddr.String())
	s := n.ns("s")
	n.sysctl(s, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
	n.veth(core, "s", a4(172, 30, 9, 1), s, "north", a4(172, 30, 9, 2))
	n.run("ip", "-n", s, "route", "add", "default", "via", "172.30.9.1")
	home := func(k byte, up string, upIf string, upAddr netip.Addr) string {
		r, p := n.ns(fmt.Sprintf("r%d", k)), n.ns(fmt.Sprintf("p%d", k))
		n.veth(up, upIf, upAddr, r, "wan", a4(172, 30, k, 2))
		n.run("ip", "-n", r, "route", "add", "default", "via", upAddr.String())
		n.veth(r, "lan", a4(10, k, 0, 1), p, "eth0", a4(10, k, 0, 2))
		n.run("ip", "-n", p, "route", "add", "default", "via", fmt.Sprintf("10.%d.0.1", k))
		n.sysctl(r, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
		n.nft(r, "nat", `table ip nat {
	chain post { type nat hook postrouting priority 100; oifname "wan" masquerade; }
}
table ip filter {
	chain inbound { type filter hook input priority 0; iifname "wan" ct state new drop; }
	chain forwarded { type filter hook forward priority 0; iifname "wan" ct state new drop; }
}
`)
		return p
	}
	p1 := home(1, s, "h1", a4(172, 30, 1, 1))
	p2 := home(2, s, "h2", a4(172, 30, 2, 1))
	p3 := home(3, core, "h3", a4(172, 30, 3, 1))
	for _, k := range []int{1, 2} {
		n.run("ip", "-n", core, "route", "add", fmt.Sprintf("172.30.%d.0/24", k), "via", "172.30.9.2")
	}
	// The filler: a machine on s's side of home 1's link, flooding the host
	// through s's queue up to the core (2 Mbit/s, 50 kB: 200 ms when full).
	fillNS := n.ns("f")
	n.veth(s, "f", a4(172, 30, 8, 1), fillNS, "eth0", a4(172, 30, 8, 2))
	n.run("ip", "-n", fillNS, "route", "add", "default", "via", "172.30.8.1")
	n.run("ip", "-n", core, "route", "add", "172.30.8.0/24", "via", "172.30.9.2")
	n.run("tc", "-n", s, "qdisc", "add", "dev", "north", "root", "tbf", "rate", "2mbit", "burst", "4kb", "limit", "50000")

	// Every home reaches the host before anything runs.
	for _, ns := range []string{p1, p2, p3} {
		if out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "2", pathHostAddr.String()).CombinedOutput(); err != nil {
			t.Fatalf("%s cannot reach the host: %v\n%s", ns, err, out)
		}
	}
	bin, cfg := buildLagscopeShared(t)
	const run = 90 * time.Second
	fill := netip.AddrPortFrom(pathHostAddr, 9999)
	sink(t, hostNS, fill)
	stop := flood(t, fillNS, a4(172, 30, 8, 2), fill, run+30*time.Second)
	defer stop()
	time.Sleep(time.Second)

	in := func(ns, name string, args ...string) *proc {
		return startUnpriv(t, ns, bin, cfg, name, args...)
	}
	dur := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
	at := netip.AddrPortFrom(pathHostAddr, pathHostPort).String()
	host := in(hostNS, "ada", "host", "--open", "--name", "ada", "--listen", at, "--players", "4", "--json", "--duration", dur(run+5*time.Second))
	hostAddr(t, host)
	var players []*proc
	for i, ns := range []string{p1, p2, p3} {
		name := fmt.Sprintf("p%d", i+1)
		players = append(players, in(ns, name, "join", at, "--name", name, "--json", "--duration", dur(run), "--trace", "ada"))
	}
	for _, p := range append(players, host) {
		if code := p.exit(run + time.Minute); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	if !slices.ContainsFunc(host.of("message"), func(m ndjson) bool { return strings.HasPrefix(m.str("text"), "The game starts") }) {
		t.Fatalf("the game never started: %v\n%v", host.of("message"), players[0].of("message"))
	}
	d := lastDiagnosis(t, host, 4)
	verdict, _ := d["verdict"].(string)
	t.Logf("the host's verdict: %s (culprit %v, culprit_link %v)", verdict, d["culprit"], d["culprit_link"])
	for _, p := range d["players"].([]any) {
		pm := p.(map[string]any)
		t.Logf("%v: access %v ms, where %v", pm["player"], pm["access_rtt_ms"], pm["where"])
	}
	h, _ := d["shared_hop"].(map[string]any)
	if h == nil {
		t.Fatalf("no shared hop in the host's diagnosis: %v", d)
	}
	var sharers []string
	for _, x := range h["players"].([]any) {
		sharers = append(sharers, x.(string))
	}
	slices.Sort(sharers)
	t.Logf("shared hop %v on the paths of %v, adds %v ms", h["addr"], sharers, h["added_ms"])
	if h["addr"] != "172.30.9.1" || !slices.Equal(sharers, []string{"p1", "p2"}) {
		t.Errorf("shared hop %v on %v, want the core (172.30.9.1) on p1's and p2's paths", h["addr"], sharers)
	}
	if added, _ := h["added_ms"].(float64); added < 150 || added > 250 {
		t.Errorf("the shared hop adds %v ms, want about the queue's 200", h["added_ms"])
	}
	if d["culprit"] != nil {
		t.Errorf("culprit %v, want none: the queue is at no player's home", d["culprit"])
	}
	if !strings.Contains(verdict, "The delay starts past the players' ISPs, at 172.30.9.1, which") ||
		!strings.Contains(verdict, "nothing any player can change at home.") {
		t.Errorf("the verdict lacks the shared hop's advice: %s", verdict)
	}
	for _, name := range []string{"ada", "p3"} {
		if strings.Contains(verdict, name+"'s delay") {
			t.Errorf("advice for %s, whose home is not slow: %s", name, verdict)
		}
	}
}

// lastDiagnosis is the last diagnosis p printed while at least players
// were in the game: the summary's once they have left is about p alone.
func lastDiagnosis(t *testing.T, p *proc, players int) map[string]any {
	t.Helper()
	var last map[string]any
	for _, e := range p.of("diagnosis") {
		if ps, _ := e["players"].([]any); len(ps) >= players {
			last = e
		}
	}
	if last == nil {
		t.Fatalf("%s printed no diagnosis with %d players", p.name, players)
	}
	return last
}
