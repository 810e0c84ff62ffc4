package metrics

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// The session's incidents on /metrics, by cause (labels session, cause),
// from the `incident` lines one machine tells — every machine tells the
// same incidents from the same evidence, so one machine's lines are the
// session's, and a watcher's are too:
//
//   - lagscope_incidents_total: incidents opened, under the cause the
//     first line names;
//   - lagscope_incident_wait_seconds_total: the waits attributed to
//     incidents (every seated machine's, as wait_ms sums them), each
//     line's growth of wait_ms under the cause that line names;
//   - lagscope_incidents_open: the incidents open now, by their cause now.
//
// Every cause an incident may name (vocab.IncidentCauses) has its series
// from the teller's first update, at zero until something happens, so a
// rate over the first incident sees it.

// causeCount is one cause's figures on one machine.
type causeCount struct {
	opened uint64
	waited float64 // seconds
	open   int64
}

// incidentState is what a machine's lines have said of one incident.
type incidentState struct {
	cause  vocab.Cause
	waitMs float64
	open   bool
}

// incidentBook is one machine's incidents as its lines tell them.
type incidentBook struct {
	causes [len(vocab.IncidentCauses)]causeCount
	seen   map[int]*incidentState
	closed int // closed incidents in seen, for the bound below
}

// maxClosedKept bounds the closed incidents a book remembers (a line of
// an incident it forgot would count it again; none comes after the close).
const maxClosedKept = 1000

func newIncidentBook() *incidentBook { return &incidentBook{seen: map[int]*incidentState{}} }

// causeSlot is c's place in vocab.IncidentCauses; a cause that is none of
// them counts as unknown.
func causeSlot(c vocab.Cause) int {
	unknown := 0
	for i, x := range vocab.IncidentCauses {
		if c == x {
			return i
		}
		if x == vocab.CauseUnknown {
			unknown = i
		}
	}
	return unknown
}

// take counts one incident line.
func (b *incidentBook) take(inc *feed.Incident) {
	st := b.seen[inc.ID]
	if st == nil {
		st = &incidentState{cause: inc.Cause, open: true}
		b.seen[inc.ID] = st
		b.causes[causeSlot(inc.Cause)].opened++
		b.causes[causeSlot(inc.Cause)].open++
	}
	if !st.open {
		return
	}
	if grew := inc.WaitMs - st.waitMs; grew > 0 {
		b.causes[causeSlot(inc.Cause)].waited += units.FromMillis(grew).Seconds()
		st.waitMs = inc.WaitMs
	}
	if inc.Cause != st.cause {
		b.causes[causeSlot(st.cause)].open--
		b.causes[causeSlot(inc.Cause)].open++
		st.cause = inc.Cause
	}
	if inc.Phase == vocab.IncidentClose {
		st.open = false
		b.causes[causeSlot(st.cause)].open--
		b.closed++
		if b.closed > maxClosedKept {
			b.forgetClosed()
		}
	}
}

// forgetClosed drops the older half of the closed incidents.
func (b *incidentBook) forgetClosed() {
	lowest := -1
	for id, st := range b.seen {
		if !st.open && (lowest < 0 || id < lowest) {
			lowest = id
		}
	}
	for id, st := range b.seen {
		if !st.open && id < lowest+maxClosedKept/2 {
			delete(b.seen, id)
			b.closed--
		}
	}
}

// done is the machine's end: nothing of it is open any more.
func (b *incidentBook) done() {
	for i := range b.causes {
		b.causes[i].open = 0
	}
	for _, st := range b.seen {
		st.open = false
	}
}

// SetIncidentTeller names the machine whose incident lines the incident
// families count (the machine this process runs as: with several
// machines in one process, the demo, each tells the same incidents).
// Unset, or while the named machine has not been observed, they count the
// first machine observed.
func (e *Exporter) SetIncidentTeller(name string) {
	e.mu.Lock()
	e.teller = name
	e.mu.Unlock()
}

// observeIncidents counts the incident lines among events of machine
// self; e.mu is held.
func (e *Exporter) observeIncidents(self string, events []feed.Event, done bool) {
	b := e.books[self]
	if b == nil {
		b = newIncidentBook()
		e.books[self] = b
		if e.firstTeller == "" {
			e.firstTeller = self
		}
	}
	for _, ev := range events {
		if inc, ok := ev.(*feed.IncidentEvent); ok {
			b.take(&inc.Incident)
		}
	}
	if done {
		b.done()
	}
}

// tellerBook is the book the families publish, nil before any.
func (e *Exporter) tellerBook() *incidentBook {
	if b := e.books[e.teller]; b != nil {
		return b
	}
	return e.books[e.firstTeller]
}

// registerIncidents creates the incident families and the callback that
// publishes them at scrape time.
func (e *Exporter) registerIncidents(m metric.Meter) error {
	opened, err := m.Int64ObservableCounter("lagscope.incidents", metric.WithUnit("{incident}"),
		metric.WithDescription("Incidents opened in the session, by the cause their first line names (one machine's lines: each tells the same incidents)."))
	if err != nil {
		return err
	}
	in := &instruments{m: m}
	waited := in.seconds("lagscope.incident_wait",
		"Waits attributed to incidents, every seated machine's summed, by the cause the incident named as they grew.")
	open := in.igauge("lagscope.incidents_open", "{incident}", "Incidents open now, by their cause now.")
	return e.observe(in, func(o metric.Observer) {
		b := e.tellerBook()
		if b == nil {
			return
		}
		for i, c := range vocab.IncidentCauses {
			at := metric.WithAttributeSet(attribute.NewSet(attribute.String("session", e.session), attribute.String("cause", string(c))))
			n := &b.causes[i]
			o.ObserveInt64(opened, int64(n.opened), at)
			o.ObserveFloat64(waited, n.waited, at)
			o.ObserveInt64(open, max(n.open, 0), at)
		}
	}, opened, waited, open)
}
