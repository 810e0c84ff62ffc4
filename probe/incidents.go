package probe

import (
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/incident"
	"github.com/lagscope/lagscope/vocab"
)

// incidents is what the peer keeps of the incidents it tells (package
// incident): the detector, when it next reads the evidence, and the
// sentences that lead the verdict while incidents are open.
type incidents struct {
	d    incident.Detector
	next time.Duration
	lead []string
	// wheres holds, by player, the largest where the traces judged while
	// an incident on that player is open (incident_trace.go).
	wheres map[string]feed.IncidentWhere
}

// bloatGrade is the added round trip from which a load test grades a line
// C or worse (docs/load-test.md): an incident on that line that rises by
// about as much is its queue.
const bloatGrade = 60.0

// evaluateIncidents hands the detector this machine's evidence once every
// incident.Every of the game and publishes what it tells.
func (p *Peer) evaluateIncidents(now time.Duration) {
	if !p.started || p.done || now < p.inc.next {
		return
	}
	p.inc.next = now + incident.Every
	in := p.incidentInput(now)
	for _, inc := range p.inc.d.Observe(nil, in) {
		p.emit(&feed.IncidentEvent{Header: feed.Header{Type: vocab.EventIncident, Frame: p.frame}, Incident: inc})
	}
	p.burstTraces(now)
	lead := p.inc.d.Lead()
	if slices.Equal(lead, p.inc.lead) {
		return
	}
	p.inc.lead = lead
	p.releadDiagnosis()
}

// releadDiagnosis gives the latest diagnosis the incidents' lead: a copy,
// since Views already published hold the one before (the UI reads them on
// its own goroutine).
func (p *Peer) releadDiagnosis() {
	if p.dg.last != nil {
		d := *p.dg.last
		d.SetLead(p.inc.lead)
		p.dg.last = &d
	}
}

// incidentInput is what the detector reads at now: every seated player's
// row (this machine's own, the others' from telemetry or, in the
// simulator, their own), the timing's target, the load test under way and
// what earlier tests and the hop traces found.
func (p *Peer) incidentInput(now time.Duration) incident.Input {
	m := p.knownMatrix(now)
	in := incident.Input{At: now, Frame: p.frame, FPS: p.sched.FPS(), Rung: p.sched.Target().Rung(), Matrix: &m}
	in.Game = func(f int) time.Duration {
		g, _ := p.GameAt(f)
		return g
	}
	if p.cfg.GameClock {
		in.At -= p.startAt
	} else {
		in.Start = p.startAt
	}
	if p.load.testing() {
		in.Load = &feed.LoadPair{From: p.load.quiet[0], To: p.load.quiet[1]}
	}
	last := p.dg.last
	in.Bloat = func(name string) (float64, bool) {
		for _, l := range p.load.latest {
			if l.Player == name {
				ms := math.Max(nanZero(l.UploadMs), nanZero(l.DownloadMs))
				return ms, ms >= bloatGrade
			}
		}
		return 0, false
	}
	in.Causes = func(a, b string) []vocab.Cause {
		if last == nil {
			return nil
		}
		if b != "" {
			for i := range last.Links {
				if l := &last.Links[i]; l.Between == [2]string{a, b} || l.Between == [2]string{b, a} {
					return l.Causes
				}
			}
			return nil
		}
		for i := range last.Players {
			if last.Players[i].Player == a {
				return last.Players[i].Causes
			}
		}
		return nil
	}
	in.Where = func(name string) *feed.IncidentWhere {
		if w := p.traceWhere(now, name); w != nil {
			return w
		}
		if last == nil {
			return nil
		}
		for i := range last.Players {
			if w := last.Players[i].Where; last.Players[i].Player == name && w != nil {
				return &feed.IncidentWhere{Link: w.Link, TTL: w.TTL, AddedMs: math.Round(w.AddedMs*10) / 10}
			}
		}
		return nil
	}
	return in
}

func nanZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// CloseIncidents ends the incidents still open when the run ends: a close
// line each, before the summary.
func (p *Peer) CloseIncidents(now time.Duration) {
	if !p.started {
		return
	}
	in := p.incidentInput(now)
	for _, inc := range p.inc.d.Close(nil, in) {
		p.emit(&feed.IncidentEvent{Header: feed.Header{Type: vocab.EventIncident, Frame: p.frame}, Incident: inc})
	}
	p.inc.lead = nil
	p.releadDiagnosis()
	p.flushEvents()
}

// Incidents is every incident this machine has closed, as its last line:
// the summary's incidents.
func (p *Peer) Incidents() []feed.Incident {
	out := p.inc.d.All()
	if out == nil {
		out = []feed.Incident{}
	}
	return out
}
