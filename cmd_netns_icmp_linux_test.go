package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/trace"
)

// Forged ICMP at a player's game socket, on real network stacks: an
// off-path attacker who knows the player's and the host's addresses and
// ports sends 100 000 forged ICMP errors a second for 10 s at the player,
// quoting the player's datagrams to the host — Time Exceeded and
// Destination Unreachable of several codes, from addresses on no path,
// from the path's routers and from the host, quoting only the headers or
// a guessed probe record — from a raw socket on a router of the path.
// The same session runs once without the flood and once with it: every
// machine's frames and waits stay within 5 % of the quiet run's, and the
// player's trace of its link to the host never shows a hop that no
// router on the path answered.
//
//	p1 10.1.0.2 — r1 — i1 [forger] — core — h (ada) 198.51.100.10
//	p2 10.2.0.2 — r2 ————————————————— core
//
// Addresses: r1 10.1.0.1 | 172.31.1.2; i1 172.31.1.1 | 172.31.0.2;
// core 172.31.0.1 | 172.31.2.1 | 198.51.100.1; r2 172.31.2.2 | 10.2.0.1.
// The routers answer every probe (icmp_ratelimit 0) and quote whole
// datagrams, as Linux does.

var (
	icmpP1   = netip.MustParseAddr("10.1.0.2")
	icmpHops = []netip.Addr{ // p1's path to the host, by hop limit
		netip.MustParseAddr("10.1.0.1"),
		netip.MustParseAddr("172.31.1.1"),
		netip.MustParseAddr("172.31.0.1"),
		pathHostAddr,
	}
)

// icmpTopology builds the picture above; it returns the namespaces of the
// host, p1, p2 and the router the forger runs on.
func icmpTopology(n *netns) (host, p1, p2, forger string) {
	a := netip.MustParseAddr
	core, i1, r1, r2 := n.ns("core"), n.ns("i1"), n.ns("r1"), n.ns("r2")
	host, p1, p2 = n.ns("h"), n.ns("p1"), n.ns("p2")
	for _, r := range []string{core, i1, r1, r2} {
		n.sysctl(r, "net.ipv4.ip_forward=1", "net.ipv4.icmp_ratelimit=0",
			"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")
	}
	n.sysctl(host, "net.ipv4.icmp_ratelimit=0")
	n.veth(core, "host", pathCoreAddr, host, "wan", pathHostAddr)
	n.veth(core, "isp", a("172.31.0.1"), i1, "north", a("172.31.0.2"))
	n.veth(i1, "south", a("172.31.1.1"), r1, "wan", a("172.31.1.2"))
	n.veth(r1, "lan", a("10.1.0.1"), p1, "eth0", icmpP1)
	n.veth(core, "home2", a("172.31.2.1"), r2, "wan", a("172.31.2.2"))
	n.veth(r2, "lan", a("10.2.0.1"), p2, "eth0", a("10.2.0.2"))
	for _, r := range [][]string{
		{host, "default", "198.51.100.1"},
		{core, "10.1.0.0/24", "172.31.0.2"}, {core, "172.31.1.0/24", "172.31.0.2"}, {core, "10.2.0.0/24", "172.31.2.2"},
		{i1, "default", "172.31.0.1"}, {i1, "10.1.0.0/24", "172.31.1.2"},
		{r1, "default", "172.31.1.1"}, {p1, "default", "10.1.0.1"},
		{r2, "default", "172.31.2.1"}, {p2, "default", "10.2.0.1"},
	} {
		n.run("ip", "-n", r[0], "route", "add", r[1], "via", r[2])
	}
	return host, p1, p2, i1
}

