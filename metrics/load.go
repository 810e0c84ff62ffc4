package metrics

import (
	"github.com/lagscope/lagscope/vocab"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/units"
)

// The load tests on /metrics: per pair a machine tested (player the
// tester, peer the other end) and direction — upload (the tester's
// sending), download (the peer's), both — the median round trip the load
// added, from the `load` events the machine publishes when a test ends.
// A direction the latest test did not measure (it stopped early) keeps
// the figure an earlier test gave it, as the diagnosis does; a direction
// no test measured has no series (unknown is not zero).

// loadKey is one series: the pair and the direction.
type loadKey struct{ player, peer, direction string }

// loadDirections are the directions' label values, in scrape order.
var loadDirections = vocab.LoadHolds

// observeLoads keeps the figures of the load events among events; e.mu is
// held. The last update of machine self (done) drops the series of the
// tests it ran.
func (e *Exporter) observeLoads(self string, events []feed.Event, done bool) {
	for _, ev := range events {
		l, ok := ev.(*feed.LoadEvent)
		if !ok {
			continue
		}
		for i, ms := range loadAdded(&l.Result) {
			if ms == nil {
				continue
			}
			k := loadKey{l.From, l.To, string(loadDirections[i])}
			if _, ok := e.loads[k]; !ok {
				e.loadOrder = append(e.loadOrder, k)
			}
			e.loads[k] = units.FromMillis(*ms).Seconds() // 8.2 ms is 0.0082 s, not 0.008199999999999999
		}
	}
	if !done {
		return
	}
	kept := e.loadOrder[:0]
	for _, k := range e.loadOrder {
		if k.player == self {
			delete(e.loads, k)
			continue
		}
		kept = append(kept, k)
	}
	e.loadOrder = kept
}

// loadAdded is a result's median added round trip per direction, in the
// order of loadDirections, ms; nil where it has none.
func loadAdded(r *loadtest.Result) [len(loadDirections)]*float64 {
	var out [len(loadDirections)]*float64
	if r.Upload != nil {
		out[0] = r.Upload.AddedMS
	}
	if r.Download != nil {
		out[1] = r.Download.AddedMS
	}
	if r.Both != nil {
		out[2] = r.Both.AddedMS
	}
	return out
}

// registerLoads creates the load family and the callback that publishes
// it at scrape time.
func (e *Exporter) registerLoads(m metric.Meter) error {
	in := &instruments{m: m}
	added := in.fgauge("lagscope.load.added", "s",
		"Round trip that a full line added between player, who ran the load test, and peer: the median over the loaded part "+
			"of the latest test that measured the direction. Direction upload loads what player sends, download what peer sends, "+
			"both loads the two at once. Absent until a test has measured the direction.")
	return e.observe(in, func(o metric.Observer) {
		for _, k := range e.loadOrder {
			o.ObserveFloat64(added, e.loads[k], metric.WithAttributeSet(attribute.NewSet(attribute.String("session", e.session),
				attribute.String("player", k.player), attribute.String("peer", k.peer), attribute.String("direction", k.direction))))
		}
	}, added)
}
