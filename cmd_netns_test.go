package main

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// netnsEnv runs the network-namespace test; .ci/run sets it.
// Under it the test must run, and fails if it cannot make namespaces.
const netnsEnv = "LAGSCOPE_NETNS"

// netns is a little internet made of Linux network namespaces: an
// "internet" namespace with a bridge, machines on it with public
// addresses, and NAT routers (nftables masquerade) with a machine behind
// each. Every name carries a prefix of this process's ID, and every
// namespace goes when the test ends.
type netns struct {
	t      *testing.T
	prefix string
	made   []string
	seq    int
	// routed: the internet namespace routes between a subnet of its own
	// for each machine wired to it, instead of bridging them all on one,
	// so two routers on it are two hops apart, not one.
	routed bool
}

// newNetns starts a test on network namespaces: it runs only under
// LAGSCOPE_NETNS=1 and as root, fails when one of tools is missing then,
// and removes every namespace it made when the test ends. Names carry
// prefix and this process's ID.
func newNetns(t *testing.T, prefix string, routed bool, tools ...string) *netns {
	t.Helper()
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("network-namespace test: set " + netnsEnv + "=1 (needs root and " + strings.Join(tools, ", ") + ")")
	}
	if os.Geteuid() != 0 {
		t.Skip("network-namespace test: needs root to make namespaces")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s=1 but %s is missing: %v", netnsEnv, tool, err)
		}
	}
	n := &netns{t: t, prefix: fmt.Sprintf("%s%d", prefix, os.Getpid()%100000), routed: routed}
	t.Cleanup(func() {
		for _, ns := range n.made {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	return n
}

func (n *netns) run(args ...string) {
	n.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (n *netns) ns(name string) string {
	full := n.prefix + name
	n.run("ip", "netns", "add", full)
	n.made = append(n.made, full)
	n.run("ip", "-n", full, "link", "set", "lo", "up")
	return full
}

// wire joins ns to the internet's bridge at addr (its interface "wan");
// routed, to a subnet of its own, the internet at its first address and
// ns's default route.
func (n *netns) wire(inet, ns, addr string) {
	n.seq++
	a := fmt.Sprintf("%sv%d", n.prefix, n.seq)
	n.run("ip", "-n", inet, "link", "add", a, "type", "veth", "peer", "name", "wan", "netns", ns)
	n.run("ip", "-n", ns, "addr", "add", addr, "dev", "wan")
	n.run("ip", "-n", ns, "link", "set", "wan", "up")
	if !n.routed {
		n.run("ip", "-n", inet, "link", "set", a, "master", "br0", "up")
		return
	}
	p := netip.MustParsePrefix(addr)
	gw := p.Masked().Addr().Next()
	n.run("ip", "-n", inet, "addr", "add", fmt.Sprintf("%v/%d", gw, p.Bits()), "dev", a)
	n.run("ip", "-n", inet, "link", "set", a, "up")
	n.run("ip", "-n", ns, "route", "add", "default", "via", gw.String())
}

// behind makes a router on the internet at wan and a machine behind it
// at 10.k.0.2. random: the router maps every destination to its own port
// (masquerade fully-random), else one port per inside socket (Linux's
// default: endpoint-independent). Both filter what comes in to the flows
// their inside opened (conntrack), and drop anything else before
// conntrack keeps it, as home routers do.
func (n *netns) behind(inet, name, wan string, k int, random bool) string {
	return n.router(inet, name, wan, k, random, true)
}

// router is behind with the filter optional: without it the router only
// masquerades, and an unsolicited datagram from the internet reaches the
// router's own input, which answers it with ICMP port unreachable and
// keeps its conntrack entry; an nft counter counts those datagrams. The
// router's namespace is the prefix, "r" and name.
func (n *netns) router(inet, name, wan string, k int, random, filter bool) string {
	r := n.ns("r" + name)
	n.wire(inet, r, wan)
	m := n.ns(name)
	n.run("ip", "-n", r, "link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", m)
	n.run("ip", "-n", r, "addr", "add", fmt.Sprintf("10.%d.0.1/24", k), "dev", "lan")
	n.run("ip", "-n", r, "link", "set", "lan", "up")
	n.run("ip", "-n", m, "addr", "add", fmt.Sprintf("10.%d.0.2/24", k), "dev", "eth0")
	n.run("ip", "-n", m, "link", "set", "eth0", "up")
	n.run("ip", "-n", m, "route", "add", "default", "via", fmt.Sprintf("10.%d.0.1", k))
	n.run("ip", "netns", "exec", r, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	masq := "masquerade"
	if random {
		masq = "masquerade fully-random"
	}
	rules := `table ip nat {
	chain post { type nat hook postrouting priority 100; oifname "wan" ` + masq + `; }
}
table ip filter {
	chain inbound { type filter hook input priority 0; iifname "wan" ct state new drop; }
	chain forwarded { type filter hook forward priority 0; iifname "wan" ct state new drop; }
}
`
	if !filter {
		rules = `table ip nat {
	chain post { type nat hook postrouting priority 100; oifname "wan" ` + masq + `; }
}
table ip count {
	chain inbound { type filter hook input priority 0; iifname "wan" meta l4proto udp ct state new counter; }
}
`
	}
	f := n.t.TempDir() + "/" + name + ".nft"
	if err := os.WriteFile(f, []byte(rules), 0o600); err != nil {
		n.t.Fatal(err)
	}
	n.run("ip", "netns", "exec", r, "nft", "-f", f)
	return m
}

// The topology on real network stacks: the host on the internet;
// bob and cyd each behind an endpoint-independent NAT; dan behind one that
// maps per destination; eve through `lagscope impair --delay 50ms` in
// front of the host; and a watcher, mon, behind a fourth router, that
// attaches 20 s after the start. The game starts, every pair is connected,
// bob ↔ cyd directly, dan's pairs with the NATed machines relayed and
// marked so, every machine prints the same timing events on the same
// frames (mon from its attach on), eve's link to the host has an SRTT
// within 10 % of the base round trip + 100 ms, and mon's Matrix is
// complete within 5 s' worth of telemetry updates.
func TestNetnsNAT_T1_T3(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("network-namespace NAT test: set " + netnsEnv + "=1 (needs root, iproute2 and nftables)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s=1 but %s is missing: %v", netnsEnv, tool, err)
		}
	}
	n := &netns{t: t, prefix: fmt.Sprintf("ls%d", os.Getpid()%100000)}
	t.Cleanup(func() {
		for _, ns := range n.made {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	inet := n.ns("inet")
	n.run("ip", "-n", inet, "link", "add", "br0", "type", "bridge")
	n.run("ip", "-n", inet, "link", "set", "br0", "up")
	hostNS := n.ns("h")
	n.wire(inet, hostNS, "198.51.100.10/24")
	eveNS := n.ns("e")
	n.wire(inet, eveNS, "198.51.100.20/24")
	bobNS := n.behind(inet, "b", "198.51.100.11/24", 1, false)
	cydNS := n.behind(inet, "c", "198.51.100.12/24", 2, false)
	danNS := n.behind(inet, "d", "198.51.100.13/24", 3, true)
	monNS := n.behind(inet, "m", "198.51.100.14/24", 4, false)

	bin := buildLagscope(t)
	in := func(ns, name string, args ...string) *proc {
		return startProc(t, "ip", name, append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	host := in(hostNS, "ada", "host", "--open", "--name", "ada", "--listen", "198.51.100.10:7373", "--players", "5", "--json", "--duration", "50s")
	hostAddr(t, host)
	relay := in(hostNS, "impair", "impair", "--listen", "198.51.100.10:9400", "--to", "198.51.100.10:7373", "--delay", "50ms", "--duration", "90s")
	join := func(ns, name, to string) *proc {
		return in(ns, name, "join", to, "--name", name, "--json", "--duration", "45s")
	}
	bob := join(bobNS, "bob", "198.51.100.10:7373")
	cyd := join(cydNS, "cyd", "198.51.100.10:7373")
	dan := join(danNS, "dan", "198.51.100.10:7373")
	eve := join(eveNS, "eve", "198.51.100.10:9400")
	// The watcher comes 20 s into the game: 600 frames at 30 fps.
	host.waitFor("frame 600", 60*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "link" && e.frame() >= 600 })
	})
	mon := in(monNS, "mon", "watch", "198.51.100.10:7373", "--name", "mon", "--json", "--duration", "12s")
	all := []*proc{host, bob, cyd, dan, eve, mon}
	for _, p := range all {
		if code := p.exit(90 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	relay.cmd.Process.Signal(os.Interrupt)

	attached := -1
	for _, m := range mon.of("message") {
		if _, err := fmt.Sscanf(m.str("text"), "Watching a game in progress from frame %d", &attached); err == nil {
			break
		}
	}
	if attached < 600 {
		t.Fatalf("mon did not attach 20 s into the game (frame %d): %v", attached, mon.of("message"))
	}
	for _, p := range all {
		if p == mon {
			continue
		}
		if !slices.ContainsFunc(p.of("message"), func(m ndjson) bool { return strings.HasPrefix(m.str("text"), "The game starts") }) {
			t.Fatalf("%s: the game never started: %v", p.name, p.of("message"))
		}
		for _, m := range p.of("message") {
			if s := m.str("text"); strings.Contains(s, "↔") {
				t.Logf("%s: %s", p.name, s)
			}
		}
	}
	// Every pair connected: each player's own links measured to every
	// other machine; and each line says its path.
	path := map[string]string{}
	for _, p := range all {
		for _, e := range p.of("link") {
			if e.str("from") == p.name {
				path[p.name+"→"+e.str("to")] = e.str("path")
			}
		}
	}
	for _, p := range all {
		// A watcher sends nothing reliable since the keep-alives went
		// unnumbered, so its own links show no round trip: the players'
		// links to it are the ones measured.
		if p == mon {
			continue
		}
		got := measuredLinks(p, p.name)
		for _, q := range all {
			if q != p && !got[q.name] {
				t.Errorf("%s's link to %s never measured", p.name, q.name)
			}
		}
	}
	for k, want := range map[string]string{
		"bob→cyd": "direct", "cyd→bob": "direct", "bob→dan": "relayed", "dan→bob": "relayed",
		"cyd→dan": "relayed", "dan→cyd": "relayed", "bob→ada": "direct", "dan→ada": "direct",
		"eve→ada": "direct", "eve→bob": "direct", "mon→bob": "direct", "mon→dan": "relayed",
	} {
		if path[k] != want {
			t.Errorf("%s path %q, want %q", k, path[k], want)
		}
	}
	sum := host.of("summary")
	if len(sum) != 1 {
		t.Fatalf("host printed %d summaries", len(sum))
	}
	relayed := map[string]bool{}
	if rel, ok := sum[0]["relay"].([]any); ok {
		for _, r := range rel {
			b := r.(map[string]any)["between"].([]any)
			// Pairs are in house order, which is join order: the
			// processes start together, so either may come first.
			x, y := b[0].(string), b[1].(string)
			relayed[min(x, y)+"↔"+max(x, y)] = true
			t.Logf("host relayed %v", r)
		}
	}
	for _, want := range []string{"bob↔dan", "cyd↔dan"} {
		if !relayed[want] {
			t.Errorf("host's summary relay %v lacks %s", sum[0]["relay"], want)
		}
	}
	if relayed["bob↔cyd"] {
		t.Error("bob ↔ cyd relayed")
	}
	// Identical timing events on identical frames everywhere.
	players := []*proc{host, bob, cyd, dan, eve}
	keys := make([][]string, len(players))
	nk := math.MaxInt
	for i, p := range players {
		keys[i] = timingKeys(p)
		nk = min(nk, len(keys[i]))
	}
	if nk == 0 {
		t.Fatalf("a machine printed no timing event: %v", keys)
	}
	for i, k := range keys {
		if !slices.Equal(k[:nk], keys[0][:nk]) {
			t.Errorf("%s's timing events differ from ada's:\n%v\n%v", players[i].name, k, keys[0])
		}
	}
	// mon's from its attach on, and the timing in force it attached with.
	if m, h := timingFrom(mon, attached), timingFrom(host, attached); !slices.Equal(m, h[:min(len(h), len(m))]) {
		t.Errorf("mon's timing events after its attach differ from ada's:\n%v\n%v", m, h)
	}
	msum := mon.of("summary")
	if len(msum) != 1 {
		t.Fatalf("mon printed %d summaries", len(msum))
	}
	w, ok := msum[0]["watch"].(map[string]any)
	if !ok {
		t.Fatalf("mon's summary has no watch: %v", msum[0])
	}
	inForce := fmt.Sprintf("%v/%v %vfps", w["send_period"], w["look_ahead"], w["fps"])
	if want := inForceBefore(host, int(w["frame"].(float64))); inForce != want {
		t.Errorf("mon attached with %s in force, ada had %s", inForce, want)
	}
	// Complete by telemetry received: each player sends at most ten
	// updates a second, so 5 s' worth is 50 a player.
	upd, ok := w["matrix_complete_after"].(float64)
	if !ok || upd > 50*float64(len(players)) {
		t.Errorf("mon's matrix complete after %v telemetry updates (of %v), want within 5 s' worth", w["matrix_complete_after"], w["telemetry_updates"])
	}
	t.Logf("mon attached at frame %v (%s), matrix complete after %v of %v telemetry updates", w["frame"], inForce, w["matrix_complete_after"], w["telemetry_updates"])
	mseen := map[string]bool{}
	for _, e := range mon.of("link") {
		mseen[e.str("from")+"→"+e.str("to")] = true
	}
	for _, p := range players {
		for _, q := range players {
			if p != q && !mseen[p.name+"→"+q.name] {
				t.Errorf("mon printed no link line %s→%s", p.name, q.name)
			}
		}
	}
	// eve's link to the host runs through impair's 50 ms each way.
	srtt := func(p *proc, to string) float64 {
		s := p.of("summary")
		if len(s) != 1 {
			t.Fatalf("%s: %d summaries", p.name, len(s))
		}
		for _, l := range s[0]["links"].([]any) {
			ln := ndjson(l.(map[string]any))
			if ln.str("to") == to {
				return ln.num("srtt_ms")
			}
		}
		t.Fatalf("%s has no link to %s", p.name, to)
		return 0
	}
	base := srtt(bob, "ada")
	got := srtt(eve, "ada")
	want := base + 100
	t.Logf("SRTT bob→ada %.2f ms (base), eve→ada %.2f ms (want %.2f ± 10 %%), dan→bob %.2f ms (relayed), bob→cyd %.2f ms (direct)",
		base, got, want, srtt(dan, "bob"), srtt(bob, "cyd"))
	if math.Abs(got-want) > 0.1*want {
		t.Errorf("eve → ada SRTT %.2f ms, want %.2f ± 10 %%", got, want)
	}
}
