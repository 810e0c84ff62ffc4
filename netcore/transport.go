package netcore

import "net/netip"

// Transport carries an Endpoint's datagrams out. Receiving is the world's job:
// the live driver's UDP reader and the simulated network both push datagrams
// into Endpoint.Receive on the goroutine that owns the endpoint.
//
// Implementations: *UDPTransport (live) and simnet's *Node (simulated). simnet
// satisfies this interface structurally and does not import netcore.
type Transport interface {
	// Send writes one datagram to the given address. It must not retain p
	// after it returns. A send error is not fatal to a link: the retry
	// schedule covers it as it covers loss.
	Send(to netip.AddrPort, p []byte) error
	// LocalAddr is the address peers reach this transport at.
	LocalAddr() netip.AddrPort
}

// MaxDatagram is the largest datagram lagscope puts on the wire, headers
// included, so that routers never fragment it (SPEC Q5).
const MaxDatagram = 1400
