package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// The hop tracer on real network stacks, as players meet it: every home a
// player namespace behind a home router (nftables masquerade), then the
// ISP's routers, then the core with the host on it. lagscope runs
// unprivileged (nobody, no capabilities) in each; every link is traced at
// the baseline's pace, and some are looked at closely (--trace, as the
// Path view does). Nothing of ours is on the path; the impairments are the
// kernel's:
//
//	home 1  p1 [tbf] — r1 — i11 ——————————————————— core — h (ada)
//	home 2  p2, f2 — r2 [tbf wan] — i21 ——————————— core
//	home 3  p3 — r3 — i31 (drops 5 %) — i32 ———————— core
//	home 4  p4, p4b — r4 — i41 (default rate limit) — i42 — core
//	home 5  p5 — r5 — i51 (silent) ————————————————— core
//
// Home 1's queue is on the player's own interface and home 2's on its
// router's WAN egress, both tbf at 2 Mbit/s holding 50 kB: 200 ms when a
// flood fills them, which happens only in the middle of a run, after a
// clean first part. The lossy router drops 5 % of what it forwards, both
// ways, counted. The rate-limited router keeps Linux's default ICMP rate
// limit (one a second to each destination, a burst of six), and two
// tracers in home 4 share it: behind their router's NAT they are one
// destination. The silent router sends no Time Exceeded at all. Every
// other router answers every probe (icmp_ratelimit 0). Every router
// counts the probes that die there, by source (probeCounters).
//
// Addresses: home k's LAN is 10.k.0.0/24 (router .1, player .2, a second
// machine .3); link j of chain k, counted from the home router, is
// 172.(16+k).j.0/24 with the router nearer the core at .1 and the other at
// .2; the core meets the host on 198.51.100.0/24 (core .1, host .10).

// pathHome is one chain of the topology.
type pathHome struct {
	k    int
	isps []string // ISP router namespaces, the home side first
	r, p string   // home router and player namespaces
	// silent is the ISP router (1 the home side's first) that sends no
	// Time Exceeded, 0 for none.
	silent int
}

func (h pathHome) lanAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(h.k), 0, byte(i)})
}

// linkAddr is address .i of link j of the chain.
func (h pathHome) linkAddr(j, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{172, byte(16 + h.k), byte(j), byte(i)})
}

// wan is the home router's WAN address: the player's public address.
func (h pathHome) wan() netip.Addr { return h.linkAddr(0, 2) }

// answersAs is the address a probe that dies at address .i of link j sees
// answer: that address, or none for the silent router's (ISP router m is
// .1 of link m-1 and .2 of link m).
func (h pathHome) answersAs(j, i int) netip.Addr {
	if m := h.silent; m > 0 && (j == m-1 && i == 1 || j == m && i == 2) {
		return netip.Addr{}
	}
	return h.linkAddr(j, i)
}

var (
	pathHostAddr = netip.MustParseAddr("198.51.100.10")
	pathCoreAddr = netip.MustParseAddr("198.51.100.1")
)

const pathHostPort = 7373

// veth joins namespace a (interface an, address aAddr/24) to b (bn, bAddr/24).
func (n *netns) veth(a, an string, aAddr netip.Addr, b, bn string, bAddr netip.Addr) {
	n.run("ip", "-n", a, "link", "add", an, "type", "veth", "peer", "name", bn, "netns", b)
	for _, e := range []struct {
		ns, dev string
		at      netip.Addr
	}{{a, an, aAddr}, {b, bn, bAddr}} {
		if e.at.IsValid() {
			n.run("ip", "-n", e.ns, "addr", "add", e.at.String()+"/24", "dev", e.dev)
		}
		n.run("ip", "-n", e.ns, "link", "set", e.dev, "up")
	}
}

func (n *netns) sysctl(ns string, kv ...string) {
	for _, s := range kv {
		n.run("ip", "netns", "exec", ns, "sysctl", "-q", "-w", s)
	}
}

