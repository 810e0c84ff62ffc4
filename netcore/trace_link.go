package netcore

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore/trace"
)

// The hop tracer on the Endpoint (docs/path.md). One trace.Tracer per
// endpoint, so one per machine and socket: its budget (one probe a second
// to each hop address, 20 a second in all) spans every traced link. A
// probe is one probe record in a control datagram of its own: unnumbered,
// so in no loss total (L2), and unsealed even in a keyed session, so that a
// router's quote shows its number. Unsealed, it must not be an amplifier:
// the peer answers only a datagram that is exactly one probe, from a linked
// peer's current address, with a datagram of the same size, and at most
// probeReplyRate a second per link.

// probeDatagramLen is the size of a probe and of its answer.
const probeDatagramLen = HeaderLen + trace.ProbeLen

// probeReplyRate and probeReplyBurst bound the answers to one link's
// probes: a tracer sends at most 20 probes a second in all, so a
// conforming peer never meets the bound; a forged flood (spoofing the
// peer's address) draws no more than this back to the peer.
const (
	probeReplyRate  = 20
	probeReplyBurst = 5
)

// noHopsWhy is why an endpoint on a transport without hop limits does not
// trace.
const noHopsWhy = "this transport sends no datagram with a hop limit and reads no ICMP answers (the simulated network has no routers)"

// tracing is the endpoint's tracer and what feeds it.
type tracing struct {
	t       *trace.Tracer
	traced  map[PeerID]netip.AddrPort // traced links, at the address AddLink gave the tracer
	pinned  map[PeerID]bool           // links PinTrace keeps bursting
	answers []HopAnswer               // HopAnswers's, reused
	tx      [probeDatagramLen]byte
	sent    uint64 // probes sent
}

// TraceAvailable reports whether the endpoint can trace the path to its
// peers and, when not, why (the trace event's available and why).
func (e *Endpoint) TraceAvailable() (bool, string) {
	if e.hops == nil {
		return false, noHopsWhy
	}
	if why := e.hops.TraceUnavailable(); why != "" {
		return false, why
	}
	return true, ""
}

// SetTraced starts (on) or stops tracing the path to peer; the tracer
// probes only traced links. It does nothing where TraceAvailable is false
// or the peer has no link. Stopping forgets the path.
func (e *Endpoint) SetTraced(peer PeerID, on bool) {
	if ok, _ := e.TraceAvailable(); !ok {
		return
	}
	l := e.links[peer]
	if on && l == nil {
		return
	}
	if e.tracing == nil {
		if !on {
			return
		}
		e.tracing = &tracing{t: trace.New(), traced: map[PeerID]netip.AddrPort{}, pinned: map[PeerID]bool{}}
		e.tracing.t.SetWait(e.traceWait)
	}
	tc := e.tracing
	if !on {
		tc.t.RemoveLink(trace.Link(peer))
		delete(tc.traced, peer)
		delete(tc.pinned, peer)
		return
	}
	if at, ok := tc.traced[peer]; ok && at != l.addr {
		tc.t.RemoveLink(trace.Link(peer)) // the peer moved: a new path
	}
	tc.t.AddLink(trace.Link(peer), l.addr.Addr().Unmap())
	tc.t.Pin(trace.Link(peer), tc.pinned[peer])
	tc.traced[peer] = l.addr
}

// PinTrace makes the trace of the link to peer look closely — a round of
// probes a second — while on holds (the Path view shows the link, or
// --trace names it). It does nothing for a link not traced.
func (e *Endpoint) PinTrace(peer PeerID, on bool) {
	tc := e.tracing
	if tc == nil {
		return
	}
	if _, ok := tc.traced[peer]; !ok {
		return
	}
	if on {
		tc.pinned[peer] = true
	} else {
		delete(tc.pinned, peer)
	}
	tc.t.Pin(trace.Link(peer), on)
}

// BurstTrace makes the trace of the link to peer look closely until now
// + d; with hold its baselines stay as they are meanwhile (an incident on
// the link is open: a long spike must not become the normal). It does
// nothing for a link not traced.
func (e *Endpoint) BurstTrace(now time.Duration, peer PeerID, d time.Duration, hold bool) {
	tc := e.tracing
	if tc == nil {
		return
	}
	if _, ok := tc.traced[peer]; ok {
		tc.t.Burst(trace.Link(peer), now, now+d, hold)
	}
}

// TraceBursting reports whether the trace of the link to peer looks
// closely at now.
func (e *Endpoint) TraceBursting(now time.Duration, peer PeerID) bool {
	return e.tracing != nil && e.tracing.t.Bursting(trace.Link(peer), now)
}

// traceWait is the wait of the link to peer at now, for its probes'
// timeouts: its retry timeout, or the age of its oldest unacknowledged
// packet when that is longer (through a spike no clean sample comes and
// the retry timeout keeps its old value).
func (e *Endpoint) traceWait(peer trace.Link, now time.Duration) time.Duration {
	l := e.links[PeerID(peer)]
	if l == nil {
		return 0
	}
	w := l.est.RTO()
	if since, ok := l.silentSince(); ok && now > since {
		w = max(w, now-since)
	}
	return w
}

