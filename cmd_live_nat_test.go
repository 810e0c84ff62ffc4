package main

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// The newcomer's case of issue 12, as a user runs it: `host --players 3`,
// one `join` direct, one `join` through `lagscope impair` in front of the
// host, and a `watch`. The address the host sees for the joiner behind the
// proxy is the proxy's, which reaches nobody else; before hole punching
// the lobby never started. Now every pair finds a path (cyd's own socket,
// learned from its local addresses), the game starts, and every link of
// every player is measured, on a direct path.
func TestLiveNewcomerBehindImpair_T1(t *testing.T) {
	bin := buildLagscope(t)
	host := startProc(t, bin, "ada", "host", "--name", "ada", "--listen", "127.0.0.1:0", "--players", "3",
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
	for _, p := range []*proc{bob, cyd, admin} {
		for _, m := range p.of("message") {
			if strings.Contains(m.str("text"), "↔") {
				t.Logf("%s: %s", p.name, m.str("text"))
			}
		}
	}
}