func (n *netns) nft(ns, name, rules string) {
	f := n.t.TempDir() + "/" + name + ".nft"
	if err := os.WriteFile(f, []byte(rules), 0o600); err != nil {
		n.t.Fatal(err)
	}
	n.run("ip", "netns", "exec", ns, "nft", "-f", f)
}

// home builds chain k with isps ISP routers between its home router and
// core; filler: a second machine, f<k>, on the home's LAN, the LAN then a
// bridge in the router.
func (n *netns) home(core string, k, isps int, filler bool) pathHome {
	h := pathHome{k: k, r: n.ns(fmt.Sprintf("r%d", k)), p: n.ns(fmt.Sprintf("p%d", k))}
	down := h.r
	for j := 0; j <= isps; j++ {
		up, upIf := core, fmt.Sprintf("k%d", k)
		if j < isps {
			up, upIf = n.ns(fmt.Sprintf("i%d%d", k, j+1)), "south"
			h.isps = append(h.isps, up)
			n.sysctl(up, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
		}
		downIf := "north"
		if j == 0 {
			downIf = "wan"
		}
		n.veth(up, upIf, h.linkAddr(j, 1), down, downIf, h.linkAddr(j, 2))
		n.run("ip", "-n", down, "route", "add", "default", "via", h.linkAddr(j, 1).String())
		n.run("ip", "-n", up, "route", "add", fmt.Sprintf("172.%d.0.0/16", 16+k), "via", h.linkAddr(j, 2).String())
		down = up
	}
	lan := []string{h.p}
	if filler {
		lan = append(lan, n.ns(fmt.Sprintf("f%d", k)))
		n.run("ip", "-n", h.r, "link", "add", "lan", "type", "bridge")
		n.run("ip", "-n", h.r, "addr", "add", h.lanAddr(1).String()+"/24", "dev", "lan")
		n.run("ip", "-n", h.r, "link", "set", "lan", "up")
		for i, m := range lan {
			port := fmt.Sprintf("lan%d", i)
			n.veth(h.r, port, netip.Addr{}, m, "eth0", h.lanAddr(2+i))
			n.run("ip", "-n", h.r, "link", "set", port, "master", "lan")
		}
	} else {
		n.veth(h.r, "lan", h.lanAddr(1), h.p, "eth0", h.lanAddr(2))
	}
	for _, m := range lan {
		n.run("ip", "-n", m, "route", "add", "default", "via", h.lanAddr(1).String())
	}
	n.sysctl(h.r, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
	n.nft(h.r, "nat", `table ip nat {
	chain post { type nat hook postrouting priority 100; oifname "wan" masquerade; }
}
table ip filter {
	chain inbound { type filter hook input priority 0; iifname "wan" ct state new drop; }
	chain forwarded { type filter hook forward priority 0; iifname "wan" ct state new drop; }
}
`)
	return h
}

// pathTopology builds the picture above and returns the core, the host
// and the five homes, every impairment in place but the floods.
func pathTopology(n *netns) (core, host string, homes [5]pathHome) {
	core = n.ns("core")
	n.sysctl(core, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
	host = n.ns("h")
	n.veth(core, "host", pathCoreAddr, host, "wan", pathHostAddr)
	n.run("ip", "-n", host, "route", "add", "default", "via", pathCoreAddr.String())
	for i, c := range []struct {
		isps   int
		filler bool
	}{{1, false}, {1, true}, {2, false}, {2, true}, {1, false}} {
		homes[i] = n.home(core, i+1, c.isps, c.filler)
	}
	// Home 1's queue: the player's own interface.
	n.run("ip", "netns", "exec", homes[0].p, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "2mbit", "burst", "4kb", "limit", "50000")
	// Home 2's: the home router's WAN egress.
	n.run("ip", "netns", "exec", homes[1].r, "tc", "qdisc", "add", "dev", "wan", "root", "tbf", "rate", "2mbit", "burst", "4kb", "limit", "50000")
	// The silent router: no Time Exceeded leaves it.
	homes[4].silent = 1
	n.nft(homes[4].isps[0], "silent", `table ip silent {
	chain out { type filter hook output priority 0; icmp type time-exceeded drop; }
}
`)
	// The lossy router: 5 % of what it forwards, both ways, counted.
	n.nft(homes[2].isps[0], "lossy", `table ip lossy {
	counter forwarded { }
	counter dropped { }
	chain forwarded { type filter hook forward priority 0; counter name forwarded; numgen random mod 100 < 5 counter name dropped drop; }
}
`)
	// The rate-limited router: Linux's default ICMP rate limit.
	n.sysctl(homes[3].isps[0], "net.ipv4.icmp_ratelimit=1000")
	return core, host, homes
}

// pathEvent is a `path` event as the test reads it.
type pathEvent struct {
	From, To    string
	TMs         float64 `json:"t_ms"`
	Available   bool
	Bursting    bool
	Hops        []pathEventHop
	LossPending *struct {
		Loss float64
		More int
	} `json:"loss_pending"`
	DelayStarts *struct {
		TTL     int
		Link    string
		AddedMS float64 `json:"added_ms"`
	} `json:"delay_starts"`
	LossStarts *struct {
		TTL  int
		Link string
		Loss float64
	} `json:"loss_starts"`
	Complete bool
}

// pathEvents are p's path events to peer, in order, each with the wall
// time it stands for.
func pathEvents(t *testing.T, p *runProc, to string) (es []pathEvent, at []time.Time) {
	t.Helper()
	for _, raw := range p.of("path") {
		if raw.str("to") != to {
			continue
		}
		b, _ := json.Marshal(raw)
		var e pathEvent
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
		at = append(at, p.start.Add(time.Duration(e.TMs*float64(time.Millisecond))))
	}
	return es, at
}

// pathEventHop is one hop of a path event.
type pathEventHop struct {
	TTL         int
	Addr        *string
	Link        string
	Sent        int
	Loss        float64
	LossCI      [2]float64 `json:"loss_ci"`
	RTTMS       *float64   `json:"rtt_ms"`
	BaseMS      *float64   `json:"base_ms"`
	RateLimited bool       `json:"rate_limited"`
}

// lastPath is p's last path event to peer.
func lastPath(t *testing.T, p *proc, to string) pathEvent {
	t.Helper()
	es := p.of("path")
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].str("to") != to {
			continue
		}
		b, _ := json.Marshal(es[i])
		var e pathEvent
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	t.Fatalf("%s printed no path event to %s (%d path events)", p.name, to, len(es))
	return pathEvent{}
}

// pathTrace is one traced path: who traces it (a home's index, -1 for the
// host) and to whom, the hop addresses it must find (invalid: the silent
// router), the tap on the tracer's interface, and every path the tracer
// may probe by its destination (the policy may add the diagnosis's
// culprit to the --trace link).
type pathTrace struct {
	p     *runProc
	self  int
	to    string
	want  []netip.Addr
	tap   *wireTap
	paths map[netip.Addr][]netip.Addr
	ev    pathEvent
}

func (tr *pathTrace) String() string { return tr.p.name + "→" + tr.to }

// hopsBetween is the path from machine a to machine b, each a home's index
// or -1 for the host: up a's chain to the core, down b's to its home
// router, then the peer, which is at its home router's WAN address.
func hopsBetween(homes []pathHome, a, b int) []netip.Addr {
	out := []netip.Addr{pathCoreAddr}
	if a >= 0 {
		h := homes[a]
		out = []netip.Addr{h.lanAddr(1)}
		for j := range len(h.isps) + 1 {
			out = append(out, h.answersAs(j, 1))
		}
	}
	if b < 0 {
		return append(out, pathHostAddr)
	}
	h := homes[b]
	for j := len(h.isps); j >= 0; j-- {
		out = append(out, h.answersAs(j, 2))
	}
	return append(out, h.wan())
}

// tracePaths is every path machine self may probe, by destination: the
// host's, every other home's, and in a home with a second machine on its
// LAN, that machine, one hop away.
func tracePaths(homes []pathHome, self int) map[netip.Addr][]netip.Addr {
	out := map[netip.Addr][]netip.Addr{}
	if self >= 0 {
		out[pathHostAddr] = hopsBetween(homes, self, -1)
		h := homes[self]
		out[h.lanAddr(2)] = []netip.Addr{h.lanAddr(2)}
		out[h.lanAddr(3)] = []netip.Addr{h.lanAddr(3)}
	}
	for b, h := range homes {
		if b != self {
			out[h.wan()] = hopsBetween(homes, self, b)
		}
	}
	return out
}

// checkHops: the hops in order, each at its address (none for the silent
// router), the path complete to the peer.
func checkHops(t *testing.T, tr *pathTrace) {
	t.Helper()
	e := tr.ev
	if !e.Available || !e.Complete || len(e.Hops) != len(tr.want) {
		t.Errorf("%v: available %v, complete %v, %d hops; want %d hops to the peer: %+v", tr, e.Available, e.Complete, len(e.Hops), len(tr.want), e)
		return
	}
	for i, h := range e.Hops {
		got := "null"
		if h.Addr != nil {
			got = *h.Addr
		}
		want := "null"
		if tr.want[i].IsValid() {
			want = tr.want[i].String()
		}
		if h.TTL != i+1 || got != want {
			t.Errorf("%v hop %d: ttl %d at %s, want ttl %d at %s", tr, i+1, h.TTL, got, i+1, want)
		}
	}
}

func logPath(t *testing.T, tr *pathTrace) {
	t.Helper()
	var b strings.Builder
	e := tr.ev
	for _, h := range e.Hops {
		a, rtt := "null", "—"
		if h.Addr != nil {
			a = *h.Addr
		}
		if h.RTTMS != nil {
			rtt = fmt.Sprintf("%.1f ms", *h.RTTMS)
		}
		fmt.Fprintf(&b, "\n  %2d %-14s %-6s sent %3d loss %.4f median %s rate_limited %v", h.TTL, a, h.Link, h.Sent, h.Loss, rtt, h.RateLimited)
	}
	if d := e.DelayStarts; d != nil {
		fmt.Fprintf(&b, "\n  delay_starts ttl %d %s added %.1f ms", d.TTL, d.Link, d.AddedMS)
	}
	if l := e.LossStarts; l != nil {
		fmt.Fprintf(&b, "\n  loss_starts ttl %d %s loss %.4f", l.TTL, l.Link, l.Loss)
	}
	t.Logf("%v complete %v:%s", tr, e.Complete, b.String())
}

// queueDelay is what a bare UDP echo measures the queue to add: its
// median through the loaded queue less its median idle.
func queueDelay(idle, loaded []float64) float64 { return sortedMedian(loaded) - sortedMedian(idle) }

func sortedMedian(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// The loss the lossy router leaves past it: each probe and its answer
// cross it once, 1 − 0.95² (the run measures the truth: pathLossTruth).
const pathLossPast = 1 - 0.95*0.95

// pathLab is the built topology and the binary, shared by both runs.
type pathLab struct {
	n      *netns
	hostNS string
	homes  [5]pathHome
	bin    string
	cfg    string
}

// in starts lagscope in namespace ns as nobody, without capabilities.
func (l *pathLab) in(t *testing.T, ns, name string, args ...string) *runProc {
	at := time.Now()
	return &runProc{proc: startUnpriv(t, ns, l.bin, l.cfg, name, args...), start: at}
}

// runProc is a lagscope process and when it started: its t_ms count from
// there.
type runProc struct {
	*proc
	start time.Time
}

func TestNetnsPath(t *testing.T) {
	n := newNetns(t, "lp", false, "ip", "nft", "tc", "setpriv")
	lab := &pathLab{n: n}
	_, lab.hostNS, lab.homes = pathTopology(n)
	lab.bin, lab.cfg = buildLagscopeShared(t)
	t.Run("lan", func(t *testing.T) { pathRunLAN(t, lab) })
	t.Run("uplink", func(t *testing.T) { pathRunUplink(t, lab) })
}

// pathRunLAN: home 1's queue switches on at 90 s and drains at 150 s; the
// lossy, rate-limited and silent routers are there all along; every
// player traces its link to the host, p3, p4, p4b and p5 with --trace (a
// burst from the start), p1 and p2 without (the baseline's pace, until
// something happens), and the host looks closely at its link to p3.
func pathRunLAN(t *testing.T, lab *pathLab) {
	homes := lab.homes
	const (
		run      = 270 * time.Second
		switchOn = 90 * time.Second
		drain    = 150 * time.Second
	)
	echo1 := func(count int, gap time.Duration) []float64 {
		return bareEcho(t, homes[0].r, netip.AddrPortFrom(homes[0].lanAddr(1), 0), homes[0].p, homes[0].lanAddr(2), count, gap)
	}
	idle1 := echo1(20, 20*time.Millisecond)
	taps := make([]*wireTap, len(homes))
	for i, h := range homes {
		taps[i] = tapInterface(t, h.p, "eth0", pathHostPort)
	}
	hostTap := tapInterface(t, lab.hostNS, "wan", pathHostPort)
	counters := probeCounters(t, lab)

	dur := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
	at := netip.AddrPortFrom(pathHostAddr, pathHostPort).String()
	host := lab.in(t, lab.hostNS, "ada", "host", "--open", "--name", "ada", "--listen", at, "--players", "7", "--json",
		"--duration", dur(run+5*time.Second), "--trace", "p3")
	hostAddr(t, host.proc)
	start := time.Now()
	var traces []*pathTrace
	for i, h := range homes {
		name := fmt.Sprintf("p%d", h.k)
		args := []string{"join", at, "--name", name, "--json", "--duration", dur(run)}
		if i >= 2 {
			args = append(args, "--trace", "ada")
		}
		traces = append(traces, &pathTrace{p: lab.in(t, h.p, name, args...), self: i, to: "ada", tap: taps[i]})
	}
	second4 := lab.in(t, lab.n.prefix+"f4", "p4b", "join", at, "--name", "p4b", "--json", "--duration", dur(run), "--trace", "ada")
	back := &pathTrace{p: host, self: -1, to: "p3", tap: hostTap}
	traces = append(traces, back)
	for _, tr := range traces {
		tr.paths = tracePaths(homes[:], tr.self)
		tr.want = tr.paths[pathHostAddr]
	}
	back.want = back.paths[homes[2].wan()]

	// The clean first part, then home 1's queue.
	time.Sleep(time.Until(start.Add(switchOn)))
	fill := netip.AddrPortFrom(homes[0].lanAddr(1), 9999)
	sink(t, homes[0].r, fill)
	stop1 := flood(t, homes[0].p, homes[0].lanAddr(2), fill, drain-switchOn+10*time.Second)
	onAt := time.Now()
	time.Sleep(20 * time.Second)
	loaded1 := echo1(30, 50*time.Millisecond)
	time.Sleep(time.Until(start.Add(drain)))
	stop1()
	offAt := time.Now()
	for _, p := range []*runProc{host, traces[0].p, traces[1].p, traces[2].p, traces[3].p, traces[4].p, second4} {
		if code := p.exit(run); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	q1 := queueDelay(idle1, loaded1)
	t.Logf("bare echo across home 1's queue: idle median %.2f ms, loaded %.1f ms (%d echoes): the queue adds %.1f ms", sortedMedian(idle1), sortedMedian(loaded1), len(loaded1), q1)

	for _, tr := range traces {
		tr.ev = lastPath(t, tr.p.proc, tr.to)
		logPath(t, tr)
		checkHops(t, tr)
		drained := time.Time{}
		if tr == traces[0] {
			drained = offAt
		}
		probeCaps(t, tr, 50*time.Millisecond, drained)
	}
	hostPkts := hostTap.packets()
	for i, h := range homes {
		gameTTL(t, hostPkts, h, len(traces[i].want)-1)
	}
	checkSwitch(t, traces[0], 1, "lan", q1, onAt, offAt)
	checkIncidentWhere(t, host, "p1", "lan", 1)
	checkSilent(t, traces[4])
	checkSilentRounds(t, traces[4])
	truth := pathLossTruth(t, lab)
	checkLoss(t, traces[2], 3, "isp", truth)
	checkLoss(t, back, 4, "peer", truth)
	checkRateLimited(t, traces[3])
	checkRateLimited(t, &pathTrace{p: second4, self: 3, to: "ada", ev: lastPath(t, second4.proc, "ada")})
	checkProbeCounters(t, counters, lab)
}

// pathRunUplink: home 2's queue, on its router's WAN, switches on at 60 s
// and drains at 100 s; p2 traces at the baseline's pace.
func pathRunUplink(t *testing.T, lab *pathLab) {
	homes := lab.homes
	const (
		run      = 130 * time.Second
		switchOn = 60 * time.Second
		drain    = 100 * time.Second
	)
	echo2 := func(count int, gap time.Duration) []float64 {
		return bareEcho(t, homes[1].isps[0], netip.AddrPortFrom(homes[1].linkAddr(0, 1), 0), homes[1].p, homes[1].lanAddr(2), count, gap)
	}
	idle2 := echo2(20, 20*time.Millisecond)
	tap := tapInterface(t, homes[1].p, "eth0", pathHostPort)
	dur := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
	at := netip.AddrPortFrom(pathHostAddr, pathHostPort).String()
	host := lab.in(t, lab.hostNS, "ada", "host", "--open", "--name", "ada", "--listen", at, "--players", "2", "--json",
		"--duration", dur(run+5*time.Second))
	hostAddr(t, host.proc)
	start := time.Now()
	tr := &pathTrace{p: lab.in(t, homes[1].p, "p2", "join", at, "--name", "p2", "--json", "--duration", dur(run)), self: 1, to: "ada", tap: tap}
	tr.paths = tracePaths(homes[:], 1)
	tr.want = tr.paths[pathHostAddr]

	time.Sleep(time.Until(start.Add(switchOn)))
	fill2 := netip.AddrPortFrom(homes[1].linkAddr(0, 1), 9999)
	sink(t, homes[1].isps[0], fill2)
	stop2 := flood(t, lab.n.prefix+"f2", homes[1].lanAddr(3), fill2, drain-switchOn+10*time.Second)
	onAt := time.Now()
	time.Sleep(15 * time.Second)
	loaded2 := echo2(30, 50*time.Millisecond)
	time.Sleep(time.Until(start.Add(drain)))
	stop2()
	offAt := time.Now()
	for _, p := range []*runProc{host, tr.p} {
		if code := p.exit(run); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	q2 := queueDelay(idle2, loaded2)
	t.Logf("bare echo across home 2's queue: idle median %.2f ms, loaded %.1f ms (%d echoes): the queue adds %.1f ms", sortedMedian(idle2), sortedMedian(loaded2), len(loaded2), q2)
	tr.ev = lastPath(t, tr.p.proc, tr.to)
	logPath(t, tr)
	checkHops(t, tr)
	probeCaps(t, tr, 50*time.Millisecond, time.Time{})
	checkSwitch(t, tr, 2, "uplink", q2, onAt, offAt)
	checkIncidentWhere(t, host, "p2", "uplink", 2)
}
