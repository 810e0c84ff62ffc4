package netcore

import (
	"net/netip"
	"time"
)

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

// Clock is a Transport that reads the driver's clock (time since the
// world started, the now every Endpoint method takes). The Endpoint then
// stamps a datagram that opens a round trip just before it is written,
// rather than with the now of the call: a wake-up's reading is taken
// before the frame loop's work, and on a LAN that work is as long as the
// wire (the send time is taken as late as possible, T2). Without it
// (the simulator: virtual time has no work) the call's now is the send
// time.
type Clock interface {
	Now() time.Duration
}

// MaxDatagram is the largest datagram lagscope puts on the wire, headers
// included, so that routers never fragment it (Q5).
const MaxDatagram = 1400
