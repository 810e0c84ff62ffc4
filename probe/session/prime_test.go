package session

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
)

// sentDatagram is one datagram a machine sent: to where, when, with which
// hop limit (0: the socket's own) and what it was.
type sentDatagram struct {
	to   netip.AddrPort
	at   time.Duration
	hops int
	kind string // "prime", "check", "answer" or "other"
}

func kindOf(p []byte) string {
	switch {
	case isPrime(p):
		return "prime"
	case len(p) >= 4 && p[0] == netcore.Magic0 && p[1] == punchMagic1 && p[3] == checkKind:
		return "check"
	case len(p) >= 4 && p[0] == netcore.Magic0 && p[1] == punchMagic1 && p[3] == answerKind:
		return "answer"
	}
	return "other"
}

// hopSide is an inside machine's transport that sets hop limits, as
// Linux's socket does, on a world whose routers are one hop apart with
// one router of the internet between any two: a datagram with hop limit
// 1 dies in the machine's own router before its conntrack keeps anything;
// 2 opens the router's mapping and dies at the internet's router; 3 or
// more arrives.
type hopSide struct {
	natSide
	log *[]sentDatagram
}

func (h hopSide) record(to netip.AddrPort, p []byte, hops int) {
	*h.log = append(*h.log, sentDatagram{to: to, at: h.n.w.now(), hops: hops, kind: kindOf(p)})
}

func (h hopSide) Send(to netip.AddrPort, p []byte) error {
	h.record(to, p, 0)
	return h.natSide.Send(to, p)
}

func (h hopSide) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	h.record(to, p, hops)
	if hops <= 1 {
		return nil
	}
	mp := h.n.mapping(h.m, to)
	if hops >= 3 {
		return mp.node.Send(to, p)
	}
	return nil
}

func (h hopSide) HopAnswers(dst []netcore.HopAnswer) []netcore.HopAnswer { return dst }
func (h hopSide) TraceUnavailable() string                               { return "" }

// plainSide is natSide with the same log, for a transport without hop
// limits.
type plainSide struct {
	natSide
	log *[]sentDatagram
}

func (p plainSide) Send(to netip.AddrPort, b []byte) error {
	*p.log = append(*p.log, sentDatagram{to: to, at: p.n.w.now(), kind: kindOf(b)})
	return p.natSide.Send(to, b)
}

// behindLogged attaches a machine behind n as behind does, its transport
// logging what it sends, with hop limits or without.
func (w *world) behindLogged(name string, n *testNAT, private string, hops bool) (*machine, netcore.Transport, *[]sentDatagram) {
	m := w.behind(name, n, private)
	log := &[]sentDatagram{}
	side := natSide{n: n, m: m}
	var tr netcore.Transport = plainSide{natSide: side, log: log}
	if hops {
		tr = hopSide{natSide: side, log: log}
	}
	return m, tr, log
}

// joinVia joins an attached machine through hostAddr on transport tr.
func (w *world) joinVia(m *machine, tr netcore.Transport, hostAddr netip.AddrPort, cfg Config) *machine {
	w.t.Helper()
	s, err := NewJoiner(w.config(m, cfg), RolePlayer, tr, hostAddr)
	if err != nil {
		w.t.Fatalf("join: %v", err)
	}
	m.tr = &simworld.Recorder{Inner: tr}
	return w.start(m, s)
}

