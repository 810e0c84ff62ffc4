// Package feed is the contract between lagscope's engine and its readers:
// what the engine publishes and what a reader may ask back.
//
//   - View and its parts: the read-only picture of a peer that front ends
//     draw (links, players, the Matrix, the lobby, hop traces, load tests,
//     the diagnosis), in durations and flags, unknowns marked, never zero
//     (L3);
//   - the events, one Go type per NDJSON event type, each with its JSON
//     (docs/cli.md), and one registry of them (registry.go) that the NDJSON
//     writer and a recording's reader use;
//   - Update, Feed and Tee: how Views and events reach every reader, live or
//     replayed, and Control, the readers' only way back in;
//   - the NDJSON writer;
//   - what a recording needs of the engine's words: Command, the command
//     IDs (Cmd*, S19) and ProtocolVersion.
//
// The engine (package probe and the session, the simulator and the live
// driver) imports it; the readers (ui, metrics, probe/record) import it
// and never the engine. It imports only the pure packages and the leaves.
package feed
