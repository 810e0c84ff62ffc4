package session

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
)

// A NAT router in the simulated world, as Linux masquerade makes one: a
// mapping per inside socket (endpoint-independent, the default) or per
// inside socket and destination (`fully-random`), and a filter that lets
// in only what comes from an address the inside has sent to (conntrack).
//
// masqOnly is a router without the rule that drops what nobody inside
// asked for: a datagram from an address its inside has not sent to goes to
// the router's own input, and its conntrack entry stays. That entry takes
// the public port for that address, so the inside's first datagram to it
// leaves from a new port, which the router (as Linux does) then reuses for
// the socket's later destinations.
type testNAT struct {
	w        *world
	pub      netip.Addr
	random   bool
	masqOnly bool
	nextPort uint16
	maps     map[natKey]*natMap
	flows    map[natKey]*natMap // masqOnly: the mapping of each inside socket and destination
	// slowFrom's datagrams reach the inside slowBy late.
	slowFrom netip.AddrPort
	slowBy   time.Duration
}

type natKey struct {
	inside netip.AddrPort
	dest   netip.AddrPort // zero unless random
}

type natMap struct {
	node        *simnet.Node
	allowed     map[netip.AddrPort]bool
	unsolicited map[netip.AddrPort]bool // masqOnly: addresses whose datagrams came first
	dead        bool                    // the router forgot it (rebind)
}

// rebind forgets every mapping, as a router does when its conntrack
// table is flushed or it restarts: the inside machines' next datagrams
// leave from new public ports, and nothing reaches them at the old ones.
func (n *testNAT) rebind() {
	for _, mp := range n.maps {
		mp.dead = true
	}
	n.maps = map[natKey]*natMap{}
	n.flows = map[natKey]*natMap{}
}

func (w *world) nat(pub string, random bool) *testNAT {
	return &testNAT{w: w, pub: netip.MustParseAddr(pub), random: random, nextPort: 40000, maps: map[natKey]*natMap{},
		flows: map[natKey]*natMap{}}
}

// natSide is an inside machine's transport: everything goes out through
// the router.
type natSide struct {
	n *testNAT
	m *machine
}

func (s natSide) LocalAddr() netip.AddrPort { return s.m.addr }

func (s natSide) Send(to netip.AddrPort, p []byte) error {
	return s.n.mapping(s.m, to).node.Send(to, p)
}

// mapping is the mapping m's datagrams to `to` leave by, made if need be.
func (n *testNAT) mapping(m *machine, to netip.AddrPort) *natMap {
	k := natKey{inside: m.addr}
	if n.random {
		k.dest = to
	}
	mp := n.maps[k]
	if n.masqOnly {
		fk := natKey{inside: m.addr, dest: to}
		if f := n.flows[fk]; f != nil {
			return f
		}
		if mp != nil && mp.unsolicited[to] {
			mp = nil // the port is taken for `to`: another one
		}
		defer func() { n.flows[fk] = n.maps[k] }()
	}
	if mp == nil {
		mp = &natMap{allowed: map[netip.AddrPort]bool{}, unsolicited: map[netip.AddrPort]bool{}}
		mp.node = n.w.net.Attach(netip.AddrPortFrom(n.pub, n.nextPort), func(now time.Duration, from netip.AddrPort, p []byte) {
			if mp.dead || !mp.allowed[from] || m.h.Stopped() || m.s == nil {
				if n.masqOnly && !mp.dead && !mp.allowed[from] {
					mp.unsolicited[from] = true // the router's input keeps its entry
				}
				return // conntrack: no flow from this address
			}
			if from == n.slowFrom && n.slowBy > 0 {
				p = slices.Clone(p)
				n.w.at(now+n.slowBy, func() {
					if !m.h.Stopped() {
						m.s.Receive(now+n.slowBy, from, p)
						m.w.after(m)
					}
				})
				return
			}
			m.s.Receive(now, from, p)
			m.w.after(m)
		})
		n.nextPort++
		n.maps[k] = mp
	}
	mp.allowed[to] = true
	return mp
}

// behind attaches a machine with a private address behind n: nothing in
// the world can reach that address.
func (w *world) behind(name string, n *testNAT, private string) *machine {
	m := &machine{w: w, name: name, cks: map[int]uint32{}}
	m.addr = netip.MustParseAddrPort(private)
	// The driver wakes the machine through a node of its own at an address
	// nobody is ever told (TEST-NET-1), so the private address stays
	// unreachable: everything in and out goes through the router.
	m.h = w.d.Attach(netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, w.nextIP}), 9))
	w.nextIP++
	m.tr = &simworld.Recorder{Inner: natSide{n: n, m: m}}
	return m
}

// forwarder is `lagscope impair` in front of target: a client's datagrams
// to addr leave from another socket (up) to target, and only target's
// replies go back to the client.
func (w *world) forwarder(addr, up string, target netip.AddrPort) netip.AddrPort {
	var client netip.AddrPort
	var front, back *simnet.Node
	front = w.net.Attach(netip.MustParseAddrPort(addr), func(now time.Duration, from netip.AddrPort, p []byte) {
		client = from
		_ = back.Send(target, p)
	})
	back = w.net.Attach(netip.MustParseAddrPort(up), func(now time.Duration, from netip.AddrPort, p []byte) {
		if from == target && client.IsValid() {
			_ = front.Send(client, p)
		}
	})
	return front.LocalAddr()
}

