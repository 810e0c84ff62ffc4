// Package session is lagscope's session protocol: how machines find each
// other, agree who plays and start a game, in either world. A Session is
// a sans-I/O state machine like the probe.Peer it builds — it takes
// datagrams with their arrival time (Receive), runs its timers (Tick) and
// says when it next needs to (NextDeadline); it never reads a clock or a
// socket, so the wall-clock Runner in probe/live and a virtual-time driver
// run the same code.
//
// By path, one file each:
//
//   - admission.go: the challenge handshake — a cookie bound to the
//     source address and a time epoch, so an unverified source never gets
//     a reply larger than its request — unique names, full and started
//     sessions refused with stable reason numbers (S19), the pre-shared
//     key (Q7);
//   - roster.go: the host's roster, and one private link from every
//     player to every other machine (T1);
//   - lobby.go: the lobby's pings and readiness, and its start once every
//     machine is ready, which starts measurement over (T5); the host is the
//     master at the start (S16); frame packets that arrive before a
//     machine's own start are held and played;
//   - leave.go: clean quits with a removal (S7), a host that leaves the
//     lobby, and silent machines dropped;
//   - view.go: what a driver reads (links, rejected datagrams, the summary,
//     the View) and the session's events;
//   - step.go: Receive, Tick and NextDeadline;
//   - wire.go: the lobby's messages, byte by byte in docs/live.md; their
//     kinds are stable (S19);
//   - punch.go, verify.go, punchwire.go, relay.go: paths between members
//     behind NAT (verify.go: a link moves only to a verified address) —
//     checks to every candidate address, and the host's relay when none
//     answers;
//   - watch.go, watchwire.go: a watcher that arrives after the start gets
//     a snapshot of the game (frame, timing, master, the report record S7,
//     recent messages) and then every network event the host executes, and
//     follows as a spectator (probe.NewSpectatorOn); players still join in
//     the lobby only.
//
// Observers are never seated, waited for or reported. Once the game runs
// the Peer does the rest: frames, reports, the master, removals and
// handoffs (S5–S19), bad connections (T11).
package session