// Each side of a pair primes the peer's address when the pair's link
// opens: its first datagrams to that address carry hop limits 1 and 2,
// before any datagram with the socket's own, and one with hop limit 3
// follows primeLateAfter later. Nothing to the host is primed. A
// transport without hop limits sends no prime at all.
func TestPrimesGoBeforeAnythingElse(t *testing.T) {
	for _, hops := range []bool{true, false} {
		w := newWorld(t, 3, impair.Profile{Delay: 10 * time.Millisecond})
		cfg := Config{Players: 3}
		ada := w.host("ada", cfg)
		bob, btr, blog := w.behindLogged("bob", w.nat("10.0.1.1", false), "192.168.1.2:7373", hops)
		cyd, ctr, clog := w.behindLogged("cyd", w.nat("10.0.2.1", false), "192.168.2.2:7373", hops)
		w.joinVia(bob, btr, ada.addr, cfg)
		w.joinVia(cyd, ctr, ada.addr, cfg)
		if !w.runUntil(20*time.Second, allStarted(ada, bob, cyd)) {
			t.Fatalf("hops=%v: the game did not start", hops)
		}
		for _, c := range []struct {
			m   *machine
			log []sentDatagram
			to  *machine
		}{{bob, *blog, cyd}, {cyd, *clog, bob}} {
			peer := c.m.s.byID[c.to.s.self].Addr
			var first []sentDatagram
			for _, d := range c.log {
				if d.to == ada.addr && d.kind == "prime" {
					t.Errorf("hops=%v: %s primed the host", hops, c.m.name)
				}
				if d.to == peer {
					first = append(first, d)
				}
			}
			if c.m.s.pathTo(c.to.name) != pathDirect {
				t.Errorf("hops=%v: %s → %s path %v", hops, c.m.name, c.to.name, c.m.s.pathTo(c.to.name))
			}
			if !hops {
				if slices.ContainsFunc(c.log, func(d sentDatagram) bool { return d.kind == "prime" || d.hops != 0 }) {
					t.Errorf("a transport without hop limits sent a prime: %v", c.log)
				}
				continue
			}
			if len(first) < 3 || first[0].kind != "prime" || first[0].hops != 1 || first[1].kind != "prime" || first[1].hops != 2 {
				t.Fatalf("%s's first datagrams to %s: %+v", c.m.name, c.to.name, first[:min(len(first), 4)])
			}
			late := slices.IndexFunc(first, func(d sentDatagram) bool { return d.hops == primeLateHops })
			if late < 0 || first[late].kind != "prime" || first[late].at-first[0].at != primeLateAfter {
				t.Errorf("%s: no prime with hop limit %d %v after the first: %+v", c.m.name, primeLateHops, primeLateAfter, first)
			}
		}
	}
}

// A prime that arrives (a peer close by) is dropped unread: no answer,
// no count, no punching.
func TestPrimeArrivingIsIgnored(t *testing.T) {
	w := newWorld(t, 4, impair.Profile{Delay: 5 * time.Millisecond})
	cfg := Config{Players: 3}
	ada := w.host("ada", cfg)
	bob := w.join("bob", RolePlayer, ada, cfg)
	cyd := w.join("cyd", RolePlayer, ada, cfg)
	if !w.runUntil(10*time.Second, allStarted(ada, bob, cyd)) {
		t.Fatal("the game did not start")
	}
	cyd.tr.Keep = true
	before := cyd.s.Rejected()
	cyd.s.Receive(w.now(), bob.addr, appendPrime(nil, cyd.s.token, bob.s.self, cyd.s.self))
	cyd.s.Receive(w.now(), netip.MustParseAddrPort("10.9.9.9:1"), appendPrime(nil, 0, 9, 8))
	w.after(cyd)
	if got := cyd.s.Rejected(); got != before {
		t.Errorf("rejected %+v after primes, was %+v", got, before)
	}
	for _, d := range cyd.tr.Sent {
		if k := kindOf(d.Data); k != "other" {
			t.Errorf("cyd sent a %s after a prime", k)
		}
	}
	if st := cyd.s.byID[bob.s.self].path.state; st != pathNone {
		t.Errorf("a prime moved the pair to %v", st)
	}
}

// The clash in the simulator: bob and cyd behind masquerade-only routers,
// the host's datagrams reaching cyd late by more than a datagram takes
// from bob to cyd. Without primes bob's first lobby datagram reaches cyd's
// router before cyd sent anything to bob, its entry takes cyd's port, and
// the pair ends up relayed, as on Linux; two filtering routers go direct.
func TestMasqueradeOnlyClash(t *testing.T) {
	for _, masq := range []bool{true, false} {
		w := newWorld(t, 5, impair.Profile{Delay: 10 * time.Millisecond})
		cfg := Config{Players: 3}
		ada := w.host("ada", cfg)
		bn, cn := w.nat("10.0.1.1", false), w.nat("10.0.2.1", false)
		bn.masqOnly, cn.masqOnly = masq, masq
		bob, btr, _ := w.behindLogged("bob", bn, "192.168.1.2:7373", false)
		cyd, ctr, _ := w.behindLogged("cyd", cn, "192.168.2.2:7373", false)
		cn.slowFrom, cn.slowBy = ada.addr, 30*time.Millisecond
		w.joinVia(bob, btr, ada.addr, cfg)
		w.joinVia(cyd, ctr, ada.addr, cfg)
		if !w.runUntil(20*time.Second, allStarted(ada, bob, cyd)) {
			t.Fatalf("masq=%v: the game did not start", masq)
		}
		want := pathDirect
		if masq {
			want = pathRelayed
		}
		if got := bob.s.pathTo("cyd"); got != want {
			t.Errorf("masq=%v: bob → cyd %v, want %v", masq, got, want)
		}
	}
}