// icmpRun is what one session printed, and the kernel's counters in p1's
// namespace across it.
type icmpRun struct {
	frames, waitMS map[string]float64 // by machine, its own line of its summary
	lost           map[string]float64 // by machine (ada, p2): the share of p1's datagrams missing there
	lostAtP1       float64            // the share of the others' datagrams missing at p1
	paths          []pathEvent        // p1's path events to the host
	icmpIn         uint64             // ICMP messages p1's stack took in (Icmp InMsgs)
	rcvbufErrors   uint64             // datagrams p1's stack dropped for a full socket buffer (Udp RcvbufErrors)
	forged         int                // ICMP errors the forger sent
	flood          time.Duration      // how long it sent them
}

// The session's game: 16 s from its start, the forger's 10 s from 3 s in
// when the run is flooded.
const (
	icmpFloodFrom = 3 * time.Second
	icmpFlood     = 10 * time.Second
	icmpGame      = 16 * time.Second
)

// icmpSession runs one session: the host and two players, p1 tracing its
// link to the host; every machine is told to leave icmpGame after the game
// started, so that two runs are the same length of game.
func icmpSession(t *testing.T, bin string, host, p1, p2, forger string, flood bool) icmpRun {
	t.Helper()
	in := func(ns, name string, args ...string) *proc {
		return startProc(t, "ip", name, append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	at := netip.AddrPortFrom(pathHostAddr, pathHostPort).String()
	ada := in(host, "ada", "host", "--open", "--name", "ada", "--listen", at, "--players", "3", "--json", "--duration", "60s")
	hostAddr(t, ada)
	one := in(p1, "p1", "join", at, "--name", "p1", "--json", "--duration", "60s", "--trace", "ada")
	two := in(p2, "p2", "join", at, "--name", "p2", "--json", "--duration", "60s")
	procs := []*proc{ada, one, two}
	ada.waitFor("the game's start", 20*time.Second, func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(m ndjson) bool { return m.frame() > 0 })
	})
	began := time.Now()
	snmp0 := snmpIn(t, p1)
	var r icmpRun
	time.Sleep(icmpFloodFrom)
	if flood {
		r.forged, r.flood = forgeICMP(t, forger, netip.AddrPortFrom(icmpP1, udpPortIn(t, p1)), netip.AddrPortFrom(pathHostAddr, pathHostPort), 100_000, icmpFlood)
	}
	time.Sleep(icmpGame - time.Since(began))
	for _, p := range procs {
		p.cmd.Process.Signal(os.Interrupt)
	}
	snmp1 := snmpIn(t, p1)
	r.icmpIn, r.rcvbufErrors = snmp1["Icmp.InMsgs"]-snmp0["Icmp.InMsgs"], snmp1["Udp.RcvbufErrors"]-snmp0["Udp.RcvbufErrors"]
	for _, p := range procs {
		if code := p.exit(time.Minute); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	r.frames, r.waitMS, r.lost = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, p := range procs {
		sums := p.of("summary")
		if len(sums) == 0 {
			t.Fatalf("%s printed no summary", p.name)
		}
		last := sums[len(sums)-1]
		for _, x := range last["players"].([]any) {
			if m := ndjson(x.(map[string]any)); m.str("player") == p.name {
				r.frames[p.name], r.waitMS[p.name] = m.num("frames"), m.num("total_wait_ms")
			}
		}
		var missing, expected float64
		for _, x := range last["links"].([]any) {
			l := ndjson(x.(map[string]any))
			if l.str("to") == "p1" && l.num("expected") > 0 {
				r.lost[p.name] = l.num("missing") / l.num("expected")
			}
			if p == one {
				missing, expected = missing+l.num("missing"), expected+l.num("expected")
			}
		}
		if p == one && expected > 0 {
			r.lostAtP1 = missing / expected
		}
	}
	for _, e := range one.of("path") {
		if e.str("to") == "ada" {
			r.paths = append(r.paths, decodePath(t, e))
		}
	}
	return r
}

// snmpIn reads the kernel's protocol counters in namespace ns
// (/proc/net/snmp), as "Proto.Name".
func snmpIn(t *testing.T, ns string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/snmp").CombinedOutput()
	if err != nil {
		t.Fatalf("snmp in %s: %v\n%s", ns, err, out)
	}
	m := map[string]uint64{}
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) != len(values) || len(names) == 0 {
			continue
		}
		proto := strings.TrimSuffix(names[0], ":")
		for k := 1; k < len(names); k++ {
			v, _ := strconv.ParseUint(values[k], 10, 64)
			m[proto+"."+names[k]] = v
		}
	}
	return m
}

