// Package trace is the pure logic of lagscope's hop tracer: it finds where
// on the path to a peer delay and loss begin, using probes sent on the
// game's own socket with a small hop limit. It never opens a socket, reads
// a clock or blocks; time comes in as now (time since the world started,
// as in netcore), bytes come in as they were read. netcore drives it
// (netcore/trace_link.go) on the game's own socket, as docs/path.md
// describes; the package does not import netcore, so the header of a
// quoted datagram is netcore's to read.
//
// The package provides:
//
//   - the probe record (probe.go): AppendProbe, DecodeProbe, QuoteOf —
//     an unnumbered control record the peer answers, so the last hop is
//     the peer and its round trip is comparable with the hops before it;
//   - the error-queue parser (errqueue.go): ParseErrQueue reads the
//     control messages and quoted bytes Linux hands over with
//     recvmsg(MSG_ERRQUEUE), on any platform, into an Answer;
//   - the matcher (match.go): answers to probes, by the probe's random
//     number when the quote holds it, and by the hop's confirmed address
//     within the probe's time, on a link where no forger's surplus shows,
//     when it does not;
//   - the scheduler (schedule.go): which link and hop limit to probe next,
//     within a per-address, per-machine and per-path budget;
//   - hopPath and analyze (path.go, analyze.go): the per-hop figures and the
//     rules that say where delay and loss start, labelled by the link into
//     each hop, as a Result that marshals to the trace event;
//   - the Tracer (tracer.go), which joins the four for one machine.
package trace
