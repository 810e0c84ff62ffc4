package netcore

import (
	"net/netip"
	"sync"
)

// Answering from the address a datagram arrived at. A socket
// bound to every interface of a machine with several addresses (a LAN and
// a VPN, or 127.0.0.1 and 127.0.0.2) sends from whatever address the
// routing table picks for the destination, which need not be the address
// the peer sent to: the peer then drops the answer as coming from a
// stranger (the handshake checks its source, a link its address). So the
// reader notes, per peer, the local address its last datagram arrived at
// (IP_PKTINFO / IPV6_PKTINFO, udp_pktinfo_linux.go), and Send answers
// from it.

// maxReplyFrom bounds the table: a flood from many sources cannot grow it
// past this; when full it starts over (the next datagram from each peer
// fills its entry again).
const maxReplyFrom = 4096

// replyFrom is the table of local addresses by peer: the reader writes it,
// the owner's Send reads it.
type replyFrom struct {
	mu sync.Mutex
	m  map[netip.AddrPort]netip.Addr
}

func (r *replyFrom) note(peer netip.AddrPort, local netip.Addr) {
	r.mu.Lock()
	if old, ok := r.m[peer]; !ok || old != local {
		if len(r.m) >= maxReplyFrom {
			clear(r.m)
		}
		r.m[peer] = local
	}
	r.mu.Unlock()
}

func (r *replyFrom) lookup(peer netip.AddrPort) (netip.Addr, bool) {
	r.mu.Lock()
	a, ok := r.m[peer]
	r.mu.Unlock()
	return a, ok
}
