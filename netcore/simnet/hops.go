package simnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Routers on access links. A node's access link may list the routers a
// datagram leaving the node meets, in order (its home router, its ISP's
// routers): Hop. They matter only to a datagram sent with a hop limit of
// its own (SendHopLimit), and through their loss to every datagram the
// node sends. The path from a to b, as a hop-limited datagram from a sees
// it, is
//
//  1. a's hops, in order;
//  2. when b's access link lists hops, b's first hop (its home router),
//     answering from b's address as a NAT router does from outside: the
//     rest of b's hops are behind it, and the core has no routers of its
//     own;
//  3. b itself, reached as by any datagram.
//
// A datagram whose hop limit runs out at a router dies there; a router
// with an address answers it with ICMP Time Exceeded (ICMPAnswer), within
// its rate limit, after the round trip to it. Delays: a's hop i sits at
// half its RTT from a, and a's access link's own jitter and loss (its LAN:
// loss_up out, loss_down back) apply to every crossing; b's home router
// sits half of b's access round trip less half its RTT from the core.

// Hop is one router on an access link.
type Hop struct {
	// Addr answers for the router; invalid for a router that never
	// answers (it still forwards, and still loses).
	Addr netip.Addr
	// RTT is the round trip from the node to this router: the routers'
	// round trips increase and stay within the access link's.
	RTT time.Duration
	// Loss is the chance that a datagram leaving the node is dropped past
	// this router, on the link out of it: every later router and the far
	// end inherit it. Datagrams toward the node are not dropped here.
	Loss float64
	// ICMPEvery is the least time between two of the router's answers,
	// a router's ICMP rate limit; 0 answers every datagram.
	ICMPEvery time.Duration
	// HeaderOnly: the router quotes only the IP and UDP headers of the
	// datagram it answers, so the error queue hands back none of its
	// payload (older routers; RFC 792's minimum).
	HeaderOnly bool
}

// ICMPAnswer is one router's answer to a hop-limited datagram, as the
// sender's socket reads it off its error queue.
type ICMPAnswer struct {
	To    netip.AddrPort // where the datagram that drew it was going
	From  netip.Addr     // the router that answered (the offender)
	At    time.Duration  // when it arrived, virtual time
	Quote []byte         // the start of the datagram's payload, as the router quoted it (none: headers only)
	// TTL is the IP TTL it arrived with: the router starts it at 64, and
	// each router on its way back takes one.
	TTL uint8
}

// icmpTTL is the TTL a router starts its answers at.
const icmpTTL = 64

// quoteLen is how much of a datagram a router quotes: RFC 1812 routers
// quote as much as fits, far more than a probe.
const quoteLen = 64

// icmpQueueLen bounds the answers waiting at a node; past it the oldest
// goes, as a socket's error queue overflows.
const icmpQueueLen = 256

// errHopLimit is returned by SendHopLimit for a hop limit below 1.
var errHopLimit = errors.New("simnet: hop limit below 1")

// router is a Hop and its rate limit's state.
type router struct {
	Hop
	last     time.Duration
	answered bool
}

// mayAnswer takes one answer from the router's rate limit at t. Probes
// from several machines may reach it out of the order they were sent in:
// one that reaches it before the last answer is refused by a limit.
func (r *router) mayAnswer(t time.Duration) bool {
	if r.ICMPEvery == 0 {
		return true
	}
	if r.answered && t-r.last < r.ICMPEvery {
		return false
	}
	r.last, r.answered = max(r.last, t), true
	return true
}

// SetAccessHops lists the routers on the access link of the node at addr,
// replacing any listed before (their rate limits start afresh); nil lists
// none. A node without an access link gets one that adds nothing. It
// panics on a hop limit's worth of nonsense (a loss outside [0, 1), a
// negative round trip or interval); validate outside input first.
func (n *Network) SetAccessHops(addr netip.AddrPort, hops []Hop) {
	for _, h := range hops {
		if h.Loss < 0 || h.Loss >= 1 || h.RTT < 0 || h.ICMPEvery < 0 {
			panic(fmt.Sprintf("simnet: bad hop %+v", h))
		}
	}
	a, ok := n.access[addr]
	if !ok {
		if len(hops) == 0 {
			return
		}
		n.SetAccess(addr, zeroProfile, zeroProfile)
		a = n.access[addr]
	}
	a.hops = a.hops[:0]
	for _, h := range hops {
		a.hops = append(a.hops, router{Hop: h})
	}
	if a.hopRand == nil && len(hops) > 0 {
		s := pathSeed(n.seed^accessHopSalt, addr, addr)
		a.hopRand = rand.New(rand.NewPCG(s, splitmix(s)))
	}
}

const accessHopSalt = 0x5ca1ab1e_00000003

// forwardLost draws the forward loss of routers [0, k) of a: a datagram
// leaving the node past them. Routers without loss draw nothing, so a
// network whose routers lose nothing draws what it drew without them.
func (a *access) forwardLost(k int) bool {
	for i := range min(k, len(a.hops)) {
		if l := a.hops[i].Loss; l > 0 && a.hopRand.Float64() < l {
			return true
		}
	}
	return false
}

