// Package incident tells the lag of a match as it happens: every second it
// reads what a machine knows — every seated machine's waits and whom they
// waited for, every link's round trip as its acknowledgements show it, its
// loss, each machine's processing time — and
// opens, updates and closes incidents that name who or which path and why
// (docs/diagnosis.md, "Incidents").
//
// It is pure: no clock, no I/O. The engine (package probe) hands it the
// matrix of every seated player's links and waits (its own row first-hand,
// the others' from their telemetry, S5 and Q1–Q4) once a second, and
// publishes what it returns. Every machine, watchers included, reads the
// same evidence, so every machine tells the same incidents.
//
// What it reads, and the requirements behind it: waits are the lockstep's
// stalls (the time a machine waited for a player's commands, S5); a round
// trip is what the link's latest acknowledgements take (from first send,
// resends included), or its oldest packet's age while in flight, with the
// link's SRTT (T3) beside it — while every packet is resent before its
// ack arrives no clean sample comes and SRTT keeps its value, and after a
// rise it falls back over many samples (T2, T13); loss is the links'
// observed loss (L2, L4).
//
// Files: detect.go runs an evaluation and keeps the baselines; who.go
// works out who holds the match back; life.go opens, updates and closes
// an incident; evidence.go turns a link's cumulative figures into steps;
// text.go words it.
package incident
