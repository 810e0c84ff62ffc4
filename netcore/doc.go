// Package netcore is lagscope's wire and link layer: the datagram format,
// the private links between machines with their round-trip measurement and
// retries, loss accounting, the global channel, and the transports.
//
// The Endpoint is a sans-I/O state machine (docs/architecture.md): it never
// reads a clock or blocks. Time comes in as now (time since the world
// started), datagrams come in through Receive and go out through a
// Transport, and NextDeadline says when Tick has work. The same code runs
// on UDP (UDPTransport) and on the simulated network (netcore/simnet).
//
// Requirements (docs/requirements.md) implemented here:
//
//   - T1  one private link per peer; acks go out the moment a datagram
//     arrives, never waiting for a frame (Endpoint.Receive) — riding on
//     a reply the owner sends in the same wake-up when there is one
//     (coalescing, receive.go: CarriedAck).
//   - T2–T4, T7, T9, T10, T12, T13: the round-trip Estimator (rtt.go):
//     Karn's rule, RFC 6298 smoothing, the provisional estimate, RTO and
//     connection timeout with their clamps, once-per-round doubling.
//   - T5  Endpoint.ResetMeasurement.
//   - T6  the netcore half: only acked channels ask for acks; which frame
//     packets go reliable is probe's choice.
//   - T8, T11 per-packet retry schedule, never dropping, the bad-connection
//     debug log (endpoint.go).
//   - T14 the global channel: fixed retry, never measured, dropped at its
//     timeout and counted.
//   - L1–L6 loss accounting (loss.go): per-channel 32-deep windows judged on
//     leaving, Sent/Retransmitted, LinkReport high-water marks, totals that
//     never decrease. L7 lives in impair/simnet; L8 is how to read them.
//     Numbers more than MaxJump from the newest are held back until
//     believed (resyncAfter), so a forged one cannot wreck a window (L2).
//   - Q5  no datagram above MaxDatagram: messages are cut into fragments,
//     each a numbered datagram, reassembled within bounds of memory and time.
//   - Q7  optional pre-shared key: AES-GCM sealing with never-repeating
//     nonces and replay rejection (seal.go).
//
// The live transport (udp.go) reads every waiting datagram in one
// recvmmsg on 64-bit Linux, each with its own kernel arrival stamp, and
// SendBatch writes datagrams that leave together (the impairment socket's
// flush) in one sendmmsg.
//
// The wire format is documented byte by byte in docs/protocol.md.
package netcore