// SendHopLimit sends p to to with a hop limit of its own: the datagram
// dies at the hops-th router of the path (see Hop) and the router's answer,
// if any, waits at the node for TakeICMP; past the path's routers it
// reaches to as Send's datagrams do.
func (nd *Node) SendHopLimit(to netip.AddrPort, p []byte, hops int) error {
	if hops < 1 {
		return errHopLimit
	}
	n := nd.net
	own := 0
	if a, ok := n.access[nd.addr]; ok {
		own = len(a.hops)
	}
	far := 0
	if b, ok := n.access[to]; ok && len(b.hops) > 0 {
		far = 1
	}
	switch {
	case nd.detached:
		return errDetached
	case len(p) > maxPayload:
		return fmt.Errorf("simnet: datagram of %d bytes exceeds %d", len(p), maxPayload)
	case hops <= own:
		n.probeOwnHop(nd, to, hops-1, p)
	case hops <= own+far:
		n.probeFarRouter(nd, to, p)
	default:
		return nd.Send(to, p)
	}
	return nil
}

// probeOwnHop sends p from nd to die at router i of nd's access link.
// Past the first router the probe crosses the line's up queue and the
// answer its down queue (queue.go).
func (n *Network) probeOwnHop(nd *Node, to netip.AddrPort, i int, p []byte) {
	a := n.access[nd.addr]
	up, lost := crossAccess(a.up, &n.accessScratch)
	if lost {
		return
	}
	if i > 0 {
		left, ok := a.upQ.admit(n.sched.now, onLine(to, len(p)))
		if !ok {
			return
		}
		up += left - n.sched.now
	}
	if a.forwardLost(i) {
		return
	}
	r := &a.hops[i]
	reach := n.sched.now + r.RTT/2 + up - a.up.Profile().Delay
	if !r.Addr.IsValid() || !r.mayAnswer(reach) {
		return
	}
	down, lost := crossAccess(a.down, &n.accessScratch)
	if lost {
		return
	}
	n.answer(nd, to, r, r.Addr, icmpTTL-i, reach+r.RTT/2+down-a.down.Profile().Delay, p, i > 0)
}

// probeFarRouter sends p from nd to die at to's home router, which answers
// from to's address.
func (n *Network) probeFarRouter(nd *Node, to netip.AddrPort, p []byte) {
	b := n.access[to]
	r := &b.hops[0]
	edge := max(b.down.Profile().Delay-r.RTT/2, 0) // from the core to the router
	out, ok := n.firstCopy(n.path(nd.addr, to), nd.addr, netip.AddrPort{}, len(p))
	if !ok || !r.Addr.IsValid() {
		return
	}
	reach := n.sched.now + out + edge
	if !r.mayAnswer(reach) || b.forwardLost(len(b.hops)) {
		return
	}
	back, ok := n.firstCopy(n.path(to, nd.addr), netip.AddrPort{}, nd.addr, icmpSize(to.Addr(), min(len(p), quoteLen)))
	if !ok {
		return
	}
	own := 0
	if a, ok := n.access[nd.addr]; ok {
		own = len(a.hops)
	}
	n.answer(nd, to, r, to.Addr(), icmpTTL-own, reach+edge+back, p, true)
}

// firstCopy is the delay of a datagram of size bytes from → to over pa,
// crossing the access links decide crosses for those ends (a zero
// AddrPort crosses none), or false when it is lost. Duplicates are the
// game's to see, not a router's.
func (n *Network) firstCopy(pa *path, from, to netip.AddrPort, size int) (time.Duration, bool) {
	n.delays = n.decide(pa, from, to, size)
	if len(n.delays) == 0 {
		return 0, false
	}
	return n.delays[0], true
}

// answer queues router r's answer to p at nd, from from, arriving at at
// (never before now) with TTL ttl, if nd is still on the network then; an
// answer that crosses nd's line (line) goes through its down queue first.
func (n *Network) answer(nd *Node, to netip.AddrPort, r *router, from netip.Addr, ttl int, at time.Duration, p []byte, line bool) {
	ans := ICMPAnswer{To: to, From: from, At: max(at, n.sched.now), TTL: uint8(max(ttl, 1))}
	if !r.HeaderOnly {
		ans.Quote = append([]byte(nil), p[:min(len(p), quoteLen)]...)
	}
	n.sched.At(ans.At, func() {
		if line {
			n.queueAnswer(nd, ans)
			return
		}
		nd.takeAnswer(ans)
	})
}

// takeAnswer puts a router's answer on nd's error queue, unless nd has
// left the network.
func (nd *Node) takeAnswer(ans ICMPAnswer) {
	if nd.detached {
		return
	}
	if len(nd.icmp) == icmpQueueLen {
		nd.icmp = append(nd.icmp[:0], nd.icmp[1:]...)
	}
	nd.icmp = append(nd.icmp, ans)
}

// TakeICMP appends the routers' answers that arrived since the last call
// to dst, oldest first.
func (nd *Node) TakeICMP(dst []ICMPAnswer) []ICMPAnswer {
	dst = append(dst, nd.icmp...)
	nd.icmp = nd.icmp[:0]
	return dst
}
