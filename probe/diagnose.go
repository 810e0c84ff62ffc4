package probe

// The diagnosis: at every master evaluation frame (S9) once every
// seated player has been measured, each machine works out who and what
// costs the session from every link it knows — its own row of the matrix
// and the rows its telemetry brought — publishes it as a `diagnosis` event
// and keeps it for its View. docs/diagnosis.md says what it reads and how.

import (
	"cmp"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/snapshot"
	"github.com/lagscope/lagscope/rungs"
)

// diagState is a peer's diagnosis scratch and history.
type diagState struct {
	g  diagnosis.Diagnoser
	in diagnosis.Input
	on bool // every seated player was measured at an evaluation: events flow

	// marks are the waits each player's own delay made (owned) at the
	// last two evaluations, oldest first, for the waits rule's window.
	marks  [2]waitMark
	nmarks int

	// before is the culprit of the last evaluation that named one, kept
	// while the descent after it is pending (diagnosis.Input.Before).
	before string
	// needed is what the worst reported round trip needed with headroom at
	// the latest evaluation (View.Needed).
	needed rungs.Timing

	rows   []int              // scratch: matrix row index of each input player
	dirs   []*feed.MatrixLink // scratch: n×n directed links, nil when unknown
	caused []time.Duration    // scratch: per input player, as recorded
	// owned is, per input player, the waits its own delay made: caused,
	// with the knock-on chains' waits moved to their roots.
	owned []time.Duration
	last  *diagnosis.Diagnosis
}

type waitMark struct {
	at     time.Duration
	caused map[string]time.Duration
}

// evaluateDiagnosis runs at every master evaluation frame (S9) on every
// machine, observers too.
func (p *Peer) evaluateDiagnosis(now time.Duration, f int) {
	if !p.started || p.self.removed {
		return
	}
	if !p.dg.on && p.record.Summary(f).Complete() {
		p.dg.on = true
	}
	if p.masterP == p.self && !p.self.Observer {
		p.shadow = *p.master // Evaluate ran on this frame already (frames.go)
	} else {
		p.shadow.Evaluate(f, p.record, p.speed)
	}
	m := p.knownMatrix(now)
	p.diagnosisInput(now, &m)
	in := &p.dg.in
	in.Frame, in.Outlook, in.Before = f, p.shadow.Outlook(f, p.record), p.dg.before
	if s := p.record.Summary(f); s.WithRTT > 0 {
		p.dg.needed = rungs.Need(rungs.WithHeadroom(s.Worst), p.shadow.FPS())
	}
	// While a load test runs its load is what the links show: no
	// diagnosis is published (the last one stays), and the rest of the
	// evaluation goes on so that nothing is stale when the test ends.
	if p.dg.on && !p.load.testing() {
		d := p.dg.g.Diagnose(p.dg.in)
		d.SetLead(p.inc.lead)
		switch {
		case d.Culprit != "":
			p.dg.before = d.Culprit
		case !in.Outlook.Pending():
			p.dg.before = ""
		}
		p.dg.last = &d
		p.emit(&feed.DiagnosisEvent{Header: feed.Header{Type: vocab.EventDiagnosis, Frame: f}, Diagnosis: d})
	}
	p.markWaits(now)
}

// Diagnose is a diagnosis from what this machine knows at now, whether or
// not every player has been measured: the summary's (`summary.diagnosis`,
// always present; with nothing measured its verdict says so).
func (p *Peer) Diagnose(now time.Duration) diagnosis.Diagnosis {
	if !p.started {
		return p.dg.g.Diagnose(diagnosis.Input{Speed: p.speed})
	}
	return p.diagnose(now)
}

// LastDiagnosis is the diagnosis of the last evaluation, nil before the
// first (View.Diagnosis).
func (p *Peer) LastDiagnosis() *diagnosis.Diagnosis { return p.dg.last }

func (p *Peer) diagnose(now time.Duration) diagnosis.Diagnosis {
	m := p.knownMatrix(now)
	p.diagnosisInput(now, &m)
	return p.dg.g.Diagnose(p.dg.in)
}

// knownMatrix is every seated player's links as this machine knows them,
// or as Config.FillMatrix completes them.
func (p *Peer) knownMatrix(now time.Duration) feed.MatrixView {
	m := p.tm.matrix(now, p)
	if p.cfg.FillMatrix != nil {
		p.cfg.FillMatrix(now, &m)
	}
	return m
}

