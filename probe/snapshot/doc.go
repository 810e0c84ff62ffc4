// Package snapshot streams latest state the way Quake 3 sends its
// snapshots: newest state, unreliable, delta-compressed against what the
// receiver last acked. It is pure — no I/O, no clock, no goroutines — so
// the peer wires it onto its unreliable channel and tests drive it alone.
//
// Requirements implemented here (docs/requirements.md):
//
//   - Q2  Sender keeps, per receiver, a ring of the last 32
//     snapshots it sent and encodes each update against the newest one
//     that receiver acked, or against the all-zero baseline (a full
//     update) when none is acked or it has left the ring. Receiver keeps
//     a ring of what it got and reports the newest as its ack.
//   - Q3  a state is described by a field table (each field: name, accessors,
//     bit width); every field is preceded by a changed-bit. Groups add a
//     changed-bit over a run of fields and Near lets a small change travel
//     as a difference; a table of plain fields encodes exactly as the
//     Quake 3 example counts it (132 bits full, 36 bits for one changed
//     32-bit field; docs/snapshots.md).
//   - Q4  a delta from the last acked snapshot carries every change the
//     receiver missed along with the new ones: loss needs no other path.
//   - L3  the telemetry (Telemetry) carries an explicit
//     known flag for every value that can be unknown.
//
// Q1 (unreliable, newest-wins transport), Q5 (fragments of at most 1400
// bytes) and Q6 (what must arrive goes reliable) belong to the caller and
// netcore. Q7: compression was measured and does not pay at these sizes
// (docs/snapshots.md).
//
// The format is documented bit by bit in docs/snapshots.md.
package snapshot
