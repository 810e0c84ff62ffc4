// Package loadtest is the pure core of lagscope's latency-under-load
// (bufferbloat) test between two players: how much a full line adds to
// the round trip, upload and download apart and both at once, graded A+
// to F (docs/load-test.md).
//
// It never opens a socket, reads a clock or blocks: every method takes
// now (time since the world started), messages come in as bytes and go
// out through Config.Send, and NextDeadline says when to run Tick next.
// The caller carries the messages on the pair's own link, unnumbered, so
// no loss total counts the load (L2).
//
// The package provides:
//
//   - the messages (wire.go): request, answer, load datagram, report,
//     pace command, probe and echo, stop — each at most 1336 bytes, so
//     a datagram carrying one is at most 1400 (Q5);
//   - the pacer, the receiver's counts and the ramp rule (pace.go): raise
//     the rate ×1.5 every 250 ms until the received rate rises less than
//     5 % over two steps, then hold at 110 % of it, or at the cap;
//   - the Test (test.go): the tester's end (tester.go), which runs the
//     phases, times the round trip with a probe every 10 ms and grades
//     the holds, and the peer's (responder.go), which answers, echoes,
//     counts and reports the tester's load and sends load at the rate
//     the tester asks for — only to pace commands that carry its latest
//     nonce, for at most 25 s after its answer and at most the cap for
//     13 s of load, whatever the tester asks;
//   - the Result (result.go), shaped as the load event's body, and the
//     grades.
package loadtest
