package metrics

import (
	"strconv"

	"github.com/lagscope/lagscope/probe/feed"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The hop traces on /metrics: per hop of every link a machine traces
// (View.Paths), its median round trip and its loss share, labelled session,
// player (the machine that traces), peer and ttl (the hop). Only traced
// links have series, and a hop only what it has: no round trip before it
// answers, no loss before a probe to it has an outcome (unknown is not
// zero). A link that stops being traced loses its series.

// pathHop is one hop's figures as the exporter publishes them.
type pathHop struct {
	peer   string
	ttl    string
	rtt    *float64 // seconds; nil while the hop has not answered
	loss   *float64 // nil before any outcome
	labels attribute.Set
}

// observePaths keeps the hops of v's traced paths; e.mu is held. The last
// update (done) drops them.
func (e *Exporter) observePaths(v *feed.View, done bool) {
	if e.paths == nil {
		e.paths = map[string][]pathHop{}
	}
	if _, ok := e.paths[v.Self]; !ok && !done {
		e.pathOrder = append(e.pathOrder, v.Self)
	}
	if done {
		delete(e.paths, v.Self)
		return
	}
	hops := e.paths[v.Self][:0]
	for _, p := range v.Paths {
		if !p.Available {
			continue
		}
		for _, h := range p.Hops {
			ph := pathHop{peer: p.Peer, ttl: strconv.Itoa(h.TTL)}
			if h.Answered {
				s := h.Median.Seconds()
				ph.rtt = &s
			}
			if h.Sent > 0 {
				l := h.Loss
				ph.loss = &l
			}
			ph.labels = attribute.NewSet(attribute.String("session", e.session), attribute.String("player", v.Self),
				attribute.String("peer", ph.peer), attribute.String("ttl", ph.ttl))
			hops = append(hops, ph)
		}
	}
	e.paths[v.Self] = hops
}

// registerPaths creates the two path families and the callback that
// publishes them at scrape time.
func (e *Exporter) registerPaths(m metric.Meter) error {
	in := &instruments{m: m}
	rtt := in.fgauge("lagscope.path.hop.rtt", "s",
		"Median round trip of the probes to the hop (ttl) on the path from player to peer, over the hop's latest probes; "+
			"absent until the hop answers. Only traced links have series.")
	loss := in.fgauge("lagscope.path.hop.loss", "1",
		"Share of the probes to the hop (ttl) on the path from player to peer that drew no answer, over the hop's latest probes. "+
			"Only traced links have series.")
	return e.observe(in, func(o metric.Observer) {
		for _, player := range e.pathOrder {
			for _, h := range e.paths[player] {
				at := metric.WithAttributeSet(h.labels)
				if h.rtt != nil {
					o.ObserveFloat64(rtt, *h.rtt, at)
				}
				if h.loss != nil {
					o.ObserveFloat64(loss, *h.loss, at)
				}
			}
		}
	}, rtt, loss)
}
