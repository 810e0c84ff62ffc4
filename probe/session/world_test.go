package session

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/simworld"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

// world runs sessions in internal/simworld's virtual-time world. It is the
// session tests' thin wrapper over it: the machine holds a *Session, whose
// internals these tests read, and the fields keep the short names the
// tests (and their own attach variants, such as behind) use.
type world struct {
	sim      *simworld.World
	t        testing.TB
	sched    *simnet.Scheduler // sim's scheduler, network and driver
	net      *simnet.Network
	d        *simnet.Driver
	machines []*machine
	nextIP   byte // the last byte of the next attached machine's address
	// hops: host and join give every machine a transport that traces
	// (hopNode).
	hops bool
}

type machine struct {
	w      *world
	name   string
	addr   netip.AddrPort
	s      *Session
	h      *simnet.Host // the machine's node and wake-up on the one virtual driver
	tr     *simworld.Recorder
	events []feed.Event
	cks    map[int]uint32
}

func newWorld(t testing.TB, seed uint64, link impair.Profile) *world {
	sim := simworld.New(seed, link)
	return &world{sim: sim, t: t, sched: sim.Sched, net: sim.Net, d: sim.D, nextIP: 1}
}

func (w *world) now() time.Duration { return w.sim.Now() }

func (w *world) attach(name string) *machine {
	m := &machine{w: w, name: name, cks: map[int]uint32{}}
	m.addr, m.h = w.sim.Attach(w.nextIP)
	w.nextIP++
	m.tr = &simworld.Recorder{Inner: m.h.Node()}
	return m
}

// commandsPerMinute is the command rate a machine's config gets when the
// test leaves it zero.
const commandsPerMinute = 60

// config fills in what every machine of the world gets: its name, its
// seeds, and the hooks that collect its events and frame checksums.
func (w *world) config(m *machine, cfg Config) Config {
	cfg.Name = m.name
	if cfg.CommandsPerMinute == 0 {
		cfg.CommandsPerMinute = commandsPerMinute
	}
	cfg.Seed, cfg.Rand = w.sim.Seeds(len(w.machines))
	// The hooks read m's fields at each call, so a test may reset either.
	cfg.Sink = feed.SinkFunc(func(_ string, e feed.Event) { m.events = append(m.events, e) })
	cfg.OnFrame = func(f int, ck uint32) { m.cks[f] = ck }
	return cfg
}

// start records s as m's session and has the driver run it.
func (w *world) start(m *machine, s *Session) *machine {
	m.s = s
	w.machines = append(w.machines, m)
	// The driver delivers s's datagrams and wakes it at its deadlines from
	// now on; what its constructor queued goes out now.
	m.h.Drive(s)
	m.h.OnStep(func() { checkTraceSynced(w.t, s) })
	s.Flush()
	m.h.Wake()
	return m
}

func (w *world) host(name string, cfg Config) *machine {
	w.t.Helper()
	m := w.attach(name)
	s, err := NewHost(w.config(m, cfg), w.transport(m))
	if err != nil {
		w.t.Fatalf("host: %v", err)
	}
	return w.start(m, s)
}

func (w *world) join(name string, role Role, host *machine, cfg Config) *machine {
	w.t.Helper()
	m := w.attach(name)
	s, err := NewJoiner(w.config(m, cfg), role, w.transport(m), host.addr)
	if err != nil {
		w.t.Fatalf("join: %v", err)
	}
	return w.start(m, s)
}

// transport is what m's session sends through: its recorder, tracing
// when the world's machines trace.
func (w *world) transport(m *machine) netcore.Transport {
	if w.hops {
		return hopNode{m.tr}
	}
	return m.tr
}

// after re-arms m's wake-up after a call the test made itself (a
// Receive, a Quit): the driver does this after its own calls.
func (w *world) after(m *machine) { m.h.Wake() }

// vanish: the machine stops dead (SIGKILL): no removal, no leave.
func (m *machine) vanish() { m.h.Stop() }

// at runs fn at virtual time t.
func (w *world) at(t time.Duration, fn func()) { w.sim.Sched.At(t, fn) }

// runFor advances virtual time by d.
func (w *world) runFor(d time.Duration) { w.sim.Sched.RunUntil(w.sim.Now() + d) }

// runUntil advances until cond holds or limit passes; it reports cond.
func (w *world) runUntil(limit time.Duration, cond func() bool) bool {
	return w.sim.RunUntil(limit, cond)
}

// quit has m leave the session now and re-arms its wake-up, as the driver
// does after its own calls.
func (m *machine) quit() {
	m.s.Quit(m.w.now())
	m.h.Wake()
}

// of returns m's events of one type, in order.
func of[E feed.Event](m *machine) []E {
	var out []E
	for _, e := range m.events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// messages returns the texts of m's message events, in order.
func (m *machine) messages() []string {
	var out []string
	for _, e := range of[*feed.MessageEvent](m) {
		out = append(out, e.Text)
	}
	return out
}

func (m *machine) linkPeers() []netcore.PeerID { return m.s.endpoint().Peers(nil) }

// checkTraceSynced fails the test when s's policy names other links than
// tracedNames says from the latest diagnosis (wantedNames keeps its
// answer), or when syncTrace would miss a change: nothing it reads
// changed since it last looked at the members, so its next Tick will not
// look, yet a look would turn a trace on or off, pin or unpin one, or
// forget one. Every machine of the world is checked after each Receive
// and Tick.
func checkTraceSynced(tb testing.TB, s *Session) {
	tb.Helper()
	var d *diagnosis.Diagnosis
	if s.peer != nil {
		d = s.peer.LastDiagnosis()
	}
	want := tracedNames(nil, s.cfg.Name, s.cfg.Trace, s.trace.viewed, d)
	if r := s.load.run; r != nil && r.tester && !slices.Contains(want, r.m.Name) {
		want = append(want, r.m.Name)
	}
	names := s.wantedNames()
	if !slices.Equal(names, want) {
		tb.Fatalf("%s: the policy names %v, tracedNames %v", s.cfg.Name, names, want)
	}
	can, _ := s.ep.TraceAvailable()
	if !s.traceSynced(names, can) {
		return
	}
	if n, _ := s.scanTrace(names, can, false); n > 0 {
		tb.Fatalf("%s: %d trace changes no Tick will make (names %v, traced %v, pinned %v)", s.cfg.Name, n, names, s.trace.on, s.trace.pinned)
	}
}
