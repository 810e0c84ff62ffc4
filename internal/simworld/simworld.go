// Package simworld is the simulated world the session tests run in:
// sessions on netcore's simulated network in virtual time, on
// simnet.Driver (the twin of probe/live's wall-clock Runner), so a test
// runs the same Session code the live driver runs, byte for byte
// repeatably from a seed.
//
// It holds the machinery that does not depend on the session type: the
// scheduler, network and driver, virtual time, addresses, the per-machine
// config defaults, starting a driven machine, a recording transport and
// the filters over a machine's events. It does not import probe/session:
// that package's own (in-package) tests use it, and Go forbids the cycle.
// Each test package keeps a thin world of its own over it, with the
// session type and the fields its tests reach into.
package simworld

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe"
)

// World is one virtual network: a scheduler, the network on it and the
// driver that runs machines attached to it.
type World struct {
	Sched *simnet.Scheduler
	Net   *simnet.Network
	D     *simnet.Driver
	Seed  uint64 // the network's seed; machines' seeds derive from it
}

// New returns a world whose links all behave as link unless set otherwise.
func New(seed uint64, link impair.Profile) *World {
	sched := simnet.NewScheduler()
	w := &World{Sched: sched, Net: simnet.NewNetwork(sched, seed), Seed: seed}
	w.D = simnet.NewDriver(w.Net)
	w.Net.SetDefault(link)
	return w
}

// Now is the world's virtual time.
func (w *World) Now() time.Duration { return w.Sched.Now() }

// At runs fn at virtual time t.
func (w *World) At(t time.Duration, fn func()) { w.Sched.At(t, fn) }

// RunFor advances virtual time by d.
func (w *World) RunFor(d time.Duration) { w.Sched.RunUntil(w.Sched.Now() + d) }

// RunUntil advances until cond holds or limit passes; it reports cond.
func (w *World) RunUntil(limit time.Duration, cond func() bool) bool {
	end := w.Sched.Now() + limit
	for !cond() {
		next, ok := w.Sched.Next()
		if !ok || next > end {
			w.Sched.RunUntil(end)
			return cond()
		}
		w.Sched.Step()
	}
	return true
}

// Attach puts the n-th machine on the network at Addr(n) and returns its
// address and its place on the driver.
func (w *World) Attach(n byte) (netip.AddrPort, *simnet.Host) {
	addr := Addr(n)
	return addr, w.D.Attach(addr)
}

// Addr is the n-th machine's address: 10.0.0.n, on lagscope's port.
func Addr(n byte) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, n}), 7373)
}

// CommandsPerMinute is the command rate a machine's config gets when the
// test leaves it zero.
const CommandsPerMinute = 60

// MachineSeed is the session seed of the machine started i-th (from 0).
func (w *World) MachineSeed(i int) uint64 { return w.Seed + uint64(i) }

// MachineRand is the random source (tokens, nonces, secrets) of the
// machine started i-th: deterministic, and different for every machine.
func (w *World) MachineRand(i int) *rand.ChaCha8 { return Rand(w.Seed*7919 + uint64(i)) }

// Rand is a deterministic ChaCha8 source keyed by seed.
func Rand(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// Record returns a machine's Sink and OnFrame hook: the sink appends every
// event to *events, the hook stores each executed frame's checksum in
// *cks. Both read the pointer at each call, so a test may reset either.
func Record(events *[]probe.Event, cks *map[int]uint32) (probe.Sink, func(frame int, ck uint32)) {
	sink := probe.SinkFunc(func(_ string, e probe.Event) { *events = append(*events, e) })
	onFrame := func(f int, ck uint32) { (*cks)[f] = ck }
	return sink, onFrame
}

// Session is what the world needs of a session: the driven machine, its
// flush of what its constructor queued, and its quit.
type Session interface {
	simnet.Machine
	Flush()
	Quit(now time.Duration)
}

// Start has h drive s: the driver delivers s's datagrams and wakes it at
// its deadlines from now on. It flushes what s's constructor queued and
// arms the first wake-up.
func Start(h *simnet.Host, s Session) {
	h.Drive(s)
	s.Flush()
	h.Wake()
}

// Quit has s leave the session now and re-arms its wake-up, as the driver
// does after its own calls.
func (w *World) Quit(h *simnet.Host, s Session) {
	s.Quit(w.Now())
	h.Wake()
}

// Of returns the events of one type, in order.
func Of[E probe.Event](events []probe.Event) []E {
	var out []E
	for _, e := range events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// Messages returns the texts of the message events, in order.
func Messages(events []probe.Event) []string {
	var out []string
	for _, e := range Of[*probe.MessageEvent](events) {
		out = append(out, e.Text)
	}
	return out
}

// TimingKeys is what every machine must agree on about its timing events:
// frame, decision frame, timing, frame rate and reason of each (S12, S15).
func TimingKeys(events []probe.Event) []string {
	var out []string
	for _, e := range Of[*probe.TimingEvent](events) {
		out = append(out, fmt.Sprintf("f%d d%d %d/%d %dfps %s", e.Frame, e.Decided, e.SendPeriod, e.LookAhead, e.FPS, e.Reason))
	}
	return out
}

// Recorder is a transport that remembers what goes through it while Keep
// is set, for the tests that count a machine's datagrams (amplification,
// floods, rates).
type Recorder struct {
	Inner netcore.Transport
	Keep  bool
	Sent  []Sent
}

// Sent is one datagram a Recorder passed on.
type Sent struct {
	To   netip.AddrPort
	Data []byte
}

// Send records p, when keeping, and passes it on.
func (r *Recorder) Send(to netip.AddrPort, p []byte) error {
	if r.Keep {
		r.Sent = append(r.Sent, Sent{To: to, Data: append([]byte(nil), p...)})
	}
	return r.Inner.Send(to, p)
}

// LocalAddr is the inner transport's address.
func (r *Recorder) LocalAddr() netip.AddrPort { return r.Inner.LocalAddr() }
