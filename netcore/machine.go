package netcore

import (
	"net/netip"
	"time"
)

// Machine is the shape every sans-I/O state machine of lagscope has: the
// Endpoint here, the probe's Peer and the session protocol's Session. It
// owns no socket, no clock and no goroutine; whoever drives it hands it the
// world:
//
//   - Receive gives it one datagram that arrived from an address at now;
//   - Tick lets it do whatever is due at now (retries, reports, frames);
//   - NextDeadline says when it next needs a Tick, and false when nothing is
//     due until the next datagram or outside call.
//
// A driver calls Receive for every datagram, Tick at (or after) the
// deadline, and reads NextDeadline again after every call it makes and after
// any outside call (Send, Start, Quit…) that may have moved the deadline.
// Times are durations since the driver's zero, never wall-clock readings,
// so the same machine runs on either of its two drivers: the wall-clock
// Runner over UDP sockets (probe/live) and the virtual-time Driver over the
// in-memory network (netcore/simnet).
//
// A machine is not safe for concurrent use: one goroutine, its driver's,
// makes every call. datagram is only valid during Receive.
type Machine interface {
	Receive(now time.Duration, from netip.AddrPort, datagram []byte)
	Tick(now time.Duration)
	NextDeadline() (time.Duration, bool)
}

var _ Machine = (*Endpoint)(nil)
