// Package simworld is the simulated world the session tests run in:
// sessions on netcore's simulated network in virtual time, on
// simnet.Driver (the twin of probe/live's wall-clock Runner), so a test
// runs the same Session code the live driver runs, byte for byte
// repeatably from a seed.
//
// It holds the machinery that does not depend on the session type: the
// scheduler, network and driver, virtual time, addresses, the per-machine
// seeds and a recording transport. It does not import probe/session: that
// package's own (in-package) tests use it, and Go forbids the cycle. Each
// test package keeps a thin world of its own over it, with the session
// type, the hooks that collect a machine's events and the fields its tests
// reach into.
package simworld

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
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

// Attach puts the n-th machine on the network at 10.0.0.n, on lagscope's
// port, and returns its address and its place on the driver.
func (w *World) Attach(n byte) (netip.AddrPort, *simnet.Host) {
	a := addr(n)
	return a, w.D.Attach(a)
}

// addr is the n-th machine's address: 10.0.0.n, on lagscope's port.
func addr(n byte) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, n}), 7373)
}

// Seeds are the session seed and the random source (tokens, nonces,
// secrets) of the machine started i-th (from 0): deterministic, and
// different for every machine.
func (w *World) Seeds(i int) (seed uint64, r *rand.ChaCha8) {
	return w.Seed + uint64(i), chacha(w.Seed*7919 + uint64(i))
}

// chacha is a deterministic ChaCha8 source keyed by seed.
func chacha(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// Recorder is a transport that remembers what goes through it while Keep
// is set, for the tests that count a machine's datagrams (amplification,
// floods, rates).
type Recorder struct {
	Inner netcore.Transport
	Keep  bool
	Sent  []Sent
	// Divert, when set, sees every datagram first; one it returns true for
	// is not passed on (an attacker's test holds a machine's datagrams
	// back to send them from elsewhere).
	Divert func(to netip.AddrPort, p []byte) bool
}

// Sent is one datagram a Recorder passed on.
type Sent struct {
	To   netip.AddrPort
	Data []byte
}

// Send records p, when keeping, and passes it on.
func (r *Recorder) Send(to netip.AddrPort, p []byte) error {
	if r.Divert != nil && r.Divert(to, p) {
		return nil
	}
	if r.Keep {
		r.Sent = append(r.Sent, Sent{To: to, Data: append([]byte(nil), p...)})
	}
	return r.Inner.Send(to, p)
}

// LocalAddr is the inner transport's address.
func (r *Recorder) LocalAddr() netip.AddrPort { return r.Inner.LocalAddr() }
