package live

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/session"
)

// world runs sessions on netcore's simulated network in virtual time, on
// simnet.Driver (the twin of this package's wall-clock Runner): the same
// Session code the live driver runs. It is a copy of probe/session's test
// world: that one is an in-package test (it reaches into the Session), and
// a shared test package would import session from session's own tests, a
// cycle Go forbids.
type world struct {
	t        testing.TB
	sched    *simnet.Scheduler
	net      *simnet.Network
	d        *simnet.Driver
	machines []*machine
	nextIP   byte
	seed     uint64
}

type machine struct {
	w      *world
	name   string
	addr   netip.AddrPort
	s      *session.Session
	h      *simnet.Host // the machine's node and wake-up on the one virtual driver
	tr     *recordingTransport
	events []probe.Event
	cks    map[int]uint32
}

// recordingTransport remembers what a machine sent, for the amplification
// and flood tests.
type recordingTransport struct {
	inner netcore.Transport
	keep  bool
	sent  []sentDatagram
}

type sentDatagram struct {
	at   time.Duration
	to   netip.AddrPort
	data []byte
}

func (r *recordingTransport) Send(to netip.AddrPort, p []byte) error {
	if r.keep {
		r.sent = append(r.sent, sentDatagram{to: to, data: append([]byte(nil), p...)})
	}
	return r.inner.Send(to, p)
}

func (r *recordingTransport) LocalAddr() netip.AddrPort { return r.inner.LocalAddr() }

func newWorld(t testing.TB, seed uint64, link impair.Profile) *world {
	sched := simnet.NewScheduler()
	w := &world{t: t, sched: sched, net: simnet.NewNetwork(sched, seed), nextIP: 1, seed: seed}
	w.d = simnet.NewDriver(w.net)
	w.net.SetDefault(link)
	return w
}

func (w *world) now() time.Duration { return w.sched.Now() }

// testRand is a deterministic source for tokens, nonces and secrets.
func testRand(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

func (w *world) attach(name string) *machine {
	m := &machine{w: w, name: name, cks: map[int]uint32{}}
	m.addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, w.nextIP}), 7373)
	w.nextIP++
	m.h = w.d.Attach(m.addr)
	m.tr = &recordingTransport{inner: m.h.Node()}
	return m
}

func (w *world) config(m *machine, cfg session.Config) session.Config {
	cfg.Name = m.name
	if cfg.CommandsPerMinute == 0 {
		cfg.CommandsPerMinute = 60
	}
	cfg.Seed = w.seed + uint64(len(w.machines))
	cfg.Rand = testRand(w.seed*7919 + uint64(len(w.machines)))
	cfg.Sink = probe.SinkFunc(func(from string, e probe.Event) { m.events = append(m.events, e) })
	cfg.OnFrame = func(f int, ck uint32) { m.cks[f] = ck }
	return cfg
}

func (w *world) host(name string, cfg session.Config) *machine {
	w.t.Helper()
	m := w.attach(name)
	s, err := session.NewHost(w.config(m, cfg), m.tr)
	if err != nil {
		w.t.Fatalf("host: %v", err)
	}
	m.s = s
	w.machines = append(w.machines, m)
	m.h.Drive(s)
	s.Flush()
	m.h.Wake()
	return m
}

func (w *world) join(name string, role session.Role, host *machine, cfg session.Config) *machine {
	w.t.Helper()
	m := w.attach(name)
	s, err := session.NewJoiner(w.config(m, cfg), role, m.tr, host.addr)
	if err != nil {
		w.t.Fatalf("join: %v", err)
	}
	m.s = s
	w.machines = append(w.machines, m)
	m.h.Drive(s)
	s.Flush()
	m.h.Wake()
	return m
}

// after re-arms m's wake-up after a call the test made itself (a
// Receive, a Quit): the driver does this after its own calls.
func (w *world) after(m *machine) { m.h.Wake() }

// vanish: the machine stops dead (SIGKILL): no removal, no leave.
func (m *machine) vanish() { m.h.Stop() }

// at runs fn at virtual time t.
func (w *world) at(t time.Duration, fn func()) { w.sched.At(t, fn) }

// runFor advances virtual time by d.
func (w *world) runFor(d time.Duration) { w.sched.RunUntil(w.sched.Now() + d) }

// runUntil advances until cond holds or limit passes; it reports cond.
func (w *world) runUntil(limit time.Duration, cond func() bool) bool {
	end := w.sched.Now() + limit
	for !cond() {
		next, ok := w.sched.Next()
		if !ok || next > end {
			w.sched.RunUntil(end)
			return cond()
		}
		w.sched.Step()
	}
	return true
}

func (m *machine) quit() {
	m.s.Quit(m.w.now())
	m.w.after(m)
}

// of returns m's events of one type, in order.
func of[E probe.Event](m *machine) []E {
	var out []E
	for _, e := range m.events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

func (m *machine) messages() []string {
	var out []string
	for _, e := range of[*probe.MessageEvent](m) {
		out = append(out, e.Text)
	}
	return out
}

func (m *machine) linkPeers() []netcore.PeerID { return m.s.Endpoint().Peers(nil) }

// timingKeys is what every machine must agree on about a timing event.
func timingKeys(m *machine) []string {
	var out []string
	for _, e := range of[*probe.TimingEvent](m) {
		out = append(out, fmt.Sprintf("f%d d%d %d/%d %dfps %s", e.Frame, e.Decided, e.SendPeriod, e.LookAhead, e.FPS, e.Reason))
	}
	return out
}

// removedAt is the frame of m's removal event for player.
func removedAt(m *machine, player string) (int, bool) {
	for _, e := range of[*probe.RemovedEvent](m) {
		if e.Player == player {
			return e.Frame, true
		}
	}
	return 0, false
}