// joinAt joins an already attached machine through hostAddr.
func (w *world) joinAt(m *machine, role Role, hostAddr netip.AddrPort, cfg Config) *machine {
	w.t.Helper()
	s, err := NewJoiner(w.config(m, cfg), role, w.transport(m), hostAddr)
	if err != nil {
		w.t.Fatalf("join: %v", err)
	}
	return w.start(m, s)
}

func allStarted(ms ...*machine) func() bool {
	return func() bool {
		for _, m := range ms {
			if !m.s.Started() {
				return false
			}
		}
		return true
	}
}

// A newcomer behind NAT, and the netns topology in virtual
// time: a host on the "internet", two players behind endpoint-independent
// NATs, one behind a NAT that maps per destination, one through a proxy in
// front of the host (the address the host sees for it reaches nobody
// else), and a watcher behind a fourth router. Before hole punching the
// lobby never started; now every pair connects, the two
// endpoint-independent NATs directly, the per-destination one through the
// host, and the game runs in step (S13, T5).
func TestNATTraversal_T1(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("correct horse battery staple")} {
		w := newWorld(t, 12, impair.Profile{Delay: 10 * time.Millisecond})
		cfg := Config{Players: 5, Key: key}
		ada := w.host("ada", cfg)
		bob := w.joinAt(w.behind("bob", w.nat("10.0.1.1", false), "192.168.1.2:7373"), RolePlayer, ada.addr, cfg)
		cyd := w.joinAt(w.behind("cyd", w.nat("10.0.2.1", false), "192.168.2.2:7373"), RolePlayer, ada.addr, cfg)
		dan := w.joinAt(w.behind("dan", w.nat("10.0.3.1", true), "192.168.3.2:7373"), RolePlayer, ada.addr, cfg)
		proxy := w.forwarder("10.0.0.9:9400", "10.0.0.9:50000", ada.addr)
		eve := w.joinAt(w.attach("eve"), RolePlayer, proxy, cfg)
		mon := w.joinAt(w.behind("mon", w.nat("10.0.4.1", false), "192.168.4.2:7373"), RoleObserver, ada.addr, cfg)
		all := []*machine{ada, bob, cyd, dan, eve, mon}
		if !w.runUntil(20*time.Second, allStarted(all...)) {
			for _, m := range all {
				t.Logf("%s started=%v err=%v pending=%v", m.name, m.s.Started(), m.s.Err(), m.s.pending(w.now()))
			}
			t.Fatalf("key=%v: the game did not start on every machine", key != nil)
		}
		for _, c := range []struct {
			a, b *machine
			want path
		}{
			{bob, cyd, pathDirect}, {cyd, bob, pathDirect},
			{bob, dan, pathRelayed}, {dan, bob, pathRelayed}, {cyd, dan, pathRelayed}, {dan, cyd, pathRelayed},
			{eve, bob, pathDirect}, {bob, eve, pathDirect}, {eve, dan, pathDirect}, {dan, eve, pathDirect},
			{mon, bob, pathDirect}, {mon, dan, pathRelayed}, {dan, mon, pathRelayed},
			{bob, ada, pathDirect}, {ada, dan, pathDirect}, {eve, ada, pathDirect},
		} {
			if got := c.a.s.pathTo(c.b.name); got != c.want {
				t.Errorf("key=%v: %s → %s path %v, want %v", key != nil, c.a.name, c.b.name, got, c.want)
			}
		}
		for _, m := range all {
			for _, msg := range m.messages() {
				if strings.Contains(msg, "↔") {
					t.Logf("%s: %s", m.name, msg)
				}
			}
		}
		w.runFor(20 * time.Second)
		for _, m := range all {
			if m.s.Done() {
				t.Fatalf("%s ended: %v", m.name, m.s.Err())
			}
		}
		// Every pair carries the game: frames run in step everywhere.
		players := []*machine{ada, bob, cyd, dan, eve}
		frames := players[0].s.Frame()
		for _, m := range players {
			frames = min(frames, m.s.Frame())
		}
		if frames < 100 {
			for _, m := range all {
				v := m.s.View(w.now())
				t.Logf("%s frame %d waits on %q rej %+v", m.name, m.s.Frame(), v.WaitedOn, m.s.Rejected())
				for _, l := range m.s.Links() {
					t.Logf("   %s→%s %s %s sent %v", l.From, l.To, l.State, l.Path, *l.Sent)
				}
			}
			t.Fatalf("only %d frames in 20 s", frames)
		}
		for f := range frames {
			for _, m := range players[1:] {
				if m.cks[f] != ada.cks[f] {
					t.Fatalf("frame %d: %s's checksum %x, ada's %x", f, m.name, m.cks[f], ada.cks[f])
				}
			}
		}
		// The relayed link is measured through the host, and says so.
		var found bool
		for _, ls := range dan.s.Links() {
			if ls.To == "bob" {
				found = true
				if ls.Path != feed.PathRelayed || ls.SRTTMs == nil || *ls.SRTTMs < 35 {
					t.Errorf("dan→bob link %+v: want relayed with an SRTT of the path through the host (≥ 40 ms)", ls)
				}
			}
			if ls.To == "ada" && ls.Path != feed.PathDirect {
				t.Errorf("dan→ada path %q", ls.Path)
			}
		}
		if !found {
			t.Fatal("dan has no link to bob")
		}
		// Lines and matrix cells learned from telemetry carry the
		// measuring pair's path.
		paths := map[string]string{}
		for _, ls := range eve.s.KnownLinks(w.now()) {
			paths[ls.From+"→"+ls.To] = ls.Path
		}
		for _, c := range [][3]string{{"cyd", "dan", "relayed"}, {"dan", "bob", "relayed"}, {"bob", "cyd", "direct"}, {"eve", "dan", "direct"}} {
			if got := paths[c[0]+"→"+c[1]]; got != c[2] {
				t.Errorf("eve's line %s→%s says %q, want %q (%v)", c[0], c[1], got, c[2], paths)
			}
		}
		for _, row := range eve.s.View(w.now()).Matrix.Players {
			for _, l := range row.Links {
				want := (l.From == "dan" || l.To == "dan") && l.From != "ada" && l.To != "ada" && l.From != "eve" && l.To != "eve"
				if l.Relayed != want {
					t.Errorf("eve's matrix %s→%s relayed=%v", l.From, l.To, l.Relayed)
				}
			}
		}
		rel := ada.s.relayed()
		pairs := map[[2]string]bool{}
		for _, r := range rel {
			pairs[r.Between] = true
			if r.Datagrams == 0 || r.Bytes == 0 {
				t.Errorf("relay %v forwarded nothing", r)
			}
		}
		for _, want := range [][2]string{{"bob", "dan"}, {"cyd", "dan"}, {"dan", "mon"}} {
			if !pairs[want] {
				t.Errorf("host relayed %v, want %v among them", rel, want)
			}
		}
		if pairs[[2]string{"bob", "cyd"}] {
			t.Errorf("bob ↔ cyd relayed, want direct")
		}
		if !slices.ContainsFunc(dan.messages(), func(s string) bool { return s == "dan ↔ bob: no direct path after 3s, relaying through the host" }) &&
			!slices.ContainsFunc(bob.messages(), func(s string) bool { return s == "bob ↔ dan: no direct path after 3s, relaying through the host" }) {
			t.Errorf("no message says bob ↔ dan is relayed: %q / %q", bob.messages(), dan.messages())
		}
	}
}