// udpPortIn is the port of the one UDP socket bound in namespace ns (the
// player's game socket): what the attacker is taken to know.
func udpPortIn(t *testing.T, ns string) uint16 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "ss", "-Huan").CombinedOutput()
	if err != nil {
		t.Fatalf("ss in %s: %v\n%s", ns, err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		local := f[3]
		if p, err := strconv.ParseUint(local[strings.LastIndexByte(local, ':')+1:], 10, 16); err == nil && p != 0 {
			return uint16(p)
		}
	}
	t.Fatalf("no UDP socket in %s: %s", ns, out)
	return 0
}

// forgeICMP sends rate forged ICMP errors a second for d from a raw socket
// in namespace ns to victim, each quoting a datagram from victim to peer,
// and returns how many it sent and for how long. Every other packet aims
// at the trace: Time Exceeded from an address on no path (one of 30), from
// a router of the path and from the host, Time Exceeded and port
// unreachable quoting a probe record with a guessed number, port
// unreachable from the host quoting the headers. The rest take every
// error the kernel fails a send with in turn: unreachables of every code
// that has one (net, host, protocol, port, fragmentation needed, source
// route, host unknown, isolated, prohibited), time exceeded and parameter
// problem.
func forgeICMP(t *testing.T, ns string, victim, peer netip.AddrPort, rate int, d time.Duration) (int, time.Duration) {
	t.Helper()
	var fd int
	err := inNetnsDo(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		return err
	})
	if err != nil {
		t.Fatalf("raw socket in %s: %v", ns, err)
	}
	defer unix.Close(fd)
	rng := rand.New(rand.NewPCG(uint64(victim.Port()), 7))
	type kind struct {
		typ, code byte
		from      netip.Addr
		quote     bool
	}
	// Half the packets aim at the trace, half at the socket: every ICMP
	// error a queued entry can fail a send with.
	var fool, stall []kind
	for i := range 30 {
		fool = append(fool, kind{11, 0, netip.AddrFrom4([4]byte{203, 0, 113, byte(1 + i)}), false})
	}
	fool = append(fool, kind{11, 0, icmpHops[1], false}, kind{11, 0, icmpHops[2], false}, kind{11, 0, pathHostAddr, false},
		kind{11, 0, netip.MustParseAddr("203.0.113.99"), true}, kind{3, 3, pathHostAddr, true}, kind{3, 3, pathHostAddr, false})
	for _, tc := range [][2]byte{{3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}, {3, 5}, {3, 7}, {3, 8}, {3, 13}, {11, 0}, {12, 0}} {
		stall = append(stall, kind{tc[0], tc[1], icmpHops[2], false})
	}
	pkts := make([][]byte, 0, 1024)
	for i := range cap(pkts) {
		k := fool[(i/2)%len(fool)]
		if i%2 == 1 {
			k = stall[(i/2)%len(stall)]
		}
		var body []byte
		if k.quote {
			body = make([]byte, netcore.HeaderLen)
			netcore.PutHeader(body, netcore.Header{Token: rng.Uint64(), Sender: netcore.PeerID(rng.IntN(8)), Channel: netcore.ChannelControl})
			body = trace.AppendProbe(body, trace.Probe{Num: rng.Uint32(), TTL: uint8(1 + rng.IntN(30))})
		}
		pkts = append(pkts, icmpError(k.from, victim, peer, k.typ, k.code, body))
	}
	// The packets go out 64 to a sendmmsg: the forger's own cost stays
	// small beside what it makes the victim's machine do.
	const batch = 64
	var (
		name = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: victim.Addr().As4()}
		iovs [batch]unix.Iovec
		hdrs [batch]struct {
			hdr unix.Msghdr
			n   uint32
		}
	)
	start, sent := time.Now(), 0
	for time.Since(start) < d {
		due := int(time.Since(start).Seconds() * float64(rate))
		for sent < due {
			k := min(batch, due-sent)
			for i := range k {
				p := pkts[(sent+i)%len(pkts)]
				iovs[i].Base = &p[0]
				iovs[i].SetLen(len(p))
				hdrs[i].hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&name)), Namelen: unix.SizeofSockaddrInet4, Iov: &iovs[i], Iovlen: 1}
			}
			n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(k), 0, 0, 0)
			if errno != 0 && errno != unix.ENOBUFS && errno != unix.EINTR {
				t.Fatalf("forged ICMP: %v", errno)
			}
			if n == 0 {
				break // the local queue is full: again after the sleep
			}
			sent += int(n)
		}
		time.Sleep(time.Millisecond)
	}
	return sent, time.Since(start)
}

