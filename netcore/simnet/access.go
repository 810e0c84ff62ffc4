package simnet

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// An access link is a node's own link between it and the core of the
// network (home Wi-Fi, a mobile uplink): every datagram the node sends
// crosses its up direction first, every datagram it receives crosses its
// down direction last, whatever the path in between (and the routers on
// it, hops.go, which drop what the node sends with their forward loss). A datagram from a to
// b therefore crosses a's access up, the path a→b, then b's access down:
// delays add, and it arrives only if no stage loses it (losses compound).
// Each direction has its own random stream, so adding an access link to
// one node leaves every other node's draws alone, and a network with no
// access links draws exactly what it drew before they existed.
type access struct {
	up, down *impair.Path
	hops     []router   // the routers on it, outward (hops.go)
	hopRand  *rand.Rand // their forward losses' stream; nil until it has routers
	upQ      fifo       // the line's bottleneck queues (queue.go)
	downQ    fifo
}

// zeroProfile is an access direction that adds nothing.
var zeroProfile impair.Profile

// SetAccess gives the node at addr an access link: up for what it sends,
// down for what it receives. A node that already has one keeps its random
// streams (a timeline change, not a new link). It panics on an invalid
// profile; validate outside input with Profile.Validate.
func (n *Network) SetAccess(addr netip.AddrPort, up, down impair.Profile) {
	if n.access == nil {
		n.access = map[netip.AddrPort]*access{}
	}
	if a, ok := n.access[addr]; ok {
		a.up.SetProfile(up)
		a.down.SetProfile(down)
		return
	}
	// The streams are the path seeds of addr to itself, offset so that
	// they differ from each other and from any real path.
	n.access[addr] = &access{
		up:   impair.NewPath(up, pathSeed(n.seed^accessUpSalt, addr, addr)),
		down: impair.NewPath(down, pathSeed(n.seed^accessDownSalt, addr, addr)),
	}
}

const (
	accessUpSalt   = 0x5ca1ab1e_00000001
	accessDownSalt = 0x5ca1ab1e_00000002
)

// accessStats is the impairment count of the access link of addr, up and
// down; zeros when it has none.
func (n *Network) accessStats(addr netip.AddrPort) (up, down impair.Stats) {
	if a, ok := n.access[addr]; ok {
		return a.up.Stats(), a.down.Stats()
	}
	return impair.Stats{}, impair.Stats{}
}

// decide is what happens to one datagram of size bytes (its payload)
// from → to: the delays of the copies that arrive (none when it is lost).
// Without access links it is the path's decision alone. The sender's up
// queue (queue.go) takes it after its LAN and before its routers; the
// receiver's down queue is crossed on arrival (Network.deliver).
func (n *Network) decide(pa *path, from, to netip.AddrPort, size int) []time.Duration {
	if len(n.access) == 0 {
		return pa.impair.Decide(n.delays)
	}
	var extra time.Duration
	if a, ok := n.access[from]; ok {
		d, lost := crossAccess(a.up, &n.accessScratch)
		if lost {
			return n.delays[:0]
		}
		left, ok := a.upQ.admit(n.sched.now, onLine(to, size))
		if !ok || a.forwardLost(len(a.hops)) {
			return n.delays[:0]
		}
		extra += d + left - n.sched.now
	}
	n.delays = pa.impair.Decide(n.delays)
	if len(n.delays) == 0 {
		return n.delays
	}
	if a, ok := n.access[to]; ok {
		d, lost := crossAccess(a.down, &n.accessScratch)
		if lost {
			return n.delays[:0]
		}
		extra += d
	}
	for i := range n.delays {
		n.delays[i] = max(n.delays[i]+extra, 0)
	}
	return n.delays
}

// crossAccess is one crossing of an access direction: its delay, or lost.
// A duplicate made on the access link is ignored: the copies of a datagram
// are the path's to make.
func crossAccess(p *impair.Path, scratch *[]time.Duration) (time.Duration, bool) {
	*scratch = p.Decide(*scratch)
	if len(*scratch) == 0 {
		return 0, true
	}
	return (*scratch)[0], false
}

// addAccessStats adds every access link's counts to st.
func (n *Network) addAccessStats(st *Stats) {
	for _, a := range n.access {
		st.Stats = st.Stats.Add(a.up.Stats()).Add(a.down.Stats())
	}
}
