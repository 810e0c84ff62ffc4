// Package simnet is the simulated world lagscope's engine runs in: a
// deterministic discrete-event Scheduler over virtual time, an in-memory
// Network of Nodes whose datagrams go through the impairment model
// (netcore/impair) per direction, and the Driver that runs any sans-I/O
// Machine (netcore's Endpoint, probe's Peer, the Session) on them — the
// virtual-time twin of the wall-clock Runner in probe/live.
//
// Everything runs on one goroutine, the one calling Step/Run; nothing here
// reads the wall clock or a global random source. Given the same seed and the
// same sequence of calls, a simulation delivers the same datagrams at the same
// virtual times in the same order — the determinism `lagscope sim` promises
// (docs/architecture.md, "One engine, two worlds").
//
// A Node satisfies netcore.Transport and simnet.Machine is netcore.Machine's
// method set, both structurally: simnet does not import netcore so that
// netcore's own tests can run on it. The network drops
// datagrams after the sender numbered them, so receivers observe real gaps
// (SPEC L2), and it reports its own drops as asked-for loss, never as
// measured loss (SPEC L7).
package simnet

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/internal/minheap"
)

// Event is a function scheduled to run at a virtual time. Events created by
// At belong to the caller, who may Cancel or Reschedule them at any
// time, including after they ran.
type Event struct {
	node  minheap.Node[*Event] // its time and order, and its place in the queue
	owner *Scheduler
	fn    func()

	// A datagram in flight: pooled by the Network, never handed out.
	net      *Network
	from, to netip.AddrPort
	buf      []byte
	queued   bool // through its receiver's down queue already (queue.go)
}

// Scheduler runs events in order of virtual time and, for equal times, in
// the order they were scheduled. It is not safe for concurrent use: one
// goroutine drives a simulation.
type Scheduler struct {
	now  time.Duration
	seq  uint64 // insertion order, the tie-breaker for equal times
	heap minheap.Heap[*Event]
	free []*Event // spent datagram events, reused so delivery does not allocate
}

// NewScheduler returns a scheduler whose clock reads zero.
func NewScheduler() *Scheduler { return &Scheduler{} }

// Now is the virtual time: the time of the event running, or of the last
// one run, or what RunUntil advanced it to.
func (s *Scheduler) Now() time.Duration { return s.now }

// Pending is the number of events waiting to run.
func (s *Scheduler) Pending() int { return s.heap.Len() }

// Next returns the time of the earliest pending event.
func (s *Scheduler) Next() (time.Duration, bool) {
	if top := s.heap.Top(); top != nil {
		return top.Key.At, true
	}
	return 0, false
}

// At schedules fn to run at virtual time t. A time already past runs at Now,
// after the events already due then.
func (s *Scheduler) At(t time.Duration, fn func()) *Event {
	if fn == nil {
		panic("simnet: At with a nil function")
	}
	e := &Event{fn: fn}
	e.node.Val = e
	s.push(e, t)
	return e
}

// after schedules fn to run d after Now.
func (s *Scheduler) after(d time.Duration, fn func()) *Event {
	return s.At(s.now+d, fn)
}

// cancel stops e from running. It reports whether e was pending.
func (e *Event) cancel() bool {
	if !e.node.InHeap() {
		return false
	}
	e.owner.heap.Remove(&e.node)
	return true
}

// reschedule moves e to time t (Now if t is past), whether it is pending,
// cancelled or has already run. It counts as a new insertion for ordering
// among events at the same time. Reusing one event this way is how a driver
// re-arms a peer's wake-up without allocating.
func (e *Event) reschedule(t time.Duration) {
	s := e.owner
	if e.node.InHeap() {
		s.heap.Remove(&e.node)
	}
	s.push(e, t)
}

// time is when e runs, or last ran.
func (e *Event) time() time.Duration { return e.node.Key.At }

// Pending reports whether e is waiting to run.
func (e *Event) Pending() bool { return e.node.InHeap() }

// Step runs the earliest pending event and reports whether there was one.
func (s *Scheduler) Step() bool {
	if s.heap.Len() == 0 {
		return false
	}
	e := s.heap.Pop().Val
	s.now = e.node.Key.At
	if e.net != nil {
		e.net.deliver(e)
		if !e.node.InHeap() { // not queued again: spent
			e.net, e.buf, e.queued = nil, e.buf[:0], false
			s.free = append(s.free, e)
		}
		return true
	}
	e.fn()
	return true
}

// RunUntil runs every event due at or before t, then sets the clock to t if
// it is later than the last event run.
func (s *Scheduler) RunUntil(t time.Duration) {
	for {
		if next, ok := s.Next(); !ok || next > t {
			break
		}
		s.Step()
	}
	s.now = max(s.now, t)
}

// Run runs events until stop reports true (checked before each event) or no
// event is left. A nil stop runs until the queue is empty.
func (s *Scheduler) Run(stop func() bool) {
	for stop == nil || !stop() {
		if !s.Step() {
			return
		}
	}
}

// pooled returns a datagram event from the free list.
func (s *Scheduler) pooled() *Event {
	if n := len(s.free); n > 0 {
		e := s.free[n-1]
		s.free = s.free[:n-1]
		return e
	}
	e := &Event{}
	e.node.Val = e
	return e
}

func (s *Scheduler) push(e *Event, t time.Duration) {
	e.owner = s
	e.node.Key = minheap.Key{At: max(t, s.now), Seq: s.seq}
	s.heap.Push(&e.node)
	s.seq++
}
