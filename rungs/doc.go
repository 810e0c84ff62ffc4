// Package rungs is lagscope's timing policy for a compressed lockstep game
// (S1–S18, docs/requirements.md; docs/timing.md explains it): which send
// period and look-ahead a session should run at, given the players'
// reports. It is pure: frames, durations and reports go in, decisions come
// out. It does no I/O, reads no clock, starts no goroutine and imports
// nothing of ours, so the live peer and the virtual-time simulator in
// probe/ drive exactly the same code.
//
// The pieces, in the order a session meets them:
//
//   - Timing, the rung ladder and Need (S1–S4, S17): send period / look-ahead,
//     rung N = N/3N (rung 1 = 1/4), one-way frames rounded up with integer
//     arithmetic, the extended look-ahead past rung 10 up to 10/250, headroom
//     (×1.25), tiers and "a look-ahead longer than its rung normally uses reads
//     as Bad"; which timings are valid (Valid for an event's target,
//     ValidInForce for what a Schedule holds), and tierUnknown, "—", for any
//     other.
//   - Record (S5–S8): every player's latest report, expiry after 512 frames,
//     the players seated at game start, removal, and the forced 10/250 rule.
//   - Master (S9–S11, S15, S16): the evaluator. Initial target or the 3/9
//     fallback, worse at once, better after three passing evaluations in a
//     row and then one rung per passing evaluation (the descent), every reset,
//     the frame rate, and the handoff to a new master.
//   - Schedule (S12–S14, S15): the timing in force on one machine: a change
//     applied at once or a decrease staged step by step, a new target
//     replacing a staged one, and the send frames of the timing in force.
//   - TierMessage (S18): "Connection quality target: <tier>".
//
// # Readings of the requirements
//
// Where the requirements leave a choice, this package makes these
// (docs/timing.md says the same in a player's words):
//
//   - Frames "since game start" count from the frame the game started on.
//     Reports go out at 32, 64 and then on every multiple of 128 (128, 256, …);
//     the master evaluates at 64, 128 and then on every multiple of 256
//     (IsReportFrame, IsEvaluationFrame).
//   - A report executed on frame f is fresh through frame f+511 and has
//     expired from frame f+512 on. The forced rule applies from 512 frames
//     after the record started.
//   - The one-way trip is ceil(rtt × fps / 2 s), computed exactly on integer
//     nanoseconds (no floating point), so 1333 ms at 30 fps is 19.995 → 20
//     frames (rung 10) and 1334 ms is 21 frames (10/40).
//   - Frame rate (S15): the largest whole rate whose frame time is at least the
//     slowest player's average processing time, floor(1 s / process), capped
//     by the game speed and never below 1. While any seated player lacks a
//     fresh report the master keeps the current rate. The rung is computed at
//     the rate the decision carries. The rate travels only inside timing
//     events (S15). An evaluation that keeps the target but
//     picks another rate sends a timing event with the target unchanged and
//     reason `rate` (Reason Rate, our extension): without it a move of the
//     Speed slider would wait for the next change of rung. A `rate` event
//     changes the rate when it executes and leaves a staged decrease as it
//     is (Schedule.Change).
//   - The initial (64/128) evaluation always sends an event, even when its
//     target equals the 2/6 the game started with; later evaluations send one
//     only when the target or the rate changes. "Changed the timing"
//     (condition 3) means a decision whose target differs from the previous
//     target.
//   - "Every command scheduled under the old look-ahead has come due" is the
//     frame the timing event executed on plus the old look-ahead.
//   - Send frames are the multiples of the send period in force. A command
//     whose tagged frame is not a send frame executes on the next send frame,
//     or on its own frame if that is one (Schedule.NextSendFrame, S13).
//   - A change that lengthens the send period but shortens the look-ahead
//     switches the period on the frame its event executes; the look-ahead
//     first rounds up to a whole number of new send periods (never shorter
//     than before, since nothing has come due yet) and serves the first send
//     frame under the new period, then loses one new send period on each
//     following send frame until it reaches the target.
//   - The handoff wait (S16) works like condition 3: an evaluation within 256
//     frames of the handoff fails it, so the count of three starts only after.
//   - "A look-ahead longer than its rung normally uses" is read generally: any
//     timing whose look-ahead exceeds its rung's ladder value is Extended and
//     reads as Bad — rung 10 beyond 10/30, and the intermediate steps of any
//     staged decrease that has not yet reached its target (e.g. 9/63 on the
//     way from 10/70 to 9/27).
//
// # Driving it
//
// Every machine keeps a Record (fed with each report event as it executes,
// and Remove with each removal event) and a Schedule (Change when a timing
// event executes, then Advance once per frame, in frame order). The master
// also keeps a Master and calls Evaluate on evaluation frames; other machines
// keep one too and feed it every executed timing event through Observe, so
// that whoever takes over (TakeOver) already knows the current target.
package rungs
