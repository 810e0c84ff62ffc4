package simnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// maxPayload is the largest datagram the simulated network carries: the most
// a UDP datagram over IPv4 can hold. lagscope's own limit (1400 bytes, SPEC
// Q5) is the sender's to keep; the network only refuses what real UDP would.
const maxPayload = 65507

// errDetached is returned by Send on a node that has left the network.
var errDetached = errors.New("simnet: node is detached")

// RecvFunc receives a datagram at virtual time now. p is valid only during
// the call: the network reuses its memory afterwards.
type RecvFunc func(now time.Duration, from netip.AddrPort, p []byte)

// Network is an in-memory datagram network on a Scheduler's virtual time.
// Every ordered pair of addresses is a path with its own impairment profile
// and its own random stream; pairs nobody configured follow the default
// profile (initially: instant, lossless delivery).
type Network struct {
	sched *Scheduler
	seed  uint64
	nodes map[netip.AddrPort]*Node
	paths map[pathKey]*path
	def   impair.Profile

	delays        []time.Duration            // scratch for Decide
	access        map[netip.AddrPort]*access // access links (access.go)
	accessScratch []time.Duration
	downQueues    int // access links with a down queue (queue.go)
	delivered     uint64
	unreachable   uint64
}

type pathKey struct{ from, to netip.AddrPort }

type path struct {
	impair   *impair.Path
	explicit bool // set by SetPath; otherwise follows the default
}

// NewNetwork returns an empty network on s. seed decides every path's random
// stream.
func NewNetwork(s *Scheduler, seed uint64) *Network {
	return &Network{
		sched: s,
		seed:  seed,
		nodes: map[netip.AddrPort]*Node{},
		paths: map[pathKey]*path{},
	}
}

// Scheduler is the scheduler the network delivers on.
func (n *Network) Scheduler() *Scheduler { return n.sched }

// Node is one address on the network. It satisfies netcore.Transport.
type Node struct {
	net      *Network
	addr     netip.AddrPort
	recv     RecvFunc
	detached bool
	icmp     []ICMPAnswer // routers' answers waiting for TakeICMP (hops.go)
}

// Attach puts a node on the network at addr; recv is called for every
// datagram delivered to it. It panics if addr is taken.
func (n *Network) Attach(addr netip.AddrPort, recv RecvFunc) *Node {
	if _, taken := n.nodes[addr]; taken {
		panic(fmt.Sprintf("simnet: address %v is already attached", addr))
	}
	if recv == nil {
		panic("simnet: Attach with a nil receive function")
	}
	node := &Node{net: n, addr: addr, recv: recv}
	n.nodes[addr] = node
	return node
}

// Detach removes the node at addr at once, as a killed process vanishes:
// datagrams in flight to it are lost (counted as unreachable), datagrams it
// already sent still arrive, and its Send fails from now on.
func (n *Network) Detach(addr netip.AddrPort) {
	if node, ok := n.nodes[addr]; ok {
		node.detached = true
		delete(n.nodes, addr)
	}
}

// detach removes the node from its network (see Network.Detach).
func (nd *Node) detach() {
	if !nd.detached {
		nd.net.Detach(nd.addr)
	}
}

// LocalAddr is the node's address.
func (nd *Node) LocalAddr() netip.AddrPort { return nd.addr }

// Send copies p and puts it on the path to the given address, where the
// path's impairment decides whether and when copies of it arrive. The
// datagram is the sender's as sent: loss and duplication happen on the way,
// after any sequence number inside it was assigned.
func (nd *Node) Send(to netip.AddrPort, p []byte) error {
	if nd.detached {
		return errDetached
	}
	if len(p) > maxPayload {
		return fmt.Errorf("simnet: datagram of %d bytes exceeds %d", len(p), maxPayload)
	}
	n := nd.net
	pa := n.path(nd.addr, to)
	n.delays = n.decide(pa, nd.addr, to, len(p)) // the path, and any access links (access.go)
	for _, d := range n.delays {
		e := n.sched.pooled()
		e.net, e.from, e.to = n, nd.addr, to
		e.buf = append(e.buf[:0], p...)
		n.sched.push(e, n.sched.now+d)
	}
	return nil
}

// deliver hands a datagram event's payload to whoever holds its address at
// arrival time, as UDP would, once it is through the receiver's down queue
// (queue.go): a queued datagram's event runs again when it leaves it.
func (n *Network) deliver(e *Event) {
	if n.queueDown(e) {
		return
	}
	node, ok := n.nodes[e.to]
	if !ok {
		n.unreachable++
		return
	}
	n.delivered++
	node.recv(n.sched.now, e.from, e.buf)
}

// path returns the path from one address to another, creating it on first
// use with the default profile.
func (n *Network) path(from, to netip.AddrPort) *path {
	k := pathKey{from, to}
	if pa, ok := n.paths[k]; ok {
		return pa
	}
	pa := &path{impair: impair.NewPath(n.def, pathSeed(n.seed, from, to))}
	n.paths[k] = pa
	return pa
}

// SetPath sets the profile of the direction from → to. A path already in use
// keeps its random stream (a timeline change, not a new link). It panics on
// an invalid profile; validate outside input with Profile.Validate.
func (n *Network) SetPath(from, to netip.AddrPort, p impair.Profile) {
	pa := n.path(from, to)
	pa.impair.SetProfile(p)
	pa.explicit = true
}

// SetLink sets the same profile on both directions between a and b.
func (n *Network) SetLink(a, b netip.AddrPort, p impair.Profile) {
	n.SetPath(a, b, p)
	n.SetPath(b, a, p)
}

// SetDefault sets the profile of every path that SetPath never configured,
// including paths already in use.
func (n *Network) SetDefault(p impair.Profile) {
	if err := p.Validate(); err != nil {
		panic("simnet: " + err.Error())
	}
	n.def = p
	for _, pa := range n.paths {
		if !pa.explicit {
			pa.impair.SetProfile(p)
		}
	}
}

// Stats is what the network did to datagrams. The impairment counts are
// asked-for, never measured, loss (SPEC L7).
type Stats struct {
	impair.Stats        // summed over every path
	Delivered    uint64 // copies handed to a receiver
	Unreachable  uint64 // copies that arrived at an address nobody held
	QueueDropped uint64 // datagrams the access links' full queues dropped
}

// Stats sums every path's impairment counts and the delivery counts.
func (n *Network) Stats() Stats {
	st := Stats{Delivered: n.delivered, Unreachable: n.unreachable}
	for _, pa := range n.paths {
		st.Stats = st.Stats.Add(pa.impair.Stats())
	}
	n.addAccessStats(&st)
	n.queueStats(&st)
	return st
}

// PathStats is the impairment count of the direction from → to; zero if it
// never carried a datagram.
func (n *Network) PathStats(from, to netip.AddrPort) impair.Stats {
	if pa, ok := n.paths[pathKey{from, to}]; ok {
		return pa.impair.Stats()
	}
	return impair.Stats{}
}

// pathSeed derives a path's seed from the network seed and its two
// addresses, so a path's random stream does not depend on which paths
// happened to be used before it.
func pathSeed(seed uint64, from, to netip.AddrPort) uint64 {
	h := splitmix(seed)
	for _, ap := range [2]netip.AddrPort{from, to} {
		a := ap.Addr().As16()
		h = splitmix(h ^ binary.LittleEndian.Uint64(a[:8]))
		h = splitmix(h ^ binary.LittleEndian.Uint64(a[8:]))
		h = splitmix(h ^ uint64(ap.Port()))
	}
	return h
}

// splitmix is SplitMix64's finaliser: a cheap, well-mixing bijection.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
