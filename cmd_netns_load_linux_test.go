package main

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// The load test (docs/load-test.md) on real network stacks: the host on an
// internet that routes between its subnets, two homes each behind a
// masquerading, filtering router whose WAN egress is a tbf queue, and a
// third player on a public address of its own. Every lagscope runs
// unprivileged (nobody, no capabilities), --open, --json, for a bounded
// --duration. Nothing of ours is on the path: the queues are the kernel's.
//
//	home 1  p1 — rp1 [tbf 10mbit, 500 ms deep] ─┐
//	home 2  p2 — rp2 [tbf 10mbit, 10 ms deep] ──┼─ inet — h (ada)
//	        p3 ──────────────────────────────────┘
//
// Home k's LAN is 10.k.0.0/24 (router .1, player .2), its router's WAN
// 198.18.k.2/24 with the internet at .1; p3 is 198.18.3.2, the host
// 198.51.100.10. The internet is hop 2 of a home's path (uplink), so a
// queue at the router's WAN egress is where a trace from the home sees
// the delay start.
//
// First, the reference: a bare UDP echo from p1 to the host's namespace,
// idle and then through home 1's queue loaded as a load test's hold loads
// it (110 % of its 10 Mbit/s from p1, after a fill). Then the first run:
// ada, p1 and p2, both players with --load-test ada; they ask at once, so
// one waits its turn. The second: p1 with --load-cap 5mbit against ada,
// and p2 against p3, which runs with --no-load-tests. nft counters on the
// routers' forwarding path count the load (every datagram of 1200 bytes
// or more: the load's are 1400 on the path, the game's far smaller),
// read every 200 ms, so the test sees when each test's load flowed and how
// much of it.
//
// The first run: both tests complete and do not overlap; p1's upload is
// graded D or F, adding what the bare echo measured within 25 %, p2's A or
// A+, both downloads A+; p1's where is its uplink, and p1's diagnoses
// afterwards name its bufferbloat; the pairs are direct; no frame waits
// 2 s during a test, and the game's pace after the tests is within 10 %
// of its pace before them. A watcher, mon, follows it from p3's namespace:
// every machine — the tested host, the other player, the watcher — prints
// each test's load_start and the tester's load line, and each test's cost
// is every seated machine's waits as their stall lines show them. The
// second: p1's upload keeps to its cap on the wire, and p3's refusal stops
// p2's test before any load is sent. No machine's frame loop is ever a
// second late (max_late_ms).
func TestNetnsLoadTest(t *testing.T) {
	lab := newLoadLab(t)
	q := lab.bareQueue(t)

	first := lab.firstRun(t)
	checkFirstRun(t, first, q)

	second := lab.secondRun(t)
	checkSecondRun(t, second)
}

// loadLab is the topology above and the binary every run starts.
type loadLab struct {
	n        *netns
	host, p3 string
	homes    [2]loadHome
	bin, cfg string
}

// loadHome is one home: its router's namespace and its player's.
type loadHome struct {
	k    int
	r, p string
}

func (h loadHome) name() string       { return fmt.Sprintf("p%d", h.k) }
func (h loadHome) player() netip.Addr { return netip.AddrFrom4([4]byte{10, byte(h.k), 0, 2}) }

var (
	loadHostAddr = netip.MustParseAddr("198.51.100.10")
	loadP3Addr   = netip.MustParseAddr("198.18.3.2")
)

// The load counters' rules: on each home router, what its player sends
// out (up) and what reaches it (down), of 1200 bytes or more; on p3,
// what arrives.
const (
	routerCounters = `table ip load {
	counter up {}
	counter down {}
	chain counted {
		type filter hook forward priority -10;
		iifname "lan" ip length >= 1200 counter name "up"
		oifname "lan" ip length >= 1200 counter name "down"
	}
}
`
	p3Counters = `table ip load {
	counter in {}
	chain counted {
		type filter hook input priority -10;
		ip length >= 1200 counter name "in"
	}
}
`
)

