// Package live is lagscope's live world: sessions between real machines
// over UDP on the wall clock (`lagscope host`, `join`, `watch`, `demo`).
//
// A Session is the session logic, a sans-I/O state machine like the
// probe.Peer it builds: the challenge handshake (an unverified source never
// gets a reply larger than its request), unique names, the host's roster,
// one private link from every player to every other machine (T1), the lobby
// and its start once every machine is ready, which starts measurement over
// (T5), observers that are never seated, waited for or reported, clean
// quits with a removal (S7), and silent machines dropped. Once the game
// runs the Peer does the rest: frames, reports, the master, removals and
// handoffs (S5–S19), bad connections (T11).
//
// A Runner is the wall-clock driver: one goroutine owns a Session, the
// socket's reader hands it datagrams, a timer wakes it at its next
// deadline, and it publishes probe.Updates (events stamped with t_ms, a
// link line per link per second, a summary at the end) to any number of
// sinks through probe.Tee. StartDemo runs N sessions in one process on
// loopback sockets behind seeded impaired access links (netcore/impair),
// with a scripted latency spike.
//
// The lobby's messages are documented byte by byte in docs/live.md; the
// design is in docs/architecture.md ("The live world").
package live
