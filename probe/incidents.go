package probe

import (
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
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
	p.burstIncidents(now)
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

// incidentBurst is how long each evaluation's call makes an open
// incident's links burst: past the next evaluation, so the burst holds
// while the incident is open and ends soon after it closes.
const incidentBurst = 3 * incident.Every

// burstIncidents asks the hop trace to look closely at the links of every
// open incident (docs/path.md, "The burst"), its baselines held meanwhile:
// a player's incident, the link to that player, or, on that player's own
// machine, every link it has to the others; a path's, the link between
// its two ends, on either end.
func (p *Peer) burstIncidents(now time.Duration) {
	for _, inc := range p.inc.d.Open() {
		switch {
		case inc.Between != nil:
			a, b := inc.Between[0], inc.Between[1]
			if a == p.self.Name {
				p.burstTo(now, b)
			} else if b == p.self.Name {
				p.burstTo(now, a)
			}
		case inc.Player != nil && *inc.Player == p.self.Name:
			for _, pl := range p.players {
				if pl != p.self && !pl.removed {
					p.ep.BurstTrace(now, pl.ID, incidentBurst, true)
				}
			}
		case inc.Player != nil:
			p.burstTo(now, *inc.Player)
		}
	}
}

// burstTo bursts the trace of the link to the player named name.
func (p *Peer) burstTo(now time.Duration, name string) {
	for _, pl := range p.players {
		if pl.Name == name && pl != p.self && !pl.removed {
			p.ep.BurstTrace(now, pl.ID, incidentBurst, true)
			return
		}
	}
}

// traceWhere is where the player named name's delay starts on its own side
// (its LAN, its line out, its ISP), as the traces judge it now: this
// machine's own traces when it is that player, else the summaries that
// player shared of its traces (pathshare.go); of several, the one that
// adds most. nil while no trace has judged it.
func (p *Peer) traceWhere(now time.Duration, name string) *feed.IncidentWhere {
	var best *diagnosis.TraceStart
	take := func(d *diagnosis.TraceStart) {
		if d != nil && ownSide(d.Link) && d.AddedMs > 0 && (best == nil || d.AddedMs > best.AddedMs || (d.AddedMs == best.AddedMs && d.TTL < best.TTL)) {
			best = d
		}
	}
	if name == p.self.Name {
		for _, pl := range p.players {
			if pl == p.self || pl.removed {
				continue
			}
			if r, ok := p.ep.Path(pl.ID); ok && r.DelayStarts != nil {
				d := r.DelayStarts
				take(&diagnosis.TraceStart{TTL: d.TTL, Link: d.Link, AddedMs: d.AddedMS})
			}
		}
	} else {
		for k, sp := range p.paths.in {
			if from := p.byID[k.from]; from != nil && from.Name == name && now-sp.at <= pathSummaryAge {
				take(sp.delay)
			}
		}
	}
	if best == nil {
		return nil
	}
	return &feed.IncidentWhere{Link: best.Link, TTL: best.TTL, AddedMs: math.Round(best.AddedMs*10) / 10}
}

// ownSide: a delay starting on link lies on the tracing player's own side.
func ownSide(link vocab.HopLink) bool {
	return link == vocab.HopLAN || link == vocab.HopUplink || link == vocab.HopISP
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