// icmpError is an IPv4 packet carrying ICMP type/code from src to
// victim, quoting a UDP datagram from victim to peer whose payload is body.
func icmpError(src netip.Addr, victim, peer netip.AddrPort, typ, code byte, body []byte) []byte {
	be := binary.BigEndian
	inner := make([]byte, 28+len(body))
	inner[0], inner[8], inner[9] = 0x45, 64, unix.IPPROTO_UDP
	be.PutUint16(inner[2:], uint16(len(inner)))
	a, b := victim.Addr().As4(), peer.Addr().As4()
	copy(inner[12:], a[:])
	copy(inner[16:], b[:])
	be.PutUint16(inner[10:], checksum(inner[:20]))
	be.PutUint16(inner[20:], victim.Port())
	be.PutUint16(inner[22:], peer.Port())
	be.PutUint16(inner[24:], uint16(8+len(body)))
	copy(inner[28:], body)
	msg := make([]byte, 8+len(inner))
	msg[0], msg[1] = typ, code
	if typ == 3 && code == 4 {
		be.PutUint16(msg[6:], 1400) // the next hop's MTU
	}
	copy(msg[8:], inner)
	be.PutUint16(msg[2:], checksum(msg))
	ip := make([]byte, 20+len(msg))
	ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_ICMP
	be.PutUint16(ip[2:], uint16(len(ip)))
	s := src.As4()
	copy(ip[12:], s[:])
	copy(ip[16:], a[:])
	copy(ip[20:], msg)
	return ip // the kernel fills in the header's checksum (IP_HDRINCL)
}