func newLoadLab(t *testing.T) *loadLab {
	n := newNetns(t, "ll", true, "ip", "nft", "tc", "setpriv")
	lab := &loadLab{n: n}
	inet := n.ns("inet")
	n.sysctl(inet, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0")
	lab.host = n.ns("h")
	n.wire(inet, lab.host, loadHostAddr.String()+"/24")
	for i := range lab.homes {
		k := i + 1
		h := loadHome{k: k}
		h.p = n.behind(inet, h.name(), fmt.Sprintf("198.18.%d.2/24", k), k, false)
		h.r = n.prefix + "r" + h.name()
		// The home router answers every probe of a trace at once.
		n.sysctl(h.r, "net.ipv4.icmp_ratelimit=0")
		n.nft(h.r, "load", routerCounters)
		lab.homes[i] = h
	}
	lab.p3 = n.ns("p3")
	n.wire(inet, lab.p3, loadP3Addr.String()+"/24")
	n.nft(lab.p3, "load", p3Counters)
	// Home 1's queue is deep: 500 ms of 10 Mbit/s (tbf's limit is the
	// rate times the latency, plus the burst: some 640 kB). Home 2's is
	// shallow: 10 ms.
	n.run("tc", "-n", lab.homes[0].r, "qdisc", "add", "dev", "wan", "root", "tbf", "rate", "10mbit", "burst", "16kb", "latency", "500ms")
	n.run("tc", "-n", lab.homes[1].r, "qdisc", "add", "dev", "wan", "root", "tbf", "rate", "10mbit", "burst", "4kb", "latency", "10ms")
	lab.bin, lab.cfg = buildLagscopeShared(t)
	return lab
}

// start runs lagscope in ns as nobody, without capabilities.
func (lab *loadLab) start(t *testing.T, ns, name string, args ...string) *proc {
	t.Helper()
	return startUnpriv(t, ns, lab.bin, lab.cfg, name, args...)
}

// bareQueue is what home 1's queue adds, loaded as a load test's upload
// hold loads it, by a bare UDP echo through it: 32-byte probes every
// 10 ms from p1 to an echo in the host's namespace, idle for 2 s, then
// under a paced flood from p1 to a sink beside the echo: 1 s at 20 Mbit/s
// fills the queue (as the ramp's overshoot does), then 110 % of the
// queue's 10 Mbit/s keeps it full; after 3 s of that, 4 s of probes (a
// hold's graded part). The median loaded less the median idle.
func (lab *loadLab) bareQueue(t *testing.T) float64 {
	h := lab.homes[0]
	echo := startEchoServer(t, lab.host, netip.AddrPortFrom(loadHostAddr, 0))
	idle := queuedEcho(t, h.p, h.player(), echo, 10*time.Millisecond, 2*time.Second)
	fill := netip.AddrPortFrom(loadHostAddr, 9999)
	sink(t, lab.host, fill)
	stop := paceFlood(t, h.p, h.player(), fill, []paceStep{{20e6, time.Second}, {11e6, 9 * time.Second}})
	time.Sleep(4 * time.Second)
	loaded := queuedEcho(t, h.p, h.player(), echo, 10*time.Millisecond, 4*time.Second)
	stop()
	time.Sleep(2 * time.Second) // the queue drains before the runs
	q := queueDelay(idle, loaded)
	t.Logf("bare echo through home 1's queue: idle median %.2f ms (%d echoes), loaded %.1f ms (%d echoes, p90 %.1f): the queue adds %.1f ms",
		sortedMedian(idle), len(idle), sortedMedian(loaded), len(loaded), loaded[len(loaded)*9/10], q)
	if q < 100 {
		t.Fatalf("the bare echo measures home 1's loaded queue at %.1f ms: the flood did not fill it", q)
	}
	return q
}

// loadRun is one run: its processes, the counters and line arrivals the
// sampler saw, and each process's clock.
type loadRun struct {
	host, p1, p2, p3 *proc
	mon              *proc // a watcher
	smp              *sampler
}

func (r *loadRun) procs() []*proc {
	var out []*proc
	for _, p := range []*proc{r.host, r.p1, r.p2, r.p3, r.mon} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// finish waits for every process of the run to exit 0 and stops the
// sampler.
func (r *loadRun) finish(t *testing.T, limit time.Duration) {
	t.Helper()
	for _, p := range r.procs() {
		if code := p.exit(limit); code != 0 {
			t.Fatalf("%s exited %d: %s\n%v", p.name, code, p.stderr.String(), p.of("message"))
		}
	}
	r.smp.close()
	for _, p := range r.procs() {
		if !slices.ContainsFunc(p.of("message"), func(m ndjson) bool { return strings.HasPrefix(m.str("text"), "The game starts") }) {
			t.Fatalf("%s: the game never started: %v", p.name, p.of("message"))
		}
	}
}

const loadListen = "198.51.100.10:7373"

// firstRun: ada hosts, p1 and p2 each test against it from the start.
// 110 s leaves room for two tests of up to 30 s each after the first 15 s,
// the second's wait for its turn, and the 20 s after the second that the
// frame check reads.
func (lab *loadLab) firstRun(t *testing.T) *loadRun {
	smp := newSampler(t, []string{lab.homes[0].r, lab.homes[1].r})
	r := &loadRun{smp: smp}
	r.host = lab.start(t, lab.host, "ada", "host", "--open", "--name", "ada", "--listen", loadListen, "--players", "3",
		"--json", "--duration", "115s")
	hostAddr(t, r.host)
	r.p1 = lab.start(t, lab.homes[0].p, "p1", "join", loadListen, "--name", "p1", "--json", "--duration", "110s", "--load-test", "ada")
	r.p2 = lab.start(t, lab.homes[1].p, "p2", "join", loadListen, "--name", "p2", "--json", "--duration", "110s", "--load-test", "ada")
	r.mon = lab.start(t, lab.p3, "mon", "watch", loadListen, "--name", "mon", "--json", "--duration", "110s")
	smp.watch(r.procs()...)
	r.finish(t, 3*time.Minute)
	return r
}

// secondRun: p1 tests ada with a 5 Mbit/s cap, half its line's rate; p2
// asks p3, which refuses every test.
func (lab *loadLab) secondRun(t *testing.T) *loadRun {
	smp := newSampler(t, []string{lab.homes[0].r, lab.homes[1].r, lab.p3})
	r := &loadRun{smp: smp}
	r.host = lab.start(t, lab.host, "ada", "host", "--open", "--name", "ada", "--listen", loadListen, "--players", "4",
		"--json", "--duration", "65s")
	hostAddr(t, r.host)
	r.p1 = lab.start(t, lab.homes[0].p, "p1", "join", loadListen, "--name", "p1", "--json", "--duration", "60s",
		"--load-test", "ada", "--load-cap", "5mbit")
	r.p2 = lab.start(t, lab.homes[1].p, "p2", "join", loadListen, "--name", "p2", "--json", "--duration", "60s", "--load-test", "p3")
	r.p3 = lab.start(t, lab.p3, "p3", "join", loadListen, "--name", "p3", "--json", "--duration", "60s", "--no-load-tests")
	smp.watch(r.procs()...)
	r.finish(t, 2*time.Minute)
	return r
}