// Path is the traced path to peer: per hop the address that answered and
// its figures, and where delay and loss start. False when the peer's link
// is not traced.
func (e *Endpoint) Path(peer PeerID) (trace.Result, bool) {
	if e.tracing == nil {
		return trace.Result{}, false
	}
	return e.tracing.t.Result(trace.Link(peer))
}

// MarkPath starts a new stretch of the trace of the link to peer: what
// PathSinceMark reads (a load test marks its loaded phases).
func (e *Endpoint) MarkPath(peer PeerID) {
	if e.tracing != nil {
		e.tracing.t.Mark(trace.Link(peer))
	}
}

// PathSinceMark is the trace of the link to peer over the stretch since
// MarkPath, false when the link is not traced.
func (e *Endpoint) PathSinceMark(peer PeerID) (trace.Result, bool) {
	if e.tracing == nil {
		return trace.Result{}, false
	}
	return e.tracing.t.ResultSinceMark(trace.Link(peer))
}

// traceTick takes in the ICMP answers the transport read, counts overdue
// probes lost and sends the probes due at now. Without a trace running it
// only empties the transport's queue.
func (e *Endpoint) traceTick(now time.Duration) {
	tc := e.tracing
	if tc == nil {
		if e.hops != nil {
			e.unheard = e.hops.HopAnswers(e.unheard[:0])
		}
		return
	}
	e.takeAnswers(now)
	tc.t.Tick(now)
	for {
		link, p, ok := tc.t.Next(e.sendNow(now))
		if !ok {
			return
		}
		e.sendProbe(e.links[PeerID(link)], p)
	}
}

// takeAnswers hands the ICMP answers the transport read to the tracer.
// Receive calls it too while a trace runs: on a busy socket answers must
// not wait for the next Tick behind a queue that ICMP errors may fill.
func (e *Endpoint) takeAnswers(now time.Duration) {
	tc := e.tracing
	tc.answers = e.hops.HopAnswers(tc.answers[:0])
	for _, a := range tc.answers {
		e.traceAnswer(now, a)
	}
}

// traceAnswer hands one ICMP answer to the tracer, on the link whose
// current address the datagram that drew it went to.
func (e *Endpoint) traceAnswer(now time.Duration, a HopAnswer) {
	tc := e.tracing
	at := a.At
	if at <= 0 {
		at = now
	}
	for peer, addr := range tc.traced {
		if addr == a.To {
			tc.t.Answer(trace.Link(peer), a.Answer, at)
			return
		}
	}
}

// sendNow is the time a datagram sent now leaves: the transport's clock
// when it has one (a round trip runs from the write), else now.
func (e *Endpoint) sendNow(now time.Duration) time.Duration {
	if e.clock != nil {
		return max(now, e.clock.Now())
	}
	return now
}

// sendProbe sends probe p to l's peer with its hop limit. A probe the
// transport refuses is lost: its timeout counts it.
func (e *Endpoint) sendProbe(l *link, p trace.Probe) {
	if l == nil {
		return
	}
	tc := e.tracing
	d := e.probeDatagram(tc.tx[:], p)
	tc.sent++
	if err := e.hops.SendHopLimit(l.addr, d, int(p.TTL)); err != nil {
		e.sendErrs++
	}
}

// Probes is how many probes the endpoint has sent.
func (e *Endpoint) Probes() uint64 {
	if e.tracing == nil {
		return 0
	}
	return e.tracing.sent
}

// probeDatagram puts the datagram carrying p, unsealed, in b.
func (e *Endpoint) probeDatagram(b []byte, p trace.Probe) []byte {
	PutHeader(b, Header{Token: e.cfg.Session, Sender: e.cfg.Self, Channel: ChannelControl})
	return trace.AppendProbe(b[:HeaderLen], p)
}

// isProbe reports whether d is a probe datagram: an unsealed control
// datagram that is exactly one probe record. Nothing else unsealed is
// taken in a keyed session.
func isProbe(h Header, d []byte) (trace.Probe, bool) {
	if h.Channel != ChannelControl || h.Flags != 0 || len(d) != probeDatagramLen || d[HeaderLen] != trace.RecProbe {
		return trace.Probe{}, false
	}
	p, err := trace.DecodeProbe(d[HeaderLen:])
	return p, err == nil
}

// receiveProbe answers a peer's probe, or hands the peer's answer to the
// tracer. l's address is the datagram's source (Receive checked).
func (e *Endpoint) receiveProbe(now time.Duration, l *link, p trace.Probe) {
	if p.Answer {
		if e.tracing != nil {
			e.tracing.t.Reply(trace.Link(l.peer), p, now)
		}
		return
	}
	if !l.probeReplies.Take(now, 1) {
		return // past the budget: no conforming peer probes this fast
	}
	var b [probeDatagramLen]byte
	if err := e.tr.Send(l.addr, e.probeDatagram(b[:], p.Reply())); err != nil {
		e.sendErrs++
	}
}

// untrace forgets a removed link's path.
func (e *Endpoint) untrace(peer PeerID) {
	if e.tracing != nil {
		e.tracing.t.RemoveLink(trace.Link(peer))
		delete(e.tracing.traced, peer)
	}
}
