package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A newcomer's session across NAT and a proxy, as a user runs it: `host --players 3`,
// one `join` direct, one `join` through `lagscope impair` in front of the
// host, and a `watch`. The address the host sees for the joiner behind the
// proxy is the proxy's, which reaches nobody else; before hole punching
// the lobby never started. Now every pair finds a path (cyd's own socket,
// learned from its local addresses), the game starts, and every link of
// every player is measured, on a direct path.
func TestLiveNewcomerBehindImpair_T1(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", "127.0.0.1:0", "--players", "3",
		"--json", "--duration", "22s")
	addr := hostAddr(t, host)
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	proxy := l.LocalAddr().String()
	l.Close()
	relay := startProc(t, bin, "relay", "impair", "--listen", proxy, "--to", addr, "--delay", "10ms", "--duration", "60s")
	bob := startProc(t, bin, "bob", "join", addr, "--name", "bob", "--json", "--duration", "18s")
	cyd := startProc(t, bin, "cyd", "join", proxy, "--name", "cyd", "--json", "--duration", "18s")
	admin := startProc(t, bin, "admin", "watch", addr, "--name", "admin", "--json", "--duration", "18s")
	all := []*proc{host, bob, cyd, admin}
	for _, p := range all {
		if code := p.exit(60 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	relay.cmd.Process.Signal(os.Interrupt)
	for _, p := range all {
		started := false
		for _, m := range p.of("message") {
			if strings.HasPrefix(m.str("text"), "The game starts") {
				started = true
			}
		}
		if !started {
			t.Fatalf("%s: the game never started: %v", p.name, p.of("message"))
		}
	}
	players := []*proc{host, bob, cyd}
	for _, p := range players {
		got := measuredLinks(p, p.name)
		for _, q := range append(players, admin) {
			if q != p && !got[q.name] {
				t.Errorf("%s's link to %s never measured (measured: %v)", p.name, q.name, got)
			}
		}
		for _, e := range p.of("link") {
			if e.str("path") != "direct" {
				t.Errorf("%s: link line %v: on loopback every pair is direct", p.name, e)
			}
		}
	}
	// The relay impairs only what passes through it: cyd's link to the
	// host (10 ms each way, 20 ms a round trip at the least). cyd's link to
	// bob, found from cyd's own addresses, and bob's to the host go direct
	// and keep loopback's round trip (docs/live.md, "Impairing one link").
	impaired := map[[2]string]bool{{"ada", "cyd"}: true, {"cyd", "ada"}: true}
	srtt := map[[2]string]float64{}
	for _, p := range players {
		for _, q := range players {
			if p == q {
				continue
			}
			med, n := medianSRTT(p.of("link"), p.name, q.name, 0) // cmd_live_impair_test.go
			if n == 0 {
				t.Fatalf("%s → %s: no round trip measured", p.name, q.name)
			}
			srtt[[2]string{p.name, q.name}] = med
		}
	}
	floor := min(srtt[[2]string{"ada", "cyd"}], srtt[[2]string{"cyd", "ada"}])
	for pair, med := range srtt {
		switch {
		case impaired[pair] && med < 15:
			t.Errorf("%s → %s goes through the relay (10 ms each way), yet its median SRTT is %.1f ms", pair[0], pair[1], med)
		case !impaired[pair] && med > floor-10:
			t.Errorf("%s → %s should go direct, yet its median SRTT %.1f ms is near the relayed link's %.1f ms", pair[0], pair[1], med, floor)
		}
	}
	t.Logf("median SRTT by link: %v", srtt)
	for _, p := range []*proc{bob, cyd, admin} {
		for _, m := range p.of("message") {
			if strings.Contains(m.str("text"), "↔") {
				t.Logf("%s: %s", p.name, m.str("text"))
			}
		}
	}
}

// IPv6 and dual-stack: a session entirely over [::1], and a host
// listening on both families with one player joining over IPv6 and one
// over IPv4. Every player's links are measured and the game starts.
func TestLiveIPv6AndDualStack_T1(t *testing.T) {
	t.Parallel()
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		c.Close()
	}
	bin := buildLagscope(t)
	for _, c := range []struct {
		name, listen string
		joins        [2]string // how bob and cyd reach the host; %d is its port
	}{
		{"ipv6", "[::1]:0", [2]string{"[::1]:%d", "[::1]:%d"}},
		{"dual-stack", ":0", [2]string{"[::1]:%d", "127.0.0.1:%d"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", c.listen, "--players", "3", "--json", "--duration", "14s")
			ap, err := netip.ParseAddrPort(hostAddr(t, host))
			if err != nil {
				t.Fatal(err)
			}
			bob := startProc(t, bin, "bob", "join", fmt.Sprintf(c.joins[0], ap.Port()), "--name", "bob", "--json", "--duration", "11s")
			cyd := startProc(t, bin, "cyd", "join", fmt.Sprintf(c.joins[1], ap.Port()), "--name", "cyd", "--json", "--duration", "11s")
			players := []*proc{host, bob, cyd}
			for _, p := range players {
				if code := p.exit(40 * time.Second); code != 0 {
					t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
				}
			}
			for _, p := range players {
				got := measuredLinks(p, p.name)
				for _, q := range players {
					if q != p && !got[q.name] {
						t.Errorf("%s's link to %s never measured (%v)", p.name, q.name, p.of("message"))
					}
				}
			}
		})
	}
}

// A host listening on every address answers each machine from the address
// it reached the host at (IP_PKTINFO): a joiner that sends to
// 127.0.0.2 gets its answers from 127.0.0.2, not from the 127.0.0.1 the
// system would pick, and joins. Linux only (the loopback has every
// 127/8 address there).
func TestLiveHostAnswersFromArrivalAddress(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 on the loopback and IP_PKTINFO: Linux")
	}
	bin := buildLagscope(t)
	host := startProc(t, bin, "ada", "host", "--open", "--name", "ada", "--listen", "0.0.0.0:0", "--players", "2", "--json", "--duration", "8s")
	ap, err := netip.ParseAddrPort(hostAddr(t, host))
	if err != nil {
		t.Fatal(err)
	}
	bob := startProc(t, bin, "bob", "join", fmt.Sprintf("127.0.0.2:%d", ap.Port()), "--name", "bob", "--json", "--duration", "6s")
	for _, p := range []*proc{host, bob} {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	if !measuredLinks(bob, "bob")["ada"] {
		t.Fatalf("bob never measured its link to the host: %v", bob.of("message"))
	}
}