// checksum is the Internet checksum of b.
func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// TestNetnsForgedICMP runs the session twice, quiet and flooded (about
// 40 s in all). The flood must cost nothing the game sees: on every
// machine, the flooded run's frames are at least 95 % of the quiet run's,
// and its waits exceed the quiet run's by at most 5 % of the game's time
// (0.8 s: a quiet run's waits are often 0, and on a busy machine either
// run may wait a few hundred ms for its CPU); p1's datagrams missing at
// the host and at p2 at most 1 % more than in the quiet run (a datagram a
// queued error fails is sent again at once). And no path event of p1's
// shows a hop that no router on the path answered: every hop at its hop
// limit's router or at none, none past the host, the path complete only
// at the host.
func TestNetnsForgedICMP(t *testing.T) {
	n := newNetns(t, "ic", false, "ip", "ss")
	host, p1, p2, forger := icmpTopology(n)
	bin := buildLagscope(t)
	quiet := icmpSession(t, bin, host, p1, p2, forger, false)
	flooded := icmpSession(t, bin, host, p1, p2, forger, true)
	t.Logf("forged %d ICMP errors in %v (%.0f a second); p1's stack took in %d ICMP messages (%d in the quiet run) and dropped %d datagrams for a full buffer (%d); the others' datagrams missing at p1 %.4f (%.4f)",
		flooded.forged, flooded.flood, float64(flooded.forged)/flooded.flood.Seconds(), flooded.icmpIn, quiet.icmpIn, flooded.rcvbufErrors, quiet.rcvbufErrors, flooded.lostAtP1, quiet.lostAtP1)
	if flooded.forged < 900_000 || flooded.icmpIn < uint64(flooded.forged)*9/10 {
		t.Fatalf("the flood: %d sent, %d taken in by p1's stack; want 1 000 000 reaching it", flooded.forged, flooded.icmpIn)
	}
	for _, m := range []string{"ada", "p1", "p2"} {
		t.Logf("%s: frames %v quiet, %v flooded; waits %.0f ms, %.0f ms; p1's datagrams missing there %.4f, %.4f",
			m, quiet.frames[m], flooded.frames[m], quiet.waitMS[m], flooded.waitMS[m], quiet.lost[m], flooded.lost[m])
		if quiet.frames[m] < 300 || flooded.frames[m] < 0.95*quiet.frames[m] {
			t.Errorf("%s executed %v frames flooded, %v quiet: want at least 95 %%", m, flooded.frames[m], quiet.frames[m])
		}
		if flooded.waitMS[m] > quiet.waitMS[m]+0.05*float64(icmpGame.Milliseconds()) {
			t.Errorf("%s waited %.0f ms flooded, %.0f ms quiet: more than 5 %% of the game's %v", m, flooded.waitMS[m], quiet.waitMS[m], icmpGame)
		}
		if m != "p1" && flooded.lost[m] > quiet.lost[m]+0.01 {
			t.Errorf("%s missed %.4f of p1's datagrams flooded, %.4f quiet", m, flooded.lost[m], quiet.lost[m])
		}
	}
	for run, r := range map[string]icmpRun{"quiet": quiet, "flooded": flooded} {
		if len(r.paths) == 0 {
			t.Fatalf("%s: p1 printed no path event to the host", run)
		}
		for i, e := range r.paths {
			checkForgedPath(t, fmt.Sprintf("%s path event %d", run, i+1), e)
		}
		last := r.paths[len(r.paths)-1]
		if !last.Complete || len(last.Hops) != len(icmpHops) || slices.ContainsFunc(last.Hops, func(h pathHop) bool { return h.Addr == nil || h.Sent < 10 }) {
			t.Errorf("%s: p1's last path event %+v, want every hop of the path answering, judged", run, last.Hops)
		}
	}
	logPath(t, &pathTrace{p: &runProc{proc: &proc{name: "p1"}}, to: "ada", ev: flooded.paths[len(flooded.paths)-1]})
}

// pathHop is one hop of a path event.
type pathHop = pathEventHop

// checkForgedPath: every hop of e at its hop limit's router on p1's path
// or at none, none past the host, and the path complete only at the host.
func checkForgedPath(t *testing.T, what string, e pathEvent) {
	t.Helper()
	if !e.Available {
		t.Errorf("%s: the trace is not available", what)
		return
	}
	if len(e.Hops) > len(icmpHops) {
		t.Errorf("%s: %d hops, the path has %d", what, len(e.Hops), len(icmpHops))
	}
	for i, h := range e.Hops {
		if h.TTL != i+1 || i >= len(icmpHops) || (h.Addr != nil && *h.Addr != icmpHops[i].String()) {
			a := "null"
			if h.Addr != nil {
				a = *h.Addr
			}
			t.Errorf("%s: hop %d (ttl %d) at %s: no router of the path answers there", what, i+1, h.TTL, a)
		}
	}
	if e.Complete && len(e.Hops) != len(icmpHops) {
		t.Errorf("%s: complete at hop %d, the host is hop %d", what, len(e.Hops), len(icmpHops))
	}
}

// decodePath reads a path event.
func decodePath(t *testing.T, e ndjson) pathEvent {
	t.Helper()
	var pe pathEvent
	b, _ := json.Marshal(e)
	if err := json.Unmarshal(b, &pe); err != nil {
		t.Fatal(err)
	}
	return pe
}
