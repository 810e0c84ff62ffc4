package simnet

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// toy is a Machine that wants a Tick every `every` until `until`, sends
// "ping" to `to` on each Tick (when set), and logs what it was handed.
type toy struct {
	name         string
	node         *Node
	to           netip.AddrPort
	next, every  time.Duration
	until        time.Duration
	log          *[]string
	ticks, recvs int
}

func (m *toy) Receive(now time.Duration, from netip.AddrPort, p []byte) {
	m.recvs++
	if m.log == nil {
		return
	}
	*m.log = append(*m.log, fmt.Sprintf("%v %s got %s from %v", now, m.name, p, from))
}

func (m *toy) Tick(now time.Duration) {
	if now < m.next && m.log != nil {
		*m.log = append(*m.log, fmt.Sprintf("%v %s ticked early (due %v)", now, m.name, m.next))
	}
	m.ticks++
	if m.log != nil {
		*m.log = append(*m.log, fmt.Sprintf("%v %s tick", now, m.name))
	}
	if m.to.IsValid() {
		m.node.Send(m.to, []byte("ping"))
	}
	m.next = now + m.every
}

func (m *toy) NextDeadline() (time.Duration, bool) { return m.next, m.every > 0 && m.next <= m.until }

var (
	hostA = netip.MustParseAddrPort("10.9.0.1:1")
	hostB = netip.MustParseAddrPort("10.9.0.2:1")
)

func drive(d *Driver, addr netip.AddrPort, m *toy) *Host {
	h := d.Attach(addr)
	m.node = h.Node()
	h.Drive(m)
	h.Wake()
	return h
}

// The driver ticks a machine at each deadline it names, hands it every
// datagram at its arrival time, and ends with ErrIdle once nothing is due.
func TestDriverTicksAtDeadlinesAndDelivers(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetLink(hostA, hostB, impair.Profile{Delay: 3 * time.Millisecond})
	d := NewDriver(n)
	var log []string
	a := &toy{name: "a", to: hostB, next: 10 * time.Millisecond, every: 10 * time.Millisecond, until: 30 * time.Millisecond, log: &log}
	b := &toy{name: "b", log: &log}
	drive(d, hostA, a)
	drive(d, hostB, b)
	if err := d.Run(nil, time.Hour); !errors.Is(err, ErrIdle) {
		t.Fatalf("Run = %v, want ErrIdle", err)
	}
	want := []string{
		"10ms a tick", "13ms b got ping from 10.9.0.1:1",
		"20ms a tick", "23ms b got ping from 10.9.0.1:1",
		"30ms a tick", "33ms b got ping from 10.9.0.1:1",
	}
	if !slices.Equal(log, want) {
		t.Errorf("run:\n%q\nwant\n%q", log, want)
	}
}

// Two machines due at the same time tick in the order their deadlines were
// first asked for, and a Wake that finds the deadline unchanged keeps that
// place: what makes a run repeat byte for byte.
func TestDriverKeepsOrderAtEqualDeadlines(t *testing.T) {
	s := NewScheduler()
	d := NewDriver(NewNetwork(s, 1))
	var log []string
	a := &toy{name: "a", next: 5 * time.Millisecond, every: 5 * time.Millisecond, until: 5 * time.Millisecond, log: &log}
	b := &toy{name: "b", next: 5 * time.Millisecond, every: 5 * time.Millisecond, until: 5 * time.Millisecond, log: &log}
	ha := drive(d, hostA, a)
	hb := drive(d, hostB, b)
	ha.Wake() // nothing changed: a stays first
	s.RunUntil(time.Second)
	if want := []string{"5ms a tick", "5ms b tick"}; !slices.Equal(log, want) {
		t.Errorf("ticks %q, want %q", log, want)
	}
	// A deadline that moved is a new insertion: b, re-armed first, now
	// comes first, however often a is woken without a change.
	log = nil
	a.next, a.until, b.next, b.until = 2*time.Second, 2*time.Second, 2*time.Second, 2*time.Second
	hb.Wake()
	ha.Wake()
	ha.Wake()
	s.RunUntil(3 * time.Second)
	if want := []string{"2s b tick", "2s a tick"}; !slices.Equal(log, want) {
		t.Errorf("ticks %q, want %q", log, want)
	}
}

// Wake after an outside call moves the wake-up: earlier, later, or away
// when the machine has nothing due.
func TestDriverWakeFollowsTheDeadline(t *testing.T) {
	s := NewScheduler()
	d := NewDriver(NewNetwork(s, 1))
	var log []string
	m := &toy{name: "m", next: time.Second, every: time.Second, until: time.Hour, log: &log}
	h := drive(d, hostA, m)
	m.next = 100 * time.Millisecond
	h.Wake()
	s.RunUntil(150 * time.Millisecond)
	m.next = 500 * time.Millisecond
	h.Wake()
	s.RunUntil(450 * time.Millisecond)
	m.every = 0 // nothing due any more
	h.Wake()
	s.RunUntil(time.Hour)
	if want := []string{"100ms m tick"}; !slices.Equal(log, want) {
		t.Errorf("ticks %q, want %q", log, want)
	}
	if s.Pending() != 0 {
		t.Errorf("%d events pending after the machine had nothing due", s.Pending())
	}
}

