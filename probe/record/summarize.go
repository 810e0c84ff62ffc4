package record

import (
	"math"
	"sort"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// How much a report shows: enough to explain a session, little enough to
// paste into a chat.
const (
	reportTimingRows = 12
	reportWaitRows   = 5
)

type linkAcc struct {
	from, to   string
	srtt, rvar []float64
	fold       feed.LinkFold
	bad        []episode
	badSince   time.Duration
	inBad      bool
	last       time.Duration
	samples    int
}

// sample takes the link as it stood at at.
func (a *linkAcc) sample(at time.Duration, l feed.Link, waited time.Duration, bad bool) {
	a.samples++
	a.last = at
	if l.RTTKnown {
		a.srtt = append(a.srtt, units.Millis(l.SRTT))
		a.rvar = append(a.rvar, units.Millis(l.RTTVAR))
	}
	a.fold.Observe(l.Counts(waited))
	switch {
	case bad && !a.inBad:
		a.inBad, a.badSince = true, at
	case !bad && a.inBad:
		a.endBad(at)
	}
}

// endBad closes the open bad episode at at.
func (a *linkAcc) endBad(at time.Duration) {
	a.inBad = false
	a.bad = append(a.bad, episode{FromMs: units.Millis(a.badSince), ToMs: units.Millis(at)})
}

// report is the link's row.
func (a *linkAcc) report() linkReport {
	if a.inBad {
		a.bad = append(a.bad, episode{FromMs: units.Millis(a.badSince), ToMs: units.Millis(a.last), Open: true})
	}
	t := a.fold.Total()
	lr := linkReport{From: a.from, To: a.to, Samples: a.samples, SRTT: spreadOf(a.srtt), Jitter: mean(a.rvar),
		Sent: t.Sent, Retransmitted: t.Retransmitted, Expected: t.Expected, Lost: t.Lost, PeerExpected: t.PeerExpected, PeerLost: t.PeerLost,
		ResendShare: share(t.Retransmitted, t.Sent), InboundLoss: share(t.Lost, t.Expected), OutboundLoss: share(t.PeerLost, t.PeerExpected),
		Bad: a.bad}
	if lr.Bad == nil {
		lr.Bad = []episode{}
	}
	return lr
}

type cmdKey struct {
	player      string
	seq         uint32
	frame, send int
}

// summary is the state of one pass over a recording's records.
type summary struct {
	r   *report
	fps int // the frame rate of the latest View in the game
	// hasViews: link numbers come from the Views (with waits and the bad
	// flag); a recording without any falls back to its link lines.
	hasViews bool

	links     map[[2]string]*linkAcc
	linkOrder [][2]string
	lastView  map[string][]feed.LinkView

	players     map[string]bool
	playerOrder []string

	// Network events are the same on every machine (S7): a recording of
	// several machines keeps each once.
	seenNet map[string]bool
	causes  map[string]*causeRow
	stalls  []waitRow

	seenCmd map[cmdKey]bool
	cmds    map[string]*commandRow

	// Incidents (incidents.go): the latest line of each, in the order
	// they were first told, and the summary's list when there is one.
	incidents    []*incidentAcc
	incidentOf   map[incidentKey]*incidentAcc
	endIncidents []feed.Incident

	paths map[[2]string]pathReport // the last path of each traced link (path.go)
	loads []loadReport             // every load test, in the order they ended (load.go)
}

// summarize builds the report of a recording.
func summarize(rec *Recording) *report {
	r := &report{Program: rec.Header.Program, Session: rec.Header.Session, Protocol: rec.Header.Protocol, Virtual: rec.Header.Virtual,
		Links: []linkReport{}, Timing: []timingRow{}, Waits: []waitRow{}, Causes: []causeRow{}}
	if rec.Stop != nil {
		r.Stopped = rec.Stop.Error()
	}
	s := &summary{r: r, links: map[[2]string]*linkAcc{}, lastView: map[string][]feed.LinkView{}, players: map[string]bool{},
		seenNet: map[string]bool{}, causes: map[string]*causeRow{}, seenCmd: map[cmdKey]bool{}, cmds: map[string]*commandRow{},
		incidentOf: map[incidentKey]*incidentAcc{}}
	for _, x := range rec.Records {
		if x.Kind == KindView {
			s.hasViews = true
			break
		}
	}
	for _, x := range rec.Records {
		r.Length = max(r.Length, x.At)
		switch x.Kind {
		case KindCommand:
			s.command(x.Command)
		case KindView:
			s.view(x.At, x.View)
		case KindEvent:
			s.event(x)
		}
	}
	s.finish()
	s.finishIncidents(rec.Header.Protocol)
	r.clock, r.fps = sessionClockOf(rec), s.fps // sessiontime.go
	return r
}

func (s *summary) acc(from, to string) *linkAcc {
	k := [2]string{from, to}
	a := s.links[k]
	if a == nil {
		a = &linkAcc{from: from, to: to}
		s.links[k] = a
		s.linkOrder = append(s.linkOrder, k)
	}
	return a
}

func (s *summary) seenPlayer(n string) {
	if n != "" && !s.players[n] {
		s.players[n] = true
		s.playerOrder = append(s.playerOrder, n)
	}
}

// command counts an executed command once, however many machines
// recorded it.
func (s *summary) command(c *Command) {
	k := cmdKey{c.Player, c.Seq, c.Frame, c.SendFrame}
	if s.seenCmd[k] {
		return
	}
	s.seenCmd[k] = true
	row := s.cmds[c.Player]
	if row == nil {
		row = &commandRow{Player: c.Player}
		s.cmds[c.Player] = row
	}
	row.Count++
	if c.Moved() {
		row.Moved++
	}
}

// view samples a machine's links and retires those gone from its picture.
func (s *summary) view(at time.Duration, v *feed.View) {
	s.seenPlayer(v.Self)
	if v.FPS > 0 && v.Started {
		s.fps = v.FPS
	}
	if s.r.Session == "" {
		// A live recording's header is written before the session
		// has a name (a joiner learns it from the Welcome).
		s.r.Session = v.Session
	}
	present := map[string]bool{}
	for _, l := range v.Links {
		present[l.Peer] = true
		s.acc(v.Self, l.Peer).sample(at, l.Link, l.Caused, l.Bad || l.State == feed.LinkBad)
	}
	// A link gone from the picture has ended: its totals stay.
	for _, l := range s.lastView[v.Self] {
		if !present[l.Peer] {
			a := s.acc(v.Self, l.Peer)
			a.fold.Retire()
			if a.inBad {
				a.endBad(at)
			}
		}
	}
	s.lastView[v.Self] = v.Links
}

func (s *summary) event(x Record) {
	if x.Event == nil {
		return
	}
	if x.Event.Network() {
		key := string(x.Raw)
		if s.seenNet[key] {
			return
		}
		s.seenNet[key] = true
	}
	r := s.r
	switch e := x.Event.(type) {
	case *feed.LinkEvent:
		if s.hasViews {
			return
		}
		if l, err := e.LinkStat.Link(); err == nil {
			s.acc(e.From, e.To).sample(x.At, l, 0, l.State == feed.LinkBad)
		}
	case *feed.TimingEvent:
		r.Timing = append(r.Timing, timingRow{AtMs: units.Millis(x.At), Frame: e.Frame, Decided: e.Decided, SendPeriod: e.SendPeriod, LookAhead: e.LookAhead,
			Rung: e.Rung, Tier: e.Tier, FPS: e.FPS, Reason: e.Reason})
	case *feed.StallEvent:
		s.seenPlayer(e.Player)
		s.stalls = append(s.stalls, waitRow{AtMs: units.Millis(x.At), Frame: e.Frame, Player: e.Player, Cause: e.Cause, WaitMs: e.WaitMs})
		c := s.causes[e.Cause]
		if c == nil {
			c = &causeRow{Cause: e.Cause, Of: map[string]float64{}}
			s.causes[e.Cause] = c
		}
		c.TotalMs += e.WaitMs
		c.Waits++
		c.Of[e.Player] += e.WaitMs
	case *feed.ReportEvent:
		s.seenPlayer(e.Player)
	case *feed.DiagnosisEvent:
		s.diagnosis(x.At, e.Frame, false, e.Diagnosis)
	case *feed.IncidentEvent:
		s.incidentLine(x.From, e.Incident)
	case *feed.SummaryEvent:
		if e.Incidents != nil { // a summary written before incidents has none
			s.endIncidents = e.Incidents
		}
		r.endFrame = &e.Frame
		if e.Diagnosis.Verdict != "" { // a summary written before the diagnosis has none
			s.diagnosis(x.At, e.Frame, true, e.Diagnosis)
		}
	case *feed.RemovedEvent:
		r.Removed = append(r.Removed, removedRow{AtMs: units.Millis(x.At), Frame: e.Frame, Player: e.Player})
	case *feed.PathEvent:
		s.path(x.At, e)
	case *feed.LoadEvent:
		s.load(x.At, e)
	}
}

// finish orders and trims what the pass gathered.
func (s *summary) finish() {
	r := s.r
	r.LengthMs = units.Millis(r.Length)
	r.Players = s.playerOrder
	if r.Players == nil {
		r.Players = []string{}
	}
	// Links in name order: the order machines first showed them depends on
	// who joined first, which a reader cannot see.
	order := s.linkOrder
	sort.SliceStable(order, func(i, j int) bool {
		if order[i][0] != order[j][0] {
			return order[i][0] < order[j][0]
		}
		return order[i][1] < order[j][1]
	})
	for _, k := range order {
		r.Links = append(r.Links, s.links[k].report())
	}
	if n := len(r.Timing); n > reportTimingRows {
		r.TimingOmitted = n - reportTimingRows
		r.Timing = r.Timing[n-reportTimingRows:]
	}
	s.finishPaths()
	s.finishLoads()
	for _, row := range s.cmds {
		r.Commands = append(r.Commands, *row)
	}
	sort.Slice(r.Commands, func(i, j int) bool { return r.Commands[i].Player < r.Commands[j].Player })
	sort.SliceStable(s.stalls, func(i, j int) bool { return s.stalls[i].WaitMs > s.stalls[j].WaitMs })
	r.Waits = append(r.Waits, s.stalls[:min(len(s.stalls), reportWaitRows)]...)
	for _, c := range s.causes {
		r.Causes = append(r.Causes, *c)
	}
	sort.Slice(r.Causes, func(i, j int) bool {
		if r.Causes[i].TotalMs != r.Causes[j].TotalMs {
			return r.Causes[i].TotalMs > r.Causes[j].TotalMs
		}
		return r.Causes[i].Cause < r.Causes[j].Cause
	})
}

func share(part, whole uint64) *float64 {
	if whole == 0 {
		return nil // nothing counted is not a clean link (L3)
	}
	s := float64(part) / float64(whole)
	return &s
}

func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	return &m
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	lo, hi := s[0], s[len(s)-1]
	// Nearest-rank 95th percentile.
	p := s[int(math.Ceil(0.95*float64(len(s))))-1]
	return spread{Min: &lo, Mean: mean(s), P95: &p, Max: &hi}
}