// diagnosisInput fills p.dg.in from the matrix: the seated players in
// house order, their latest reports (S5–S7), every pair both or one of
// whose ends this machine knows, the hop traces and the latest load test
// of each player's line.
func (p *Peer) diagnosisInput(now time.Duration, m *feed.MatrixView) {
	dg := &p.dg
	in := &dg.in
	in.Players, in.Pairs = in.Players[:0], in.Pairs[:0]
	// The target the master chose at this evaluation (its timing event
	// executes a few frames later), as the shadow evaluator follows it.
	in.Speed, in.Target, in.InForce, in.FPS = p.speed, p.shadow.Target(), p.sched.InForce(), p.sched.FPS()
	in.Frame, in.Outlook, in.Before = p.frame, rungs.Outlook{}, ""
	in.Elapsed = max(now-p.startAt, 0)
	n := len(m.Players)
	dg.caused = growDur(dg.caused, n)
	if cap(dg.dirs) < n*n {
		dg.dirs = make([]*feed.MatrixLink, n*n)
	}
	dirs := dg.dirs[:n*n]
	clear(dirs)
	for i := range m.Players {
		row := &m.Players[i]
		pd := diagnosis.Player{Name: row.Name}
		if pl := p.playerNamed(row.Name); pl != nil {
			if rep, ok := p.record.Latest(pl.idx); ok {
				pd.Process = rep.Process
				pd.Measured = rep.HasRTT && p.record.Fresh(pl.idx, p.frame)
			}
		}
		in.Players = append(in.Players, pd)
		if !row.Known {
			continue
		}
		for k := range row.Links {
			l := &row.Links[k]
			if j := m.Index(l.To); j >= 0 && j != i {
				dirs[i*n+j] = l
			}
		}
	}
	// Waits others caused, bad and stale links.
	for b := 0; b < n; b++ {
		var caused time.Duration
		into, bad := 0, 0
		for a := 0; a < n; a++ {
			l := dirs[a*n+b]
			if l == nil {
				continue
			}
			caused += l.Caused
			into++
			if l.Bad() {
				bad++
			}
		}
		dg.caused[b] = caused
		pd := &in.Players[b]
		pd.CausedWait = caused
		// Every link into it has gone bad (T11): its connection, not one path.
		pd.Bad = into > 0 && bad == into
		for c := 0; c < n; c++ {
			if l := dirs[b*n+c]; l != nil && staleLink(&l.Link) {
				pd.Stale = true
			}
		}
	}
	// The waits rule's window: the last two evaluation intervals (S9). It
	// counts each wait as whose delay it was, as the incidents judged each
	// second's waits when they came, over the whole window whether or not
	// an incident was open (incident.Detector.PassedOn): the waits the
	// machines recorded for a player, less those that were another's
	// delay passed on (a knock-on), plus those recorded for the players
	// that passed its own delay on.
	from := p.startAt
	var old map[string]time.Duration
	if dg.nmarks == 2 {
		from, old = dg.marks[0].at, dg.marks[0].caused
	}
	in.Window = max(now-from, 0)
	dg.owned = growDur(dg.owned, n)
	for i := range in.Players {
		name := in.Players[i].Name
		dg.owned[i] = max(dg.caused[i]+p.inc.d.PassedOn(name), 0)
		in.Players[i].RecentWait = max(dg.owned[i]-old[name], 0)
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if pr, ok := pairOf(a, b, dirs[a*n+b], dirs[b*n+a]); ok {
				in.Pairs = append(in.Pairs, pr)
			}
		}
	}
	in.Loads = p.load.loadsOf(in.Loads[:0], m)
	p.ownTraces(m)
	in.Traces = p.sharedTraces(now, m, in.Traces)
	slices.SortFunc(in.Traces, func(a, b diagnosis.Trace) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
}

// ownTraces adds to the diagnosis input the hop traces this machine runs
// on its own links: where each one's delay starts and its hops' addresses
// (docs/diagnosis.md, "Where it starts").
func (p *Peer) ownTraces(m *feed.MatrixView) {
	in := &p.dg.in
	in.Traces = in.Traces[:0]
	self := m.Index(p.self.Name)
	if self < 0 {
		return
	}
	for _, pl := range p.players {
		if pl == p.self || pl.removed || pl.Observer {
			continue
		}
		to := m.Index(pl.Name)
		delay, hops, complete, ok := traceOf(p.ep, pl.ID)
		if to < 0 || !ok {
			continue
		}
		in.Traces = append(in.Traces, diagnosis.Trace{From: self, To: to, Delay: delay, Hops: hops, Complete: complete})
	}
}

// markWaits keeps the waits caused as of this evaluation (the input just
// built); the oldest of the two marks held is dropped.
func (p *Peer) markWaits(now time.Duration) {
	dg := &p.dg
	caused := dg.marks[0].caused // reuse the dropped one's map
	if dg.nmarks < 2 {
		caused = nil
	}
	if caused == nil {
		caused = map[string]time.Duration{}
	}
	clear(caused)
	for i, pl := range dg.in.Players {
		caused[pl.Name] = dg.owned[i]
	}
	if dg.nmarks == 2 {
		dg.marks[0] = dg.marks[1]
	} else {
		dg.nmarks++
	}
	dg.marks[dg.nmarks-1] = waitMark{at: now, caused: caused}
}

