// Package probe is the peer: one machine of a lockstep session, played the
// way the game plays it, so that what lagscope shows is what the game would
// decide (docs/architecture.md, "The lockstep as built").
//
// A Peer is a sans-I/O state machine on top of a netcore.Endpoint. One
// goroutine calls it with the current time; the live driver and the
// simulator (probe/sim) are its two worlds. It implements:
//
//   - the frame loop: a command issued on frame f executes on f plus the
//     look-ahead in force (S1), on send frames only, so a command whose frame
//     is no longer a send frame runs on the next one, on every machine alike
//     (S13); one frame packet per send period; a frame executes only when
//     every seated player's commands for it are held, and the wait is
//     measured;
//   - measurement wiring: frame packets ask for acks when they carry
//     commands, for the first packet, and at least every 32 frames while a
//     link to a seated player lacks a clean sample (T6: on the last send
//     frame that keeps the gap within 32); measurement restarts when
//     the game starts (T5);
//   - network events with stable IDs (S19): NETWORK_REPORT (S5, S6),
//     timing with its frame rate (S12, S15), removal (S7, S16), game speed
//     (S17); LATENCYFUDGE's ID is reserved and never sent;
//   - the record, the master's evaluations and the timing in force, all
//     through package rungs (S7–S15), tier messages (S18), master handoff
//     on an executed removal (S16), removal of players silent past the drop
//     timeout;
//   - a running checksum of executed commands, exchanged in frame packets,
//     so a desync is detected and shown;
//   - telemetry: each seated player streams its own links, waits
//     and frame to every other machine as snapshot deltas against what the
//     receiver acked (package snapshot, Q2–Q4), unreliable and inside its
//     unreliable frame packets (Q1, so L2 counts their loss; netcore
//     fragments long ones, Q5), ending with the removal event (Q6); a View
//     carries every player's row as the Matrix, unknown rows marked (L3).
//
// Front ends read what a peer publishes — its events (feed.Sink) and Views
// — through the contract package probe/feed, never this one: a feed.Feed
// carries both to a UI, an NDJSON writer, a recorder or a metrics exporter.
package probe
