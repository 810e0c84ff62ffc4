package probe

// Spectators (late watchers): an observer that attaches to a game
// that has already started cannot run the lockstep — it lacks the game's
// state — so it follows it instead. The host hands it a WatchState (the
// frame, the timing, the master, the report record) and then the network
// events its own peer executes, each with the frame it executed on; the
// spectator shows them and publishes the same events on the same frames.
// Its own links are measured by its keep-alives (observers'
// netcore.Config.KeepAliveSamples) and every other link comes from the
// players' telemetry, which reaches it like any other machine.

import (
	"errors"
	"math"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// WatchState is a running game as the host's peer holds it at one frame:
// what a spectator shows between the events it is handed.
type WatchState struct {
	Frame int // the next frame the host executes
	// Game is the session time at Frame (gameclock.go); GameKnown is false
	// for a state from a host that sent none, whose times are then
	// estimated from frames.
	Game      time.Duration
	GameKnown bool
	Speed     int // game speed (S17)
	FPS       int // frame rate in force (S15)
	InForce   rungs.Timing
	Target    rungs.Timing // differs from InForce while a decrease is staged (S12)
	Master    netcore.PeerID
	// Players is the peer's roster in house order, removed players
	// included, so that house indices (the report record's) agree.
	Players []WatchPlayer
	// Reports is the report record (S7): one entry per player it holds.
	Reports []WatchReport
}

// WatchPlayer is one machine of the peer's roster.
type WatchPlayer struct {
	ID       netcore.PeerID
	Name     string
	Observer bool
	Removed  bool
}

// WatchReport is one player's place in the report record; Reported says
// whether Report holds its latest executed report.
type WatchReport struct {
	Player   netcore.PeerID
	Reported bool
	Report   rungs.Report // Player (a house index) is not sent: ID says who
}

// WatchEventKind is what a WatchEvent carries.
type WatchEventKind uint8

// The network events a spectator is handed (S19: numbers stable on the wire).
const (
	WatchTiming  WatchEventKind = iota + 1 // a timing event executed: Decided, Timing (target), FPS, Reason
	WatchActive                            // the timing in force changed: Timing, FPS
	WatchMaster                            // the master: Player
	WatchRemoved                           // a removal executed: Player
	WatchReportK                           // a report executed: Player, Report
	WatchMessage                           // a line for every machine's message list: Text
)

// WatchEvent is one network event as the host's peer published it.
type WatchEvent struct {
	Kind    WatchEventKind
	Frame   int
	Player  netcore.PeerID
	Timing  rungs.Timing
	FPS     int
	Decided int
	Reason  rungs.Reason
	Report  rungs.Report // WatchReportK; Report.Player unused
	Text    string
	// Game is the session time of Frame, as the host's clock gives it;
	// GameKnown as in WatchState.
	Game      time.Duration
	GameKnown bool
}

// WatchState is this peer's picture of its game for a spectator; ok is
// false before the start.
func (p *Peer) WatchState() (WatchState, bool) {
	if !p.started || p.sched == nil {
		return WatchState{}, false
	}
	st := WatchState{Frame: p.frame, Speed: p.speed, FPS: p.sched.FPS(), InForce: p.sched.InForce(), Target: p.sched.Target()}
	st.Game, st.GameKnown = p.GameAt(p.frame)
	if p.masterP != nil {
		st.Master = p.masterP.ID
	}
	for _, pl := range p.players {
		st.Players = append(st.Players, WatchPlayer{ID: pl.ID, Name: pl.Name, Observer: pl.Observer, Removed: pl.removed})
		if pl.seated && p.record.IsSeated(pl.idx) {
			r := WatchReport{Player: pl.ID}
			r.Report, r.Reported = p.record.Latest(pl.idx)
			st.Reports = append(st.Reports, r)
		}
	}
	return st, true
}

// WatchEventOf turns one of this peer's published events into what a
// spectator is handed; ok is false for an event that is not the whole
// session's (a stall, an alert, a link line) or names an unknown player.
func (p *Peer) WatchEventOf(e feed.Event) (WatchEvent, bool) {
	if !e.Network() {
		return WatchEvent{}, false
	}
	w := WatchEvent{Frame: feed.Head(e).Frame}
	w.Game, w.GameKnown = p.GameAt(w.Frame)
	id := func(name string) bool {
		for _, pl := range p.players {
			if pl.Name == name {
				w.Player = pl.ID
				return true
			}
		}
		return false
	}
	switch e := e.(type) {
	case *feed.TimingEvent:
		w.Kind, w.Decided, w.FPS = WatchTiming, e.Decided, e.FPS
		w.Timing = rungs.Timing{SendPeriod: e.SendPeriod, LookAhead: e.LookAhead}
		for r := rungs.Initial; r <= rungs.Rate; r++ {
			if r.String() == e.Reason {
				w.Reason = r
			}
		}
		return w, w.Reason != 0
	case *feed.TimingActiveEvent:
		w.Kind, w.FPS = WatchActive, e.FPS
		w.Timing = rungs.Timing{SendPeriod: e.SendPeriod, LookAhead: e.LookAhead}
		return w, true
	case *feed.MasterEvent:
		w.Kind = WatchMaster
		return w, id(e.Player)
	case *feed.RemovedEvent:
		w.Kind = WatchRemoved
		return w, id(e.Player)
	case *feed.ReportEvent:
		w.Kind = WatchReportK
		w.Report = rungs.Report{Frame: e.Frame, Wait: e.Wait, Process: e.Process, RTT: e.RTT, HasRTT: e.HasRTT}
		return w, id(e.Player)
	case *feed.MessageEvent:
		w.Kind, w.Text = WatchMessage, e.Text
		return w, true
	}
	return WatchEvent{}, false
}

// spectator is a spectating peer's state: what it was last handed.
type spectator struct {
	lastDiag int               // the last evaluation frame it diagnosed on
	attached feed.WatchSummary // what the snapshot said; the counts at the end
	complete bool              // the Matrix has held every pair
}

// never is a due time no frame reaches: a spectator executes none.
const never = time.Duration(math.MaxInt64)

// NewSpectatorOn builds a spectating peer on the caller's endpoint (a
// session's, as NewPeerOn) from the host's WatchState: it never executes a
// frame, sends nothing of the game, and shows what Follow hands it. The
// roster is st.Players; cfg.Roster supplies the addresses of the machines
// this one links to (the players), and must hold cfg.Self.
func NewSpectatorOn(now time.Duration, cfg Config, ep *netcore.Endpoint, st WatchState) (*Peer, error) {
	addrs := map[netcore.PeerID]Member{}
	for _, m := range cfg.Roster {
		addrs[m.ID] = m
	}
	if _, ok := addrs[cfg.Self]; !ok {
		return nil, errors.New("probe: self is not in the roster")
	}
	var list []Member
	self := false
	for _, w := range st.Players {
		m := Member{ID: w.ID, Name: w.Name, Observer: w.Observer}
		if a, ok := addrs[w.ID]; ok {
			m.Addr = a.Addr
		}
		self = self || w.ID == cfg.Self
		list = append(list, m)
	}
	if !self {
		return nil, errors.New("probe: the host's state does not name this machine")
	}
	cfg.Roster = list
	cfg.CommandsPerMinute = 0
	cfg.Telemetry = false
	p, err := NewPeerOn(cfg, ep)
	if err != nil {
		return nil, err
	}
	p.self.Observer, p.self.seated = true, false
	p.spec = &spectator{lastDiag: -1}
	p.started, p.startAt = true, now
	p.nextDue, p.lastStatus = never, now
	for _, pl := range p.players {
		pl.lastHeard = now
	}
	p.follow(now, st)
	p.spec.attached = feed.WatchSummary{Frame: st.Frame, SendPeriod: st.InForce.SendPeriod, LookAhead: st.InForce.LookAhead, FPS: st.FPS}
	if p.masterP != nil {
		p.spec.attached.Master = p.masterP.Name
	}
	p.flushEvents()
	return p, nil
}

// watchMatrix notes the telemetry count at which the Matrix first holds
// every pair of seated players (WatchSummary). It runs on every message a
// spectator takes in until then, so the count is exact; after, it costs a
// test of a flag.
func (p *Peer) watchMatrix(now time.Duration) {
	if p.spec == nil || p.spec.complete {
		return
	}
	m := p.tm.matrix(now, p)
	if len(m.Players) == 0 {
		return
	}
	for _, row := range m.Players {
		if !row.Known {
			return
		}
		n := 0
		for _, l := range row.Links {
			if !l.Observer {
				n++
			}
		}
		if n < len(m.Players)-1 {
			return
		}
	}
	p.spec.complete = true
	n := p.tm.fresh
	p.spec.attached.MatrixCompleteAfter = &n
}

// WatchSummary is a late watcher's attach and how soon its Matrix was
// complete; nil for any other machine.
func (p *Peer) WatchSummary() *feed.WatchSummary {
	if p.spec == nil {
		return nil
	}
	w := p.spec.attached
	w.TelemetryUpdates = p.tm.fresh
	return &w
}

// Spectator reports whether this peer follows a game it did not start
// with (NewSpectatorOn).
func (p *Peer) Spectator() bool { return p.spec != nil }

// Follow hands a spectating peer the events the host executed since the
// last call, in order, then the host's state after them. The events are
// published with the frames they executed on.
func (p *Peer) Follow(now time.Duration, evs []WatchEvent, st WatchState) {
	if p.spec == nil || p.done {
		return
	}
	for i := range evs {
		p.followEvent(evs[i])
	}
	p.follow(now, st)
	p.flushEvents()
}

func (p *Peer) followEvent(w WatchEvent) {
	p.followGame(w)
	name := ""
	if pl := p.byID[w.Player]; pl != nil {
		name = pl.Name
	}
	// The host's session time of the event, as the host's own line has
	// it; none for a line from before the game started.
	h := feed.Header{Frame: w.Frame, Pregame: !w.GameKnown && w.Frame == 0}
	if w.GameKnown {
		ms := units.Millis(w.Game.Round(time.Microsecond))
		h.GameMs = &ms
	}
	switch w.Kind {
	case WatchTiming:
		h.Type = vocab.EventTiming
		p.emit(&feed.TimingEvent{Header: h, Decided: w.Decided, SendPeriod: w.Timing.SendPeriod, LookAhead: w.Timing.LookAhead,
			Rung: w.Timing.Rung(), Tier: w.Timing.Tier().String(), FPS: w.FPS, Reason: w.Reason.String()})
	case WatchActive:
		h.Type = vocab.EventTimingActive
		p.emit(&feed.TimingActiveEvent{Header: h, SendPeriod: w.Timing.SendPeriod, LookAhead: w.Timing.LookAhead,
			Rung: w.Timing.Rung(), Tier: w.Timing.Tier().String(), FPS: w.FPS})
	case WatchMaster:
		if name != "" {
			h.Type = vocab.EventMaster
			p.emit(&feed.MasterEvent{Header: h, Player: name})
		}
	case WatchRemoved:
		if pl := p.byID[w.Player]; pl != nil && pl != p.self && !pl.removed {
			pl.removed = true
			p.retire(pl)
			h.Type = vocab.EventRemoved
			p.emit(&feed.RemovedEvent{Header: h, Player: name})
		}
	case WatchReportK:
		if name != "" {
			p.emit(feed.NewReportEvent(h, name, w.Report.RTT, w.Report.HasRTT, w.Report.Wait, w.Report.Process))
		}
	case WatchMessage:
		h.Type = vocab.EventMessage
		p.emit(&feed.MessageEvent{Header: h, Text: w.Text})
	}
}

// follow takes the host's state: it replaces what this peer shows.
func (p *Peer) follow(now time.Duration, st WatchState) {
	for _, w := range st.Players {
		pl := p.byID[w.ID]
		if pl == nil {
			// A machine that joined after us (another late watcher):
			// known by name, so telemetry rows naming it are drawn.
			p.AddObserver(now, Member{ID: w.ID, Name: w.Name, Observer: true})
			pl = p.byID[w.ID]
		}
		if w.Removed && !pl.removed && pl != p.self {
			pl.removed = true
			p.retire(pl)
		}
	}
	p.frame = max(st.Frame, 0)
	p.lastExec = p.frame - 1
	p.speed = max(st.Speed, 1)
	fps := max(st.FPS, 1)
	game := st.Game
	if !st.GameKnown {
		game = p.estimateGame(p.frame, fps)
	}
	p.game.mark(p.frame, game, fps)
	// A fresh schedule with the timing in force and, when the target
	// differs, a change to it: Staged and Target then read as the host's.
	p.sched = rungs.NewSchedule(st.InForce, fps)
	if st.Target != st.InForce {
		p.sched.Change(p.frame, st.Target, fps)
	}
	var seated []int
	for _, r := range st.Reports {
		if pl := p.byID[r.Player]; pl != nil && pl.seated {
			seated = append(seated, pl.idx)
		}
	}
	p.record = rungs.NewRecord(0, seated)
	for _, r := range st.Reports {
		if pl := p.byID[r.Player]; pl != nil && pl.seated && r.Reported {
			rep := r.Report
			rep.Player = pl.idx
			p.record.Add(rep)
		}
	}
	// A spectator's shadow starts from the host's target: the count toward
	// a descent (S11c) it joined in is not in the state, so its first
	// outlook may start that count late.
	p.shadow = *rungs.NewMaster(0, st.Target, fps)
	p.shadow.Observe(rungs.Decision{Frame: p.frame, Target: st.Target, FPS: fps})
	p.masterP = nil
	if m := p.byID[st.Master]; m != nil && m.seated && !m.removed {
		p.masterP = m
	}
	// The diagnosis runs on evaluation frames on every machine (S9); a
	// spectator runs it on the newest one its state has passed.
	for f := p.frame - 1; f > p.spec.lastDiag && f >= p.frame-1024; f-- {
		if rungs.IsEvaluationFrame(f) {
			p.spec.lastDiag = f
			p.evaluateDiagnosis(now, f)
			break
		}
	}
}

// AddObserver takes an observer into a running game (a late
// watcher): it never holds a seat, so no frame waits for it, and it gets
// this machine's frame packets and telemetry like any machine. Every array
// sized by the roster grows by one. The link is the caller's to open (a
// session's, as for NewPeerOn), before or after.
func (p *Peer) AddObserver(now time.Duration, m Member) error {
	if _, dup := p.byID[m.ID]; dup {
		return errors.New("probe: that machine is in the roster already")
	}
	m.Observer = true
	pl := &player{Member: m, idx: len(p.players), lastHeard: now, through: p.cfg.Timing.LookAhead - 1}
	p.players = append(p.players, pl)
	p.byID[m.ID] = pl
	for _, o := range p.players {
		for len(o.holds) < len(p.players) {
			o.holds = append(o.holds, p.cfg.Timing.LookAhead-1)
		}
	}
	if p.alerts.ready {
		for len(p.alerts.links) < len(p.players) {
			p.alerts.links = append(p.alerts.links, linkAlerts{})
		}
	}
	return nil
}

// TelemetryUpdates is how many telemetry updates from the players moved
// this machine's picture on: what a test counts to say how soon a late
// watcher's Matrix was complete, in updates rather than wall time.
func (p *Peer) TelemetryUpdates() uint64 { return p.tm.fresh }

// followGame takes the session time of a handed event into the spectator's
// clock: the frame it executed on is at the host's time for it, and a
// change of the timing in force brings the frame rate from then on.
func (p *Peer) followGame(w WatchEvent) {
	if !w.GameKnown && w.Frame == 0 {
		return // from the lobby: no session time
	}
	fps := 0
	if i := p.game.last(w.Frame); i >= 0 {
		fps = p.game.anchors[i].fps
	} else if p.sched != nil {
		fps = p.sched.FPS()
	}
	if w.Kind == WatchActive {
		fps = w.FPS
	}
	at := w.Game
	if !w.GameKnown {
		at = p.estimateGame(w.Frame, fps)
	}
	p.game.mark(w.Frame, at, fps)
}

// estimateGame is the session time of frame f where the host sent none:
// from the clock so far, or frames at fps from the start.
func (p *Peer) estimateGame(f, fps int) time.Duration {
	if at, ok := p.game.at(f); ok {
		return at
	}
	return time.Duration(f) * time.Second / time.Duration(max(fps, 1))
}
