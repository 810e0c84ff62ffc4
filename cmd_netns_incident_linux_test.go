package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"testing"
	"time"
)

// Four players in network namespaces around one router; from 25 s to 45 s
// of the run a kernel tbf queue on bob's own interface (2 Mbit/s holding
// 50 kB: about 200 ms when full) is kept full by a bounded flood from
// bob's machine to a sink at the host — nothing of lagscope's sits on the
// path it measures. Every machine tells an incident of bob's (or of a
// path to bob), their opened_frame within 3 s of game time of each other,
// and no machine's incident or diagnosis names cyd or dan, who only waited
// for bob (the knock-on: a machine stalled on bob sends its own commands
// late).
//
//	h (ada) ─┐
//	p2 (bob) ┼─ core
//	p3 (cyd) ┤
//	p4 (dan) ┘
//
// Addresses: machine k on 10.0.k.0/24 (core .1, machine .2).
func TestNetnsIncidentOfAQueue(t *testing.T) {
	n := newNetns(t, "iq", false, "ip", "tc", "setpriv", "ping")
	a4 := func(a, b, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b, c, d}) }
	core := n.ns("core")
	n.sysctl(core, "net.ipv4.ip_forward=1")
	names := []string{"ada", "bob", "cyd", "dan"}
	nss := make([]string, len(names))
	addrs := make([]netip.Addr, len(names))
	for i, name := range names {
		k := byte(i + 1)
		nss[i] = n.ns(name)
		addrs[i] = a4(10, 0, k, 2)
		n.veth(core, name, a4(10, 0, k, 1), nss[i], "eth0", addrs[i])
		n.run("ip", "-n", nss[i], "route", "add", "default", "via", fmt.Sprintf("10.0.%d.1", k))
	}
	n.run("tc", "-n", nss[1], "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "2mbit", "burst", "4kb", "limit", "50000")
	for _, ns := range nss[1:] {
		if out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "2", addrs[0].String()).CombinedOutput(); err != nil {
			t.Fatalf("%s cannot reach the host: %v\n%s", ns, err, out)
		}
	}
	bin, cfg := buildLagscopeShared(t)
	const run = 70 * time.Second
	in := func(ns, name string, args ...string) *proc {
		return startUnpriv(t, ns, bin, cfg, name, args...)
	}
	dur := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
	at := netip.AddrPortFrom(addrs[0], 7373).String()
	procs := []*proc{in(nss[0], "ada", "host", "--open", "--name", "ada", "--listen", at, "--players", "4", "--json", "--duration", dur(run+5*time.Second))}
	hostAddr(t, procs[0])
	for i, name := range names[1:] {
		procs = append(procs, in(nss[i+1], name, "join", at, "--name", name, "--json", "--duration", dur(run)))
	}
	fill := netip.AddrPortFrom(addrs[0], 9999)
	sink(t, nss[0], fill)
	time.Sleep(25 * time.Second)
	stop := flood(t, nss[1], addrs[1], fill, 20*time.Second)
	t.Log("bob's queue fills")
	time.Sleep(20 * time.Second)
	stop()
	t.Log("bob's queue drains")
	for _, p := range procs {
		if code := p.exit(run + time.Minute); code != 0 {
			t.Fatalf("%s exited %d: %s", p.name, code, p.stderr.String())
		}
	}
	checkIncidentsAgree(t, procs, "bob", []string{"cyd", "dan"}, 3*30) // cmd_live_incident_test.go
}
