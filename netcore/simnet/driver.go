package simnet

import (
	"errors"
	"net/netip"
	"time"
)

// The virtual-time driver: the twin of the wall-clock Runner in probe/live.
// For every machine it drives, in this order:
//
//  1. the network hands a datagram to the machine's node: Receive at the
//     arrival time;
//  2. the machine's one wake-up event fires at its NextDeadline: Tick at
//     that virtual time;
//  3. after either, and after any outside call the owner reports with Wake,
//     the driver reads NextDeadline again and moves the wake-up there (or
//     cancels it), then calls the owner's OnStep hook.
//
// The wake-up is one Event per machine, moved rather than re-created, so a
// run does not allocate per wake-up, and it is only moved when the deadline
// changed, so the order of events at equal times is the order in which
// deadlines were first asked for — what makes a run repeat byte for byte.

// Machine is the sans-I/O state machine the Driver runs: netcore.Machine's
// method set (see its comment for the contract), written out here because
// simnet must not import netcore — netcore's own tests run on simnet, and Go
// forbids that cycle. The two interfaces have the same methods, so every
// netcore.Machine (Endpoint, Peer, Session) is a simnet.Machine and the
// other way round; netcore's tests check that at compile time.
type Machine interface {
	Receive(now time.Duration, from netip.AddrPort, datagram []byte)
	Tick(now time.Duration)
	NextDeadline() (time.Duration, bool)
}

// ErrIdle is returned by Driver.Run when no event is left before it was
// told to stop: every machine waits for something that will never come.
var ErrIdle = errors.New("simnet: no event left to run")

// ErrPastLimit is returned by Driver.Run when virtual time passed the run's
// limit before it was told to stop.
var ErrPastLimit = errors.New("simnet: virtual time passed the run's limit")

// Driver runs Machines on a Network's virtual time. Like the Scheduler under
// it, it is not safe for concurrent use.
type Driver struct {
	net *Network
}

// NewDriver returns a driver for machines on n.
func NewDriver(n *Network) *Driver { return &Driver{net: n} }

// Network is the network the driver's machines are attached to.
func (d *Driver) Network() *Network { return d.net }

// Host is one driven machine's place on the network: its node (the
// Transport the machine sends through) and its wake-up.
type Host struct {
	sched   *Scheduler
	node    *Node
	m       Machine
	wake    *Event
	stopped bool
	onStep  func()
}

// Attach puts a node on the network at addr for a machine that Drive names
// later: a machine usually needs its Transport, Node(), to be built.
func (d *Driver) Attach(addr netip.AddrPort) *Host {
	h := &Host{sched: d.net.Scheduler()}
	h.node = d.net.Attach(addr, h.receive)
	return h
}

// Node is the host's node on the network: the machine's Transport.
func (h *Host) Node() *Node { return h.node }

// Drive names the machine the host runs. It does not read the machine's
// deadline yet, so the owner can finish starting it: call Wake once it is
// ready to be ticked.
func (h *Host) Drive(m Machine) { h.m = m }

// OnStep sets a function called after every Receive and Tick the driver
// makes, once the wake-up is re-armed: where a run checks its stop condition
// or its timeline. It is not called for Wake.
func (h *Host) OnStep(fn func()) { h.onStep = fn }

// Wake re-reads the machine's NextDeadline and moves its wake-up there, or
// cancels it when nothing is due. The driver does this after its own calls;
// the owner calls it after any call of its own that may have moved the
// deadline (starting the machine, a send, a quit).
func (h *Host) Wake() {
	if h.stopped {
		return
	}
	d, ok := h.m.NextDeadline()
	// A deadline already past runs now; comparing it unclamped with a
	// wake-up already due now would move that wake-up behind every other
	// event due now for nothing.
	d = max(d, h.sched.Now())
	switch {
	case !ok:
		if h.wake != nil {
			h.wake.cancel()
		}
	case h.wake == nil:
		h.wake = h.sched.At(d, h.tick)
	case !h.wake.Pending() || h.wake.time() != d:
		h.wake.reschedule(d)
	}
}

// Stop takes the machine out of the world at once, as a killed process
// vanishes: its node leaves the network (see Network.Detach), its wake-up is
// cancelled and the driver never calls it again.
func (h *Host) Stop() {
	if h.stopped {
		return
	}
	h.stopped = true
	h.node.detach()
	if h.wake != nil {
		h.wake.cancel()
	}
}

// Stopped reports whether Stop was called.
func (h *Host) Stopped() bool { return h.stopped }

func (h *Host) receive(now time.Duration, from netip.AddrPort, p []byte) {
	if h.stopped {
		return
	}
	if h.m == nil {
		panic("simnet: datagram for a host before Drive named its machine")
	}
	h.m.Receive(now, from, p)
	h.step()
}

func (h *Host) tick() {
	if h.stopped {
		return
	}
	h.m.Tick(h.sched.Now())
	h.step()
}

func (h *Host) step() {
	h.Wake()
	if h.onStep != nil {
		h.onStep()
	}
}

// Run runs the scheduler until stop reports true (checked before each
// event; nil never stops), returning nil then. It returns ErrIdle when no
// event is left and ErrPastLimit once an event ran after virtual time limit,
// so a run whose machines stopped making progress ends.
func (d *Driver) Run(stop func() bool, limit time.Duration) error {
	s := d.net.Scheduler()
	for stop == nil || !stop() {
		if !s.Step() {
			return ErrIdle
		}
		if s.Now() > limit {
			return ErrPastLimit
		}
	}
	return nil
}