// A watcher that attaches to a running game from behind a NAT, and a
// player behind one that maps per destination: they never hear each other
// and need the relay. The watcher reports its addresses once its roster has
// come (sendAddrs), which tells the player it can answer, so the player
// punches minPunchAfter after their link opened, not lateWatcherPunchAfter,
// and the pair is relayed within about 2 s + relayAfter of the attach; the
// watcher then gets the player's telemetry through the host.
func TestLateWatcherNeedingTheRelayGetsIt(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("correct horse battery staple")} {
		w := newWorld(t, 31, impair.Profile{Delay: 10 * time.Millisecond})
		cfg := Config{Players: 2, Key: key}
		ada := w.host("ada", cfg)
		dan := w.joinAt(w.behind("dan", w.nat("10.0.3.1", true), "192.168.3.2:7373"), RolePlayer, ada.addr, cfg)
		if !w.runUntil(10*time.Second, allStarted(ada, dan)) {
			t.Fatalf("key=%v: the game did not start", key != nil)
		}
		w.runFor(5 * time.Second)
		at := w.now()
		mon := w.joinAt(w.behind("mon", w.nat("10.0.4.1", false), "192.168.4.2:7373"), RoleObserver, ada.addr, cfg)
		relayed := func() bool {
			return dan.s.pathTo("mon") == pathRelayed && mon.s.pathTo("dan") == pathRelayed
		}
		if !w.runUntil(20*time.Second, relayed) {
			t.Fatalf("key=%v: dan ↔ mon not relayed 20 s after mon came: dan says %v, mon %v", key != nil,
				dan.s.pathTo("mon"), mon.s.pathTo("dan"))
		}
		took := w.now() - at
		t.Logf("key=%v: dan ↔ mon relayed %v after mon came", key != nil, took)
		if took >= lateWatcherPunchAfter {
			t.Errorf("key=%v: dan ↔ mon relayed %v after mon came, want within %v + %v and the attach", key != nil,
				took, minPunchAfter, relayAfter)
		}
		// dan's telemetry reaches mon through the host.
		if !w.runUntil(5*time.Second, func() bool {
			return slices.ContainsFunc(mon.s.KnownLinks(w.now()), func(l feed.LinkStat) bool {
				return l.From == "dan" && l.To == "ada" && l.SRTTMs != nil
			})
		}) {
			t.Errorf("key=%v: mon has no dan→ada line 5 s after the relay", key != nil)
		}
	}
}
