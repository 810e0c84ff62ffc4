package session

import (
	"cmp"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

// The policy's names: --trace and the Path view, then the diagnosis's
// culprit and the other end of its culprit path when this machine is one
// end; never this machine, each name once.
func TestTracedNames(t *testing.T) {
	link := func(a, b string) *[2]string { return &[2]string{a, b} }
	for _, c := range []struct {
		name, pinned, viewed string
		self                 string // "" is ada
		d                    *diagnosis.Diagnosis
		want                 []string
	}{
		{name: "nothing", want: nil},
		{name: "pinned and viewed", pinned: "bob", viewed: "cyd", want: []string{"bob", "cyd"}},
		{name: "viewed twice", pinned: "bob", viewed: "bob", want: []string{"bob"}},
		{name: "self is never traced", pinned: "ada", viewed: "ada", want: nil},
		{name: "culprit", d: &diagnosis.Diagnosis{Culprit: "cyd"}, want: []string{"cyd"}},
		{name: "self as culprit, alone", d: &diagnosis.Diagnosis{Culprit: "ada"}, want: nil},
		{name: "self as culprit traces its first other player", self: "bob", d: &diagnosis.Diagnosis{Culprit: "bob",
			Players: []diagnosis.PlayerDiagnosis{{Player: "ada"}, {Player: "bob"}, {Player: "cyd"}}}, want: []string{"ada"}},
		{name: "no culprit: the first slow player", d: &diagnosis.Diagnosis{Players: []diagnosis.PlayerDiagnosis{
			{Player: "ada"}, {Player: "bob", Causes: []vocab.Cause{"latency"}}, {Player: "cyd", Causes: []vocab.Cause{"jitter"}}, {Player: "dan", Causes: []vocab.Cause{"latency", "loss"}}}},
			want: []string{"bob"}},
		{name: "no culprit, self slow: its own path", self: "bob", d: &diagnosis.Diagnosis{Players: []diagnosis.PlayerDiagnosis{
			{Player: "ada"}, {Player: "bob", Causes: []vocab.Cause{"latency"}}, {Player: "dan", Causes: []vocab.Cause{"latency"}}}},
			want: []string{"ada"}},
		{name: "no culprit, already tracing", pinned: "cyd", d: &diagnosis.Diagnosis{Players: []diagnosis.PlayerDiagnosis{
			{Player: "ada"}, {Player: "bob", Causes: []vocab.Cause{"latency"}}, {Player: "cyd"}}},
			want: []string{"cyd"}},
		{name: "culprit link from this end", d: &diagnosis.Diagnosis{CulpritLink: link("ada", "bob")}, want: []string{"bob"}},
		{name: "culprit link to this end", d: &diagnosis.Diagnosis{CulpritLink: link("cyd", "ada")}, want: []string{"cyd"}},
		{name: "culprit link elsewhere", d: &diagnosis.Diagnosis{CulpritLink: link("bob", "cyd")}, want: nil},
		{name: "no blame", d: &diagnosis.Diagnosis{Verdict: "fine"}, want: nil},
		{name: "all four", pinned: "bob", viewed: "cyd", d: &diagnosis.Diagnosis{Culprit: "dan", CulpritLink: link("eve", "ada")},
			want: []string{"bob", "cyd", "dan", "eve"}},
	} {
		var scratch [maxTraced]string
		self := cmp.Or(c.self, "ada")
		got := tracedNames(scratch[:0], self, c.pinned, c.viewed, c.d)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The policy allocates nothing when nothing changes: it runs on every Tick.
func TestTracedNamesAllocatesNothing(t *testing.T) {
	d := &diagnosis.Diagnosis{Culprit: "dan", CulpritLink: &[2]string{"eve", "ada"}}
	var scratch [maxTraced]string
	if n := testing.AllocsPerRun(100, func() { tracedNames(scratch[:0], "ada", "bob", "cyd", d) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// hopNode is a simulated machine's transport that claims to trace: it
// sends a hop-limited probe as an ordinary datagram (the simulated
// network has no routers, so every probe reaches the peer, which answers
// it) and reads no ICMP answers.
type hopNode struct{ netcore.Transport }

func (h hopNode) SendHopLimit(to netip.AddrPort, p []byte, _ int) error  { return h.Send(to, p) }
func (h hopNode) HopAnswers(dst []netcore.HopAnswer) []netcore.HopAnswer { return dst }
func (h hopNode) TraceUnavailable() string                               { return "" }

// tracingHost hosts on a transport that traces.
func (w *world) tracingHost(name string, cfg Config) *machine {
	w.t.Helper()
	m := w.attach(name)
	s, err := NewHost(w.config(m, cfg), hopNode{m.tr})
	if err != nil {
		w.t.Fatalf("host: %v", err)
	}
	return w.start(m, s)
}

func pathPeers(ps []feed.PathView) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Peer)
	}
	return out
}

// Every link is traced; --trace pins a link from the moment it exists; the
// Path view pins its link while it is open and shows it, and lets it go
// when it closes; each shown link is a PathView in house order, and the
// link traced on a transport that traces reaches its peer at hop 1.
func TestTracedLinksFollowThePolicy(t *testing.T) {
	w := newWorld(t, 1, lan30)
	ada := w.tracingHost("ada", Config{Players: 3, Trace: "cyd"})
	bob := w.join("bob", RolePlayer, ada, Config{})
	cyd := w.join("cyd", RolePlayer, ada, Config{})
	if !w.runUntil(10*time.Second, started(ada, bob, cyd)) {
		t.Fatal("session did not start")
	}
	w.runFor(3 * time.Second)
	s := ada.s
	if got := pathPeers(s.Paths()); !slices.Equal(got, []string{"cyd"}) {
		t.Fatalf("with --trace cyd the paths are %v", got)
	}
	s.ShowPath("bob")
	w.after(ada)
	w.runFor(15 * time.Second)
	ps := s.Paths()
	if got := pathPeers(ps); !slices.Equal(got, []string{"bob", "cyd"}) {
		t.Fatalf("with the Path view on bob the paths are %v (house order: bob, cyd)", got)
	}
	// Every link is traced; the simulated network reaches the peer at hop
	// 1, and a one-hop path is probed once and then left alone: it can
	// place nothing, and says so.
	for _, p := range ps {
		if !p.Available || !p.Complete || !p.OneHop || len(p.Hops) != 1 || p.DelayStarts != nil {
			t.Fatalf("path to %s: %+v", p.Peer, p)
		}
		h := p.Hops[0]
		if h.TTL != 1 || h.Link != "peer" || !h.Answered || h.Sent != 1 || h.Loss != 0 || !h.Addr.IsValid() {
			t.Fatalf("hop to %s: %+v", p.Peer, h)
		}
	}
	if len(s.trace.on) != 2 || len(s.trace.pinned) != 2 {
		t.Fatalf("traced links %v, pinned %v", s.trace.on, s.trace.pinned)
	}
	if v := s.View(w.now()); len(v.Paths) != 2 {
		t.Fatalf("the View holds %d paths", len(v.Paths))
	}
	if n := testing.AllocsPerRun(100, s.syncTrace); n != 0 {
		t.Fatalf("the policy allocates %v times a Tick with nothing changed", n)
	}
	s.ShowPath("")
	if got := pathPeers(s.Paths()); !slices.Equal(got, []string{"cyd"}) {
		t.Fatalf("with the Path view closed the paths are %v", got)
	}
	if _, ok := s.ep.Path(bob.s.self); !ok || s.trace.pinned[bob.s.self] || len(s.trace.pinned) != 1 {
		t.Fatalf("bob's link: pinned %v; want traced at the baseline's pace, not pinned", s.trace.pinned)
	}
}

// On a transport that cannot trace (the simulated network), a traced link
// is a PathView that says why it has no hops.
func TestUntraceablePathSaysWhy(t *testing.T) {
	w := newWorld(t, 2, lan30)
	ada := w.host("ada", Config{Trace: "bob"})
	bob := w.join("bob", RolePlayer, ada, Config{})
	if !w.runUntil(10*time.Second, started(ada, bob)) {
		t.Fatal("session did not start")
	}
	ps := ada.s.Paths()
	if len(ps) != 1 || ps[0].Peer != "bob" || ps[0].Available || ps[0].Why == "" || len(ps[0].Hops) != 0 {
		t.Fatalf("paths %+v", ps)
	}
	if len(bob.s.Paths()) != 0 {
		t.Fatal("bob traces without being asked")
	}
}

// --no-trace: nothing is traced, no probe leaves, and the Path view's link
// says why.
func TestNoTraceSendsNoProbes(t *testing.T) {
	w := newWorld(t, 3, lan30)
	ada := w.tracingHost("ada", Config{Players: 2, NoTrace: true})
	bob := w.join("bob", RolePlayer, ada, Config{})
	if !w.runUntil(10*time.Second, started(ada, bob)) {
		t.Fatal("session did not start")
	}
	w.runFor(5 * time.Second)
	s := ada.s
	if len(s.trace.on) != 0 || s.ep.Probes() != 0 {
		t.Fatalf("with --no-trace: traced %v, %d probes sent", s.trace.on, s.ep.Probes())
	}
	if ps := s.Paths(); len(ps) != 0 {
		t.Fatalf("paths %+v with nothing viewed", ps)
	}
	s.ShowPath("bob")
	w.runFor(3 * time.Second)
	ps := s.Paths()
	if len(ps) != 1 || ps[0].Available || ps[0].Why != noTraceWhy || s.ep.Probes() != 0 {
		t.Fatalf("the Path view on bob: %+v, %d probes", ps, s.ep.Probes())
	}
}

// A traced link's `path` line: every second while it bursts, and at the
// baseline's pace at most every 10 s unless its judgement changes.
func TestDuePathsCadence(t *testing.T) {
	w := newWorld(t, 4, lan30)
	ada := w.tracingHost("ada", Config{Players: 2, Trace: "bob"})
	bob := w.join("bob", RolePlayer, ada, Config{})
	if !w.runUntil(10*time.Second, started(ada, bob)) {
		t.Fatal("session did not start")
	}
	s := ada.s
	start := w.now()
	lines := 0
	for i := range 30 {
		lines += len(s.DuePaths(start + time.Duration(i)*time.Second))
	}
	if lines != 30 {
		t.Fatalf("a pinned link (bursting) printed %d lines in 30 s, want 30", lines)
	}
	// At the baseline's pace (not bursting): every 10 s while the
	// judgement holds, and at once when it changes.
	pv := s.Paths()[0]
	pv.Bursting = false
	due := 0
	for i := 1; i <= 30; i++ {
		v := pv
		if i == 15 {
			v.DelayStarts = &feed.PathStart{TTL: 1, Link: "lan"}
			pv = v
		}
		due += len(s.due(start+time.Minute+time.Duration(i)*time.Second, []feed.PathView{v}))
	}
	if due != 4 {
		t.Fatalf("%d lines in 30 s at the baseline's pace with one change, want 4 (at 1, 11, 15 and 25 s)", due)
	}
}

// The policy follows the members as they come and go, every machine on a
// transport that traces: a player's link is traced once it is linked, one
// that leaves the lobby or falls silent is forgotten, a watcher's is
// traced by the players only while the Path view shows it (the watcher
// traces its own links to them) and it watches, one the game removes is
// traced no more, and a pair that ends relayed is not traced. Every step of the world also checks that syncTrace,
// which looks at the members only when something it reads changed, never
// passes over a change (checkTraceSynced).
func TestTraceFollowsMembersComingAndGoing(t *testing.T) {
	traced := func(m *machine) (on, pinned []string) {
		for _, x := range m.s.members {
			if m.s.trace.on[x.ID] {
				on = append(on, x.Name)
			}
			if m.s.trace.pinned[x.ID] {
				pinned = append(pinned, x.Name)
			}
		}
		return on, pinned
	}
	check := func(w *world, m *machine, on, pinned []string) {
		t.Helper()
		gotOn, gotPinned := traced(m)
		if !slices.Equal(gotOn, on) || !slices.Equal(gotPinned, pinned) {
			t.Fatalf("at %v %s traces %v, pinned %v; want %v, pinned %v", w.now(), m.name, gotOn, gotPinned, on, pinned)
		}
	}

	w := newWorld(t, 15, lan30)
	w.hops = true
	alice := w.host("alice", Config{Players: 4})
	bob := w.join("bob", RolePlayer, alice, Config{})
	carol := w.join("carol", RolePlayer, alice, Config{})
	w.runFor(2 * time.Second)
	check(w, alice, []string{"bob", "carol"}, nil)
	check(w, bob, []string{"alice", "carol"}, nil)
	bob.quit()
	w.runUntil(3*time.Second, func() bool { return bob.s.Done() })
	w.runFor(2 * time.Second)
	check(w, alice, []string{"carol"}, nil)
	carol.vanish()
	w.runFor(maxLobbySilence + 2*time.Second)
	check(w, alice, nil, nil)
	w.join("dave", RolePlayer, alice, Config{})
	w.runFor(2 * time.Second)
	check(w, alice, []string{"dave"}, nil)

	const drop = 6 * time.Second
	w = newWorld(t, 11, lan30)
	w.hops = true
	alice = w.host("alice", Config{Players: 3, DropTimeout: drop})
	eve := w.join("eve", RoleObserver, alice, Config{})
	bob = w.join("bob", RolePlayer, alice, Config{})
	carol = w.join("carol", RolePlayer, alice, Config{})
	if !w.runUntil(10*time.Second, started(alice, bob, carol, eve)) {
		t.Fatal("session did not start")
	}
	w.runFor(5 * time.Second)
	check(w, alice, []string{"bob", "carol"}, nil)
	check(w, eve, []string{"alice", "bob", "carol"}, nil)
	alice.s.ShowPath("eve")
	w.after(alice)
	w.runFor(time.Second)
	check(w, alice, []string{"eve", "bob", "carol"}, []string{"eve"})
	eve.quit()
	w.runFor(time.Second)
	check(w, alice, []string{"bob", "carol"}, nil)
	alice.s.ShowPath("")
	w.after(alice)
	carol.vanish()
	if !w.runUntil(drop+5*time.Second, func() bool { _, ok := removedAt(alice, "carol"); return ok }) {
		t.Fatal("carol was not removed")
	}
	w.runFor(time.Second)
	check(w, alice, []string{"bob"}, nil)
	check(w, bob, []string{"alice"}, nil)

	// bob and dan behind NATs: their pair tries the address the host
	// saw, punches, and ends relayed, a link that is not traced.
	w = newWorld(t, 5, impair.Profile{Delay: 5 * time.Millisecond})
	w.hops = true
	ada := w.host("ada", Config{Players: 3})
	bob = w.joinAt(w.behind("bob", w.nat("10.0.1.1", false), "192.168.1.2:7373"), RolePlayer, ada.addr, Config{})
	dan := w.joinAt(w.behind("dan", w.nat("10.0.3.1", true), "192.168.3.2:7373"), RolePlayer, ada.addr, Config{})
	if !w.runUntil(10*time.Second, allStarted(ada, bob, dan)) {
		t.Fatal("game did not start")
	}
	if bob.s.pathTo("dan") != pathRelayed {
		t.Fatalf("bob → dan %v, want relayed", bob.s.pathTo("dan"))
	}
	w.runFor(2 * time.Second)
	check(w, ada, []string{"bob", "dan"}, nil)
	check(w, bob, []string{"ada"}, nil)
	check(w, dan, []string{"ada"}, nil)
}