// pairOf is what is known of the pair a<b: the round trip is the mean of
// the two ends' SRTT (or the one end that knows it), a→b's observed loss
// what b counted inbound from a (L2) or, failing that, what b reported to a
// (L4); the same the other way.
func pairOf(a, b int, ab, ba *feed.MatrixLink) (diagnosis.Pair, bool) {
	pr := diagnosis.Pair{A: a, B: b}
	var rtt, rvar time.Duration
	known := 0
	for _, l := range []*feed.MatrixLink{ab, ba} {
		if l != nil && l.RTTKnown {
			rtt += l.SRTT
			rvar += l.RTTVAR
			known++
		}
	}
	if known > 0 {
		pr.RTT, pr.RTTVar = rtt/time.Duration(known), rvar/time.Duration(known)
	}
	switch {
	case ba != nil && ba.LossKnown:
		pr.ExpectedAB, pr.MissingAB = ba.Expected, ba.Missing
	case ab != nil && ab.PeerKnown:
		pr.ExpectedAB, pr.MissingAB = ab.PeerExpected, ab.PeerMissing
	}
	switch {
	case ab != nil && ab.LossKnown:
		pr.ExpectedBA, pr.MissingBA = ab.Expected, ab.Missing
	case ba != nil && ba.PeerKnown:
		pr.ExpectedBA, pr.MissingBA = ba.PeerExpected, ba.PeerMissing
	}
	return pr, known > 0 || pr.ExpectedAB > 0 || pr.ExpectedBA > 0
}

// staleMin is how many datagrams a link must have sent and expected before
// its resend share is read as stale (L8): early on, one resend is a large
// share.
const staleMin = 100

func staleLink(l *feed.Link) bool {
	if !l.LossKnown || l.Sent < staleMin || l.Expected < staleMin {
		return false
	}
	return diagnosis.IsStale(float64(l.Retransmitted)/float64(l.Sent), float64(l.Missing)/float64(l.Expected))
}

func (p *Peer) playerNamed(name string) *player {
	for _, pl := range p.players {
		if pl.Name == name {
			return pl
		}
	}
	return nil
}

// waitsFor is what this machine waited for pl at now — a wait going on
// for pl's commands included — and how long pl's acknowledgements take
// now, whatever SRTT says: the faster of pl's latest two acks (from first
// send, resends included; one lost datagram resent does not raise it), or
// the age of the oldest packet to pl still in flight when that is longer;
// with no recent ack, that age once it passes SRTT; else zero (unknown).
// SRTT learns from clean samples alone (T2), and few come while a delay
// rises past the retry timeout or falls back after it.
func (p *Peer) waitsFor(now time.Duration, pl *player, st netcore.LinkStats) snapshot.Waits {
	w := snapshot.Waits{Caused: pl.caused, Frames: pl.framesWaited}
	if p.stalled && p.lastCause == pl && now-p.stallFrom >= max(p.stallFloor(), 1) {
		w.Caused += now - p.stallFrom
	}
	age := time.Duration(0)
	if st.InFlight > 0 && now > st.OldestSent {
		age = now - st.OldestSent
	}
	if f, ok := p.ep.AckFloor(pl.ID, now-ackSpan); ok {
		w.Unacked = max(f, age)
	} else if age > st.SRTT {
		w.Unacked = age
	}
	return w
}

// ackSpan is how far back the ack floor reads: acks older than two
// seconds say nothing of the link now.
const ackSpan = 2 * time.Second

// OwnRow is this machine's own row of the matrix at now, as View.Matrix
// holds it: the simulator, which holds every machine, fills the other
// rows of each machine's matrix with their own (Config.FillMatrix).
func (p *Peer) OwnRow(now time.Duration) feed.MatrixPlayer {
	row := feed.MatrixPlayer{Name: p.self.Name, Self: true, Known: true, Frame: p.frame, Waited: p.waitTotal}
	if w, pr, ok := p.ownWaits(); ok {
		row.Wait, row.Process = &w, &pr
	}
	for _, o := range p.players {
		if o == p.self || o.removed {
			continue
		}
		if st, ok := p.ep.Stats(o.ID); ok {
			w := p.waitsFor(now, o, st)
			row.Links = append(row.Links, feed.MatrixLink{Link: LinkOf(p.self.Name, o.Name, st), Observer: o.Observer,
				Caused: w.Caused, Frames: w.Frames, Unacked: w.Unacked})
		}
	}
	return row
}

func growDur(s []time.Duration, n int) []time.Duration {
	if cap(s) < n {
		return make([]time.Duration, n)
	}
	return s[:n]
}
