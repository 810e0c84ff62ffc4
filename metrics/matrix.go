package metrics

import (
	"github.com/lagscope/lagscope/probe/feed"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The session's matrix on /metrics: every pair a machine
// knows, as its Matrix view holds it — its own row first-hand, every other
// seated player's row from that player's telemetry — under families of
// their own, lagscope_matrix_*, labelled session, player (the machine that
// measures) and peer (the other end). One watcher's scrape then carries the
// whole session.
//
// A family of its own, not the per-link families with one more label: the
// per-link families keep exactly the labels the contract fixes, and a
// Prometheus that scrapes every machine and a watcher sums the per-link
// counters without counting a link twice. Within the matrix families a pair
// appears once per scrape target: the machine's own row comes from its
// endpoint, never again from telemetry.

// pairLink is one directed link of the matrix as this exporter publishes it.
type pairLink struct {
	fold feed.LinkFold
	// last is what fold was last given: a row whose own or peer totals are
	// unknown for a moment (L3) keeps the values it had rather than
	// folding a zero, which the fold would read as a restart.
	last feed.LinkCounts
	// own, peer: this end's totals, the peer's half, have been known at
	// least once; until then their counters are absent, not zero.
	own, peer bool
	// live: the link is in its row's latest picture; gauges only then.
	live           bool
	srtt, rttvar   *float64 // nil while unknown (L3)
	rto, connTO    float64
	state, relayed int64
}

// matrixRow is one player's row: from is the observed machine whose Matrix
// feeds it. A machine's own row is first-hand and wins; a row learned from
// telemetry comes from the first observed machine that knew it, and from
// that one only — two machines' copies of the same counters, one older
// than the other, would look to the fold like restarts.
type matrixRow struct {
	from string
	live bool
	age  float64 // seconds since its newest telemetry arrived (0: own)
}

// observeMatrix takes the Matrix of one observed machine's View; e.mu is
// held.
func (e *Exporter) observeMatrix(v *feed.View, done bool) {
	if done {
		// The machine has ended: the rows it fed stop being live (their
		// gauges go); their counters stay.
		for name, r := range e.rows {
			if r.from == v.Self {
				r.live = false
				e.endRow(name, nil)
			}
		}
		return
	}
	removed := map[string]bool{}
	for _, p := range v.Players {
		if p.Removed {
			removed[p.Name] = true
		}
	}
	inMatrix := map[string]bool{}
	for i := range v.Matrix.Players {
		row := &v.Matrix.Players[i]
		inMatrix[row.Name] = true
		r := e.rows[row.Name]
		if r == nil {
			if !row.Known {
				continue // not heard from yet: nothing to say (L3)
			}
			r = &matrixRow{from: v.Self}
			e.rows[row.Name] = r
			e.rowOrder = append(e.rowOrder, row.Name)
		}
		if row.Self {
			r.from = v.Self // first-hand beats telemetry
		}
		if r.from != v.Self {
			continue
		}
		if !row.Known {
			r.live = false
			e.endRow(row.Name, nil)
			continue
		}
		r.live, r.age = true, row.Age.Seconds()
		seen := map[string]bool{}
		for j := range row.Links {
			e.observePair(row.Name, &row.Links[j])
			seen[row.Links[j].To] = true
		}
		// A link that left a known row: its peer was removed (retire: a
		// player of the same name later is a new link), or it is missing
		// for a moment (keep: the fold adds nothing twice).
		for _, k := range e.pairOrder {
			if p := e.pairs[k]; k.player == row.Name && !seen[k.peer] {
				p.live = false
				if removed[k.peer] {
					p.retire()
				}
			}
		}
	}
	for name, r := range e.rows {
		if r.from == v.Self && !inMatrix[name] {
			// The row left the Matrix: its player was removed (or is no
			// longer seated here).
			r.live = false
			e.endRow(name, removed)
		}
	}
}

// endRow ends the gauges of a row's links; those of a removed player (or
// to one) retire their totals into the fold.
func (e *Exporter) endRow(name string, removed map[string]bool) {
	for _, k := range e.pairOrder {
		if k.player != name {
			continue
		}
		p := e.pairs[k]
		p.live = false
		if removed[name] || removed[k.peer] {
			p.retire()
		}
	}
}

func (p *pairLink) retire() {
	p.fold.Retire()
	p.last = feed.LinkCounts{}
}

func (e *Exporter) observePair(from string, l *feed.MatrixLink) {
	k := linkKey{from, l.To}
	p := e.pairs[k]
	if p == nil {
		p = &pairLink{}
		e.pairs[k] = p
		e.pairOrder = append(e.pairOrder, k)
	}
	c := l.Counts(l.Caused)
	if l.LossKnown {
		p.own = true
	} else {
		c.Sent, c.Retransmitted, c.Expected, c.Lost = p.last.Sent, p.last.Retransmitted, p.last.Expected, p.last.Lost
	}
	if l.PeerKnown {
		p.peer = true
	} else {
		c.PeerExpected, c.PeerLost = p.last.PeerExpected, p.last.PeerLost
	}
	p.fold.Observe(c)
	p.last = c
	p.live = true
	p.srtt, p.rttvar = seconds(l.SRTT, l.RTTKnown), seconds(l.RTTVAR, l.RTTKnown)
	p.rto, p.connTO = l.RTO.Seconds(), l.ConnTimeout.Seconds()
	p.state = int64(l.State)
	p.relayed = 0
	if l.Relayed {
		p.relayed = 1
	}
}

// matrixInstruments are the lagscope_matrix_* families.
type matrixInstruments struct {
	sent, retx, expected, lost, peerExp, peerLost metric.Int64ObservableCounter
	waited                                        metric.Float64ObservableCounter
	srtt, rttvar, rto, connTO, age                metric.Float64ObservableGauge
	state, relayed                                metric.Int64ObservableGauge
}

func (mx *matrixInstruments) all() []metric.Observable {
	return []metric.Observable{mx.sent, mx.retx, mx.expected, mx.lost, mx.peerExp, mx.peerLost, mx.waited,
		mx.srtt, mx.rttvar, mx.rto, mx.connTO, mx.age, mx.state, mx.relayed}
}

// registerMatrix creates the matrix families. Names follow the per-link
// ones with matrix_ after lagscope_ (the exporter's naming rules are in
// register).
func registerMatrix(in *instruments) *matrixInstruments {
	const of = " Every pair this machine knows: player measures, peer is the other end."
	mx := &matrixInstruments{
		sent:     in.datagrams("lagscope.matrix.datagrams.sent", "Reliable datagrams player sent to peer, resends included."+of),
		retx:     in.datagrams("lagscope.matrix.datagrams.retransmitted", "Reliable datagrams player resent to peer."+of),
		expected: in.datagrams("lagscope.matrix.datagrams.expected", "Numbered datagrams from peer judged by player's loss window."+of),
		lost:     in.datagrams("lagscope.matrix.datagrams.lost", "Numbered datagrams from peer that never reached player."+of),
		peerExp:  in.datagrams("lagscope.matrix.datagrams.peer_expected", "Peer's expected total for the link, from its LinkReports."+of),
		peerLost: in.datagrams("lagscope.matrix.datagrams.peer_lost", "Peer's lost total for the link, from its LinkReports."+of),
		srtt:     in.fgauge("lagscope.matrix.srtt", "s", "Smoothed round trip of the link."+of),
		rttvar:   in.fgauge("lagscope.matrix.rttvar", "s", "Round-trip variation of the link."+of),
		rto:      in.fgauge("lagscope.matrix.rto", "s", "Retry timeout of the link: how long a reliable datagram waits for its ack before it is resent."+of),
		connTO:   in.fgauge("lagscope.matrix.connection_timeout", "s", "Connection timeout of the link: how long a datagram may go unacked before the link counts as bad."+of),
		age:      in.fgauge("lagscope.matrix.age", "s", "How long ago player's newest telemetry reached this machine (0: its own row)."),
		state:    in.igauge("lagscope.matrix.link_state", "{state}", "State of the link: 0 unmeasured, 1 provisional, 2 measured, 3 bad."+of),
		relayed:  in.igauge("lagscope.matrix.relayed", "{bool}", "1 while the pair's datagrams go through the host, 0 on a direct path."+of),
	}
	mx.waited = in.seconds("lagscope.matrix.caused_wait", "Time player waited before executing frames, last for peer's commands."+of)
	return mx
}

// observeMatrixInstruments reports the matrix at scrape time; e.mu is
// held. Counters of a pair stay after it ends (L5); a counter whose
// totals were never known is absent, not zero (L3); gauges only while the
// pair is in its row's picture.
func (e *Exporter) observeMatrixInstruments(o metric.Observer, mx *matrixInstruments) {
	for _, k := range e.pairOrder {
		p := e.pairs[k]
		at := metric.WithAttributeSet(attribute.NewSet(
			attribute.String("session", e.session), attribute.String("player", k.player), attribute.String("peer", k.peer)))
		t := p.fold.Total()
		if p.own {
			o.ObserveInt64(mx.sent, int64(t.Sent), at)
			o.ObserveInt64(mx.retx, int64(t.Retransmitted), at)
			o.ObserveInt64(mx.expected, int64(t.Expected), at)
			o.ObserveInt64(mx.lost, int64(t.Lost), at)
		}
		if p.peer {
			o.ObserveInt64(mx.peerExp, int64(t.PeerExpected), at)
			o.ObserveInt64(mx.peerLost, int64(t.PeerLost), at)
		}
		o.ObserveFloat64(mx.waited, t.Waited.Seconds(), at)
		if r := e.rows[k.player]; !p.live || r == nil || !r.live {
			continue
		}
		if p.srtt != nil {
			o.ObserveFloat64(mx.srtt, *p.srtt, at)
			o.ObserveFloat64(mx.rttvar, *p.rttvar, at)
		}
		o.ObserveFloat64(mx.rto, p.rto, at)
		o.ObserveFloat64(mx.connTO, p.connTO, at)
		o.ObserveInt64(mx.state, p.state, at)
		o.ObserveInt64(mx.relayed, p.relayed, at)
	}
	for _, name := range e.rowOrder {
		if r := e.rows[name]; r.live {
			o.ObserveFloat64(mx.age, r.age, metric.WithAttributeSet(attribute.NewSet(
				attribute.String("session", e.session), attribute.String("player", name))))
		}
	}
}