// OnStep runs after every Receive and Tick, with the wake-up already moved.
func TestDriverOnStepSeesTheNewDeadline(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	d := NewDriver(n)
	a := &toy{name: "a", to: hostB, next: 10 * time.Millisecond, every: 10 * time.Millisecond, until: 20 * time.Millisecond}
	b := &toy{name: "b", log: new([]string)}
	ha := drive(d, hostA, a)
	hb := drive(d, hostB, b)
	var steps []string
	ha.OnStep(func() {
		next, _ := s.Next()
		steps = append(steps, fmt.Sprintf("a %v next %v pending %v", s.Now(), next, s.Pending()))
	})
	hb.OnStep(func() { steps = append(steps, fmt.Sprintf("b %v recvs %d", s.Now(), b.recvs)) })
	s.RunUntil(time.Second)
	want := []string{
		"a 10ms next 10ms pending 2", // the ping (instant) and a's wake at 20 ms
		"b 10ms recvs 1",
		"a 20ms next 20ms pending 1", // the ping; a has nothing due after 20 ms
		"b 20ms recvs 2",
	}
	if !slices.Equal(steps, want) {
		t.Errorf("steps:\n%q\nwant\n%q", steps, want)
	}
}

// Stop is a vanished machine: datagrams in flight to it are lost, it is
// never ticked again and its node can no longer send.
func TestDriverStopVanishes(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetLink(hostA, hostB, impair.Profile{Delay: 50 * time.Millisecond})
	d := NewDriver(n)
	a := &toy{name: "a", to: hostB, next: 0, every: 10 * time.Millisecond, until: 100 * time.Millisecond}
	b := &toy{name: "b", next: 0, every: 10 * time.Millisecond, until: time.Hour, log: new([]string)}
	drive(d, hostA, a)
	hb := drive(d, hostB, b)
	s.At(55*time.Millisecond, hb.Stop)
	s.RunUntil(time.Second)
	if !hb.Stopped() || b.recvs != 1 || b.ticks != 6 {
		t.Errorf("stopped %v, b received %d (want 1, the ping sent at 0) and ticked %d times (want 6, 0–50 ms)", hb.Stopped(), b.recvs, b.ticks)
	}
	if st := n.Stats(); st.Unreachable != 10 {
		t.Errorf("%d pings unreachable, want 10 (sent at 10–100 ms)", st.Unreachable)
	}
	if err := hb.Node().Send(hostA, []byte("x")); !errors.Is(err, errDetached) {
		t.Errorf("Send from a stopped host: %v, want ErrDetached", err)
	}
	hb.Wake() // harmless
	if s.Pending() != 0 {
		t.Errorf("Wake on a stopped host scheduled something")
	}
}

// Run stops when told to and gives up past its limit.
func TestDriverRunStopsAndLimits(t *testing.T) {
	s := NewScheduler()
	d := NewDriver(NewNetwork(s, 1))
	m := &toy{name: "m", next: 0, every: time.Second, until: 1 << 62}
	drive(d, hostA, m)
	if err := d.Run(func() bool { return m.ticks == 3 }, time.Hour); err != nil || s.Now() != 2*time.Second {
		t.Errorf("Run until 3 ticks: %v at %v, want nil at 2s", err, s.Now())
	}
	if err := d.Run(nil, 10*time.Second); !errors.Is(err, ErrPastLimit) || s.Now() != 11*time.Second {
		t.Errorf("Run to 10s: %v at %v, want ErrPastLimit at 11s", err, s.Now())
	}
}

// Ticks and deliveries do not allocate: the wake-up is one moved event and
// datagram events are pooled (the hot path of every simulation).
func TestDriverStepsDoNotAllocate(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	d := NewDriver(n)
	a := &toy{name: "a", to: hostB, next: 0, every: time.Millisecond, until: 1 << 62}
	b := &toy{name: "b"}
	drive(d, hostA, a)
	drive(d, hostB, b)
	s.RunUntil(10 * time.Millisecond) // warm the pools
	allocs := testing.AllocsPerRun(100, func() { s.RunUntil(s.Now() + time.Millisecond) })
	if allocs != 0 || b.recvs < 100 {
		t.Errorf("%v allocations per tick and delivery (b received %d), want 0", allocs, b.recvs)
	}
}

// A deadline already past, asked for while the wake-up is due now, leaves
// the wake-up where it is: it is not moved behind the other events due now.
func TestDriverPastDeadlineKeepsItsPlace(t *testing.T) {
	s := NewScheduler()
	d := NewDriver(NewNetwork(s, 1))
	var log []string
	m := &toy{name: "m", next: time.Second, every: time.Second, until: time.Second, log: &log}
	var h *Host
	s.At(time.Second, func() {
		log = append(log, "y moves the deadline into the past")
		m.next = 900 * time.Millisecond
		h.Wake()
	})
	h = drive(d, hostA, m)
	s.At(time.Second, func() { log = append(log, "x") })
	s.RunUntil(2 * time.Second)
	want := []string{"y moves the deadline into the past", "1s m tick", "x"}
	if !slices.Equal(log, want) {
		t.Errorf("order %q, want %q", log, want)
	}
}
