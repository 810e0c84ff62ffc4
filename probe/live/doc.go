// Package live is lagscope's live world: sessions between real machines
// over UDP on the wall clock (`lagscope host`, `join`, `watch`, `demo`).
// The session protocol itself is probe/session's; this package holds only
// what touches the wall clock and sockets.
//
// A Runner is the wall-clock driver: one goroutine owns a session.Session,
// the socket's reader hands it datagrams, a timer wakes it at its next
// deadline, and it publishes probe.Updates (events stamped with t_ms, a
// link line per link per second, a summary at the end) to any number of
// sinks through feed.Tee. startDemo runs N sessions in one process on
// loopback sockets behind seeded impaired access links (impair.Socket),
// with a scripted latency spike.
//
// The lobby's messages are documented byte by byte in docs/live.md; the
// design is in docs/architecture.md ("The live world").
package live
