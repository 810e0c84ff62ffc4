package simnet

import (
	"fmt"
	"math"
	"net/netip"
	"time"
)

// Bottleneck queues on access links. A home line is slower than the LAN in
// front of it and the core behind it, and its modem (up) and its ISP's
// router (down) hold what the line cannot carry yet in a first-in,
// first-out queue: a datagram waits for the bytes ahead of it to drain at
// the line's rate, then takes its own transmission time; one that arrives
// at a full queue is dropped at the tail. Every datagram crossing the
// line waits in it — the game's as well as a load test's — which is what
// makes a loaded line slow (bufferbloat).
//
// Where the queue sits: on the link out of the access link's first router
// (the line to the ISP), or at the node's end of the access link when it
// lists no routers. So a datagram the node sends joins the up queue when
// it is sent, after the LAN's loss and before the routers' losses; a
// datagram reaching the node joins the down queue when it arrives and is
// handed over once through it, so arrivals from every sender queue in the
// order they arrive. A probe that stops at the node's first router, and
// that router's answer, cross neither queue; a probe to any later router
// crosses the up queue and the router's answer the down queue. A probe
// that stops at the far end's home router crosses only the sender's
// queues. Queues draw nothing from the random streams, so setting none
// changes no run.

// Queue is one direction of an access link's bottleneck.
type Queue struct {
	// Rate is the line's rate in bit/s; 0 is no bottleneck: nothing
	// waits.
	Rate float64
	// Limit is the most bytes the queue holds, the datagram being sent
	// included: a datagram that would take it past Limit is dropped.
	Limit int
}

// fifo is a Queue and its state: when the bytes queued so far have all
// left, and how many datagrams it dropped.
type fifo struct {
	Queue
	busy    time.Duration
	dropped uint64
}

// admit queues a datagram of size bytes arriving at now: it returns when
// the datagram's last byte has left, or false when the queue is full.
// Without a bottleneck it leaves at once.
func (q *fifo) admit(now time.Duration, size int) (time.Duration, bool) {
	if q.Rate <= 0 {
		return now, true
	}
	// The backlog is whole bytes give or take the clock's nanoseconds: a
	// hair of tolerance keeps a queue that fits exactly from rounding
	// itself full.
	backlog := max(q.busy-now, 0).Seconds() * q.Rate / 8
	if backlog+float64(size) > float64(q.Limit)+1e-6 {
		q.dropped++
		return 0, false
	}
	tx := time.Duration(math.Round(float64(8*size) / q.Rate * float64(time.Second)))
	q.busy = max(q.busy, now) + tx
	return q.busy, true
}

// onLine is a datagram's size on the line: its UDP payload and the IP and
// UDP headers around it.
func onLine(peer netip.AddrPort, payload int) int {
	if peer.Addr().Is4() {
		return payload + 20 + 8
	}
	return payload + 40 + 8
}

// icmpSize is the size on the line of a router's answer quoting quote
// bytes: the answer's IP and ICMP headers, then the quote.
func icmpSize(router netip.Addr, quote int) int {
	if router.Is4() {
		return 20 + 8 + quote
	}
	return 40 + 8 + quote
}

// SetAccessQueue sets the bottleneck queues of the access link of the node
// at addr: up for what it sends, down for what it receives; a zero Queue
// is none. Bytes already queued leave when they were going to. A node
// without an access link gets one that adds nothing else. It panics on a
// negative or non-finite rate, or a queue with a rate that holds nothing;
// validate outside input first.
func (n *Network) SetAccessQueue(addr netip.AddrPort, up, down Queue) {
	for _, q := range []Queue{up, down} {
		if q.Rate < 0 || math.IsInf(q.Rate, 0) || math.IsNaN(q.Rate) || q.Limit < 0 || (q.Rate > 0 && q.Limit == 0) {
			panic(fmt.Sprintf("simnet: bad queue %+v", q))
		}
	}
	a, ok := n.access[addr]
	if !ok {
		if up.Rate == 0 && down.Rate == 0 {
			return
		}
		n.SetAccess(addr, zeroProfile, zeroProfile)
		a = n.access[addr]
	}
	a.upQ.Queue, a.downQ.Queue = up, down
	n.downQueues = 0
	for _, a := range n.access {
		if a.downQ.Rate > 0 {
			n.downQueues++
		}
	}
}

// queueDown runs a datagram that has just arrived through its receiver's
// down queue: it reports true when the queue took the event (dropped it,
// or pushed it back to leave the queue later), false when it is to be
// handed over now.
func (n *Network) queueDown(e *Event) bool {
	if n.downQueues == 0 || e.queued {
		e.queued = false
		return false
	}
	a, ok := n.access[e.to]
	if !ok || a.downQ.Rate <= 0 {
		return false
	}
	at, ok := a.downQ.admit(n.sched.now, onLine(e.from, len(e.buf)))
	if ok {
		e.queued = true
		n.sched.push(e, at)
	}
	return true
}

// queueAnswer hands a router's answer that crosses the line to nd through
// nd's down queue, when it has one, before nd's socket sees it.
func (n *Network) queueAnswer(nd *Node, ans ICMPAnswer) {
	a, ok := n.access[nd.addr]
	if !ok || a.downQ.Rate <= 0 {
		nd.takeAnswer(ans)
		return
	}
	at, ok := a.downQ.admit(n.sched.now, icmpSize(ans.From, len(ans.Quote)))
	if !ok {
		return
	}
	ans.At = at
	n.sched.At(at, func() { nd.takeAnswer(ans) })
}

// queueStats adds every queue's drops to st.
func (n *Network) queueStats(st *Stats) {
	for _, a := range n.access {
		st.QueueDropped += a.upQ.dropped + a.downQ.dropped
	}
}
