package probe

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/rungs"
)

// Member is one machine of a session, in house order.
type Member struct {
	ID       netcore.PeerID
	Name     string
	Addr     netip.AddrPort
	Observer bool // never seated, never waited for, never in a report
}

// Config sets up a Peer. Zero values take the defaults noted.
type Config struct {
	Self   netcore.PeerID
	Roster []Member // house order; the first seated player is the master at start

	Speed       int           // game speed: the frame-rate cap (S15, S17); default 30
	Timing      rungs.Timing  // timing at start; default 2/6 (S1)
	DropTimeout time.Duration // a seated player silent this long is removed; default 60 s

	// ProcessTime is this machine's processing time per frame (S5). The
	// simulator charges it in virtual time; a live peer reports what it
	// measures.
	ProcessTime       time.Duration
	CommandsPerMinute float64 // synthetic game commands; 0 = none
	Seed              uint64

	LinkEvery int // publish a link line per link every this many frames; 0 = never

	// Telemetry makes a seated player stream its own links and waits to
	// every other machine (issue 7, telemetry.go). Live sessions turn it
	// on; the simulator leaves it off, so its output stays what it was.
	// Every peer takes in the telemetry that reaches it either way.
	Telemetry bool
	// TelemetryTo, when set, names the machines this one streams its
	// telemetry to (the demo, whose machines share one process and only
	// yours draws the matrix); nil streams to every machine.
	TelemetryTo func(m Member) bool

	// OnFrame, when set, is called after each frame executes with the
	// running checksum of every command executed so far (tests, recorder).
	OnFrame func(frame int, checksum uint32)
	// OnCommand, when set, is called for every command this machine
	// executes, in execution order, before it takes effect: player issued
	// it, it runs on sendFrame with that send frame's other commands, and
	// c.Tag is still the frame it was scheduled for (S13; a recorder
	// stores both). c.Payload belongs to the peer: copy it to keep it.
	OnCommand func(now time.Duration, player string, sendFrame int, c Command)

	Net    netcore.Config // Self is filled in from Self
	Sink   Sink
	Logger *slog.Logger
}

// statusEvery is how often a stalled machine repeats its frame state, so that
// a lost unacked frame packet cannot leave two waiting machines waiting on
// each other for ever: at most one frame time, but no more often than
// minStatusGap, so a long stall does not flood the links.
const minStatusGap = 50 * time.Millisecond

// ckHistory is how many frames of our own checksums we keep to compare with
// what peers report (a peer can only be this far behind before a desync goes
// unnoticed for that frame; later frames still catch it).
const ckHistory = 1024

type pendingThrough struct {
	rel     uint32
	through int
}

// player is the state a peer keeps about one machine of the roster,
// itself included.
type player struct {
	Member
	idx     int
	seated  bool
	removed bool // its removal has executed

	// Completeness: every command of this player tagged ≤ through is held.
	through      int
	relDelivered uint32
	pending      []pendingThrough
	queue        []Command // held, not yet executed, in tag order

	lastHeard time.Duration
	holds     []int // from its status packets: its completeness of each house index
	removal   *removePayload
	removing  bool // a removal of it is issued or held
	desynced  bool
	bad       bool // the link to it has gone bad (T11)

	// waits this machine spent on this player's commands
	caused time.Duration
}

// Peer is one machine of a lockstep session (DESIGN "The lockstep"). It is a
// sans-I/O state machine: every method takes the current time, and one
// goroutine calls them all.
type Peer struct {
	cfg     Config
	ep      *netcore.Endpoint
	log     *slog.Logger
	self    *player
	players []*player // house order
	byID    map[netcore.PeerID]*player
	rng     *rand.Rand

	started    bool
	done       bool
	quitting   bool
	startAt    time.Duration
	frame      int // next frame to execute
	nextDue    time.Duration
	stallFrom  time.Duration
	stalled    bool
	lastCause  *player // the player this machine waited for last
	lastStatus time.Duration

	sched   *rungs.Schedule
	record  *rungs.Record
	master  *rungs.Master
	masterP *player
	speed   int

	seq         uint32
	outbox      []Command // issued, not yet sent
	lastThrough int
	relSent     uint32
	ackedFirst  bool
	lastAckReq  int

	ck       uint32
	lastExec int // the last frame executed; -1 before the first
	ckHist   [ckHistory]struct {
		frame int
		ck    uint32
	}

	// waits: the longest wait in the current and the previous report interval
	waitCur, waitPrev time.Duration
	waitTotal         time.Duration
	waitMax           time.Duration
	frames            int

	buf    []byte
	exec   []execCmd
	events []Event

	nextWatch  time.Duration
	watched    bool
	badPackets uint64     // frame packets that did not decode
	retired    []LinkStat // ended links, as they stood when they ended

	tm *telemetry // the snapshot streams of every player's links (issue 7)
}

type execCmd struct {
	p   *player
	cmd Command
}

// NewPeer builds the peer and its endpoint on the given transport. The
// endpoint delivers straight to the peer.
func NewPeer(cfg Config, tr netcore.Transport) (*Peer, error) {
	p, err := newPeer(cfg)
	if err != nil {
		return nil, err
	}
	nc := p.cfg.Net
	nc.Self = p.cfg.Self
	if nc.Logger == nil {
		nc.Logger = p.cfg.Logger
	}
	ep, err := netcore.NewEndpoint(nc, tr, p.deliver)
	if err != nil {
		return nil, err
	}
	p.ep = ep
	return p, nil
}

// NewPeerOn builds a peer on an endpoint the caller already runs: a live
// session forms its links and exchanges lobby messages on the endpoint
// before the game starts, and keeps routing the endpoint's messages
// afterwards. The endpoint's DeliverFunc belongs to the caller, which hands
// the peer its frame packets through Deliver. cfg.Net is not used; the
// endpoint's own identity must be cfg.Self.
func NewPeerOn(cfg Config, ep *netcore.Endpoint) (*Peer, error) {
	if ep == nil {
		return nil, errors.New("probe: no endpoint")
	}
	if ep.Self() != cfg.Self {
		return nil, fmt.Errorf("probe: endpoint is peer %d, config says %d", ep.Self(), cfg.Self)
	}
	p, err := newPeer(cfg)
	if err != nil {
		return nil, err
	}
	p.ep = ep
	return p, nil
}

func newPeer(cfg Config) (*Peer, error) {
	if cfg.Speed == 0 {
		cfg.Speed = 30
	}
	if cfg.Timing == (rungs.Timing{}) {
		cfg.Timing = rungs.Timing{SendPeriod: 2, LookAhead: 6}
	}
	if cfg.DropTimeout == 0 {
		cfg.DropTimeout = 60 * time.Second
	}
	if cfg.Sink == nil {
		cfg.Sink = SinkFunc(func(string, Event) {})
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Peer{cfg: cfg, log: cfg.Logger, byID: map[netcore.PeerID]*player{}, speed: cfg.Speed, lastExec: -1, tm: newTelemetry(cfg.Telemetry)}
	for i, m := range cfg.Roster {
		if _, dup := p.byID[m.ID]; dup {
			return nil, fmt.Errorf("probe: peer id %d twice in the roster", m.ID)
		}
		pl := &player{Member: m, idx: i, seated: !m.Observer, through: cfg.Timing.LookAhead - 1}
		p.players = append(p.players, pl)
		p.byID[m.ID] = pl
		if m.ID == cfg.Self {
			p.self = pl
		}
	}
	if p.self == nil {
		return nil, errors.New("probe: self is not in the roster")
	}
	for _, pl := range p.players {
		pl.holds = make([]int, len(p.players))
		for i := range pl.holds {
			pl.holds[i] = cfg.Timing.LookAhead - 1
		}
	}
	p.rng = rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Self)+0x9e3779b97f4a7c15))
	return p, nil
}

// Endpoint gives read access to the transport state (link stats, totals).
func (p *Peer) Endpoint() *netcore.Endpoint { return p.ep }

// Name is this machine's player name.
func (p *Peer) Name() string { return p.self.Name }

// Frame is the next frame this machine will execute.
func (p *Peer) Frame() int { return p.frame }

// Done reports whether this machine has left the session.
func (p *Peer) Done() bool { return p.done }

// Observer reports whether this machine watches without a seat.
func (p *Peer) Observer() bool { return p.self.Observer }

// Started reports whether the game has started here.
func (p *Peer) Started() bool { return p.started }

// FPS is the frame rate in force (S15); before the start, the game speed.
func (p *Peer) FPS() int {
	if p.started {
		return p.sched.FPS()
	}
	return p.cfg.Speed
}

// Deliver hands the peer one message that arrived on its endpoint. Only a
// peer built with NewPeerOn needs it: the caller's DeliverFunc passes on
// the frame packets (and nothing else) here. Like any delivery it may be
// called before Start; frames run on the next Receive or Tick.
func (p *Peer) Deliver(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
	if p.done {
		return
	}
	p.deliver(now, from, ch, msg)
}

// WaitingFor is the player this machine is stalled on right now, and since
// when (the frame's due time), if it is stalled.
func (p *Peer) WaitingFor() (netcore.PeerID, time.Duration, bool) {
	if !p.stalled || p.lastCause == nil {
		return 0, 0, false
	}
	return p.lastCause.ID, p.stallFrom, true
}

// BadPackets counts messages from linked machines that did not decode as
// frame packets (dropped, never acted on).
func (p *Peer) BadPackets() uint64 { return p.badPackets }

// ForgetObserver ends this machine's link to an observer that has left or
// fallen silent. An observer has no seat, so nothing waits for it and no
// removal event is needed: every machine forgets it on its own. It
// reports whether id was an observer still linked.
func (p *Peer) ForgetObserver(id netcore.PeerID) bool {
	pl := p.byID[id]
	if pl == nil || pl == p.self || !pl.Observer || pl.removed {
		return false
	}
	pl.removed = true
	p.retire(pl)
	return true
}

// retire ends the link to pl, keeping its last statistics for the summary.
func (p *Peer) retire(pl *player) {
	if ls, ok := p.LinkStat(pl.ID); ok {
		p.retired = append(p.retired, ls)
	}
	p.ep.RemoveLink(pl.ID)
	p.tm.forget(pl.ID)
}

// RetiredLinks are the links this machine has ended (a removed player, a
// forgotten observer), as they stood when they ended.
func (p *Peer) RetiredLinks() []LinkStat { return slices.Clone(p.retired) }

// Connect opens the private link to every other machine of the roster (T1).
// Call it before Start, while the lobby forms.
func (p *Peer) Connect(now time.Duration) {
	for _, pl := range p.players {
		if pl != p.self {
			if err := p.ep.AddLink(now, pl.ID, pl.Addr); err != nil {
				p.log.Warn("cannot open link", "peer", pl.Name, "err", err)
			}
		}
	}
}

// Start begins the game at frame 0: every player is ready, so measurement
// starts over (T5) and the report record starts from the seated players (S7).
func (p *Peer) Start(now time.Duration) {
	if p.started {
		return
	}
	p.started = true
	p.startAt = now
	p.nextDue = now
	p.lastStatus = now
	p.ep.ResetMeasurement()
	var seated []int
	for _, pl := range p.players {
		pl.lastHeard = now
		if pl.seated {
			seated = append(seated, pl.idx)
		}
	}
	p.record = rungs.NewRecord(0, seated)
	p.sched = rungs.NewSchedule(p.cfg.Timing, p.cfg.Speed)
	p.master = rungs.NewMaster(0, p.cfg.Timing, p.cfg.Speed)
	p.masterP = p.firstSeated(nil)
	if p.masterP != nil {
		p.emitNet(&MasterEvent{Header: Header{Type: "master"}, Player: p.masterP.Name})
	}
	p.emitNet(p.activeEvent())
	p.flushEvents()
	p.run(now)
}

func (p *Peer) firstSeated(skip *player) *player {
	for _, pl := range p.players {
		if pl.seated && !pl.removed && pl != skip {
			return pl
		}
	}
	return nil
}

// Quit leaves the session cleanly: the player issues its own removal, keeps
// its links until the removal has executed here, then is done.
func (p *Peer) Quit(now time.Duration) {
	if p.done || p.quitting {
		return
	}
	p.quitting = true
	if !p.started || p.self.Observer {
		p.done = true
		return
	}
	p.issueRemoval(now, p.self, 0)
}

// Receive hands the peer one datagram from the network.
func (p *Peer) Receive(now time.Duration, from netip.AddrPort, datagram []byte) {
	if p.done {
		return
	}
	p.ep.Receive(now, from, datagram)
	p.run(now)
}

// Tick runs whatever is due at now: frames, retries, link reports.
func (p *Peer) Tick(now time.Duration) {
	if p.done {
		return
	}
	p.ep.Tick(now)
	p.watchLinks(now)
	p.run(now)
}

// watchEvery is how often a peer looks at its links for the bad-connection
// messages: a tenth of a second is immediate for a reader, and a machine
// with dozens of links and many wake-ups a second does not read every
// link's statistics on each.
const watchEvery = 100 * time.Millisecond

// watchLinks adds a message when a link goes bad (a packet outlived the
// connection timeout, T11) and when it recovers.
func (p *Peer) watchLinks(now time.Duration) {
	if p.watched && now < p.nextWatch {
		return
	}
	p.watched, p.nextWatch = true, now+watchEvery
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok || st.Bad == pl.bad {
			continue
		}
		pl.bad = st.Bad
		text := "Connection to " + pl.Name + " recovered"
		if st.Bad {
			text = "Connection to " + pl.Name + " has gone bad"
		}
		p.emit(&MessageEvent{Header: Header{Type: "message", Frame: p.frame}, Text: text, Player: p.self.Name})
	}
	p.flushEvents()
}

// NextDeadline is when the peer next needs a Tick, if ever.
func (p *Peer) NextDeadline() (time.Duration, bool) {
	if p.done {
		return 0, false
	}
	d, ok := p.ep.NextDeadline()
	if p.started {
		next := p.nextDue
		if p.stalled {
			next = p.lastStatus + p.statusGap()
		}
		if !ok || next < d {
			d, ok = next, true
		}
	}
	return d, ok
}

func (p *Peer) statusGap() time.Duration { return max(p.framePeriod(), minStatusGap) }

func (p *Peer) framePeriod() time.Duration {
	return time.Second / time.Duration(p.sched.FPS())
}

// run executes every frame that is due and whose commands are all held.
func (p *Peer) run(now time.Duration) {
	if !p.started || p.done {
		return
	}
	for !p.done && now >= p.nextDue {
		if waitFor := p.missing(p.frame); waitFor != nil {
			if !p.stalled {
				p.stalled = true
				p.stallFrom = p.nextDue
			}
			p.lastCause = waitFor
			p.whileStalled(now, waitFor)
			return
		}
		var wait time.Duration
		if p.stalled {
			wait = now - p.stallFrom
			p.stalled = false
			p.noteWait(wait)
		}
		p.executeFrame(now, wait)
	}
}

// missing returns a seated player whose commands for frame f are not all
// held yet, or nil when frame f can execute.
func (p *Peer) missing(f int) *player {
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed {
			continue
		}
		if pl.through >= f {
			continue
		}
		if pl.removal != nil && int(pl.removal.Last) < f {
			continue // held removal excuses it past its last frame
		}
		return pl
	}
	return nil
}

func (p *Peer) noteWait(w time.Duration) {
	p.waitTotal += w
	p.waitMax = max(p.waitMax, w)
	p.waitCur = max(p.waitCur, w)
}

// whileStalled repeats our frame state and removes players silent past the
// drop timeout.
func (p *Peer) whileStalled(now time.Duration, waitFor *player) {
	if now-p.lastStatus >= p.statusGap() {
		p.lastStatus = now
		if !p.self.Observer {
			p.sendStatus(now)
		}
	}
	p.checkDrops(now)
}

// checkDrops: the master (or, when the master itself is silent, the first
// other seated player in house order) removes a seated player that has been
// silent longer than the drop timeout.
func (p *Peer) checkDrops(now time.Duration) {
	if p.self.Observer || p.quitting {
		return
	}
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed || pl.removing {
			continue
		}
		if now-pl.lastHeard < p.cfg.DropTimeout {
			continue
		}
		remover := p.masterP
		if remover == pl || remover == nil {
			remover = p.firstSeated(pl)
		}
		if remover != p.self {
			continue
		}
		last := pl.through
		for _, o := range p.players {
			if o == p.self || o == pl || !o.seated || o.removed || o.removing {
				continue
			}
			last = min(last, o.holds[pl.idx])
		}
		p.log.Info("removing silent player", "player", pl.Name, "silent", now-pl.lastHeard, "last_frame", last)
		p.issueRemoval(now, pl, last)
	}
}

// issueRemoval issues a removal of pl and sends it at once: a machine that is
// stalled on pl has no send frame coming.
func (p *Peer) issueRemoval(now time.Duration, pl *player, last int) {
	pl.removing = true
	tag := p.nextTag(p.frame)
	if pl == p.self {
		last = tag
	}
	r := removePayload{Player: uint16(pl.ID), Last: int32(last)}
	if pl != p.self {
		// We hold our own removal as soon as we issue it: it excuses pl
		// past its last frame here as on every machine that receives it.
		pl.removal = &r
		pl.discardAfter(last)
	}
	p.issue(CmdRemove, r.bytes())
	p.sendFramePacket(now, p.frame, tag, true, true)
}

// nextTag is the frame a command issued on frame f executes on: f plus the
// look-ahead in force (S1), but never a frame we already promised to hold
// complete.
func (p *Peer) nextTag(f int) int {
	return max(f+p.sched.InForce().LookAhead, p.lastThrough+1)
}

func (p *Peer) issue(typ uint8, payload []byte) {
	p.seq++
	p.outbox = append(p.outbox, Command{Seq: p.seq, Type: typ, Payload: payload})
}

// executeFrame executes frame p.frame at now.
func (p *Peer) executeFrame(now time.Duration, wait time.Duration) {
	f := p.frame
	before, beforeFPS := p.sched.InForce(), p.sched.FPS()
	if wait > 0 {
		cause := ""
		if c := p.lastCause; c != nil {
			cause = c.Name
			c.caused += wait
		}
		p.emit(&StallEvent{Header: Header{Type: "stall", Frame: f}, Player: p.self.Name, WaitMs: ms(wait), Cause: cause})
	}
	if p.sched.IsSendFrame(f) {
		p.executeCommands(now, f)
	}
	// Timing events of this frame are in (Change); now the staged steps
	// (S12) for this frame.
	p.sched.Advance(f)
	if p.sched.InForce() != before || p.sched.FPS() != beforeFPS {
		p.emitNet(p.activeEvent())
	}
	p.recordChecksum(f)
	p.lastExec = f
	if p.cfg.OnFrame != nil {
		p.cfg.OnFrame(f, p.ck)
	}
	since := f
	if !p.self.Observer && !p.quitting && p.self.seated && !p.self.removed {
		if rungs.IsReportFrame(since) {
			p.issueReport()
		}
		if p.masterP == p.self && rungs.IsEvaluationFrame(since) {
			if d, ok := p.master.Evaluate(f, p.record, p.speed); ok {
				p.issue(CmdTiming, timingPayload{
					Decided: int32(d.Frame), SendPeriod: uint16(d.Target.SendPeriod),
					LookAhead: uint16(d.Target.LookAhead), FPS: uint16(d.FPS), Reason: uint8(d.Reason),
				}.bytes())
			}
		}
		p.syntheticCommands()
		if p.sched.IsSendFrame(f) {
			p.sendFramePacket(now, f, p.nextTag(f), true, false)
		} else if next := p.sched.NextSendFrame(f + 1); p.lastThrough < next {
			// A timing change moved the next send frame past what we
			// promised: promise up to it, or every machine would wait at
			// the gap for a packet none can send (liveness).
			p.sendFramePacket(now, f, next, false, false)
		}
	}
	if p.cfg.LinkEvery > 0 && f > 0 && f%p.cfg.LinkEvery == 0 {
		p.emitLinks(f)
	}
	p.frames++
	p.frame++
	step := max(p.framePeriod(), p.cfg.ProcessTime)
	p.nextDue = max(p.nextDue, now) + step
	p.flushEvents()
	if p.self.removed {
		p.done = true
	}
}

// executeCommands runs every held command tagged ≤ f, in (tag, house order,
// sequence) order, identically on every machine (S13: a command whose frame
// is no longer a send frame runs on the next send frame).
func (p *Peer) executeCommands(now time.Duration, f int) {
	p.exec = p.exec[:0]
	for _, pl := range p.players {
		if !pl.seated {
			continue
		}
		n := 0
		for n < len(pl.queue) && int(pl.queue[n].Tag) <= f {
			n++
		}
		for _, c := range pl.queue[:n] {
			p.exec = append(p.exec, execCmd{p: pl, cmd: c})
		}
		pl.queue = pl.queue[n:]
	}
	slices.SortStableFunc(p.exec, func(a, b execCmd) int {
		if a.cmd.Tag != b.cmd.Tag {
			return int(a.cmd.Tag - b.cmd.Tag)
		}
		if a.p.idx != b.p.idx {
			return a.p.idx - b.p.idx
		}
		return int(a.cmd.Seq) - int(b.cmd.Seq)
	})
	for _, e := range p.exec {
		if e.p.removed {
			continue // a removal earlier in this frame discards the rest
		}
		p.checksum(e.p, e.cmd)
		if p.cfg.OnCommand != nil {
			p.cfg.OnCommand(now, e.p.Name, f, e.cmd)
		}
		p.executeCommand(now, f, e.p, e.cmd)
	}
}

func (p *Peer) checksum(pl *player, c Command) {
	h := fnv.New32a()
	var b [13]byte
	b[0] = byte(pl.idx)
	b[1] = byte(pl.idx >> 8)
	b[2] = c.Type
	putU32(b[3:], uint32(c.Tag))
	putU32(b[7:], c.Seq)
	putU32(b[9:], p.ck)
	h.Write(b[:])
	h.Write(c.Payload)
	p.ck = h.Sum32()
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func (p *Peer) recordChecksum(f int) {
	slot := &p.ckHist[f%ckHistory]
	slot.frame, slot.ck = f, p.ck
}

func (p *Peer) executeCommand(now time.Duration, f int, from *player, c Command) {
	switch c.Type {
	case CmdNetworkReport:
		r, err := decodeReport(c.Payload)
		if err != nil {
			return
		}
		rep := rungs.Report{Player: from.idx, Frame: f, HasRTT: r.RTTMicros != noRTT,
			Wait: time.Duration(r.WaitMicros) * time.Microsecond, Process: time.Duration(r.ProcessMicros) * time.Microsecond}
		ev := &ReportEvent{Header: Header{Type: "report"}, Player: from.Name, WaitMs: ms(rep.Wait), ProcessMs: ms(rep.Process)}
		if rep.HasRTT {
			rep.RTT = time.Duration(r.RTTMicros) * time.Microsecond
			v := ms(rep.RTT)
			ev.RTTMs = &v
		}
		p.record.Add(rep)
		p.emitNet(ev)
	case CmdTiming:
		t, err := decodeTiming(c.Payload)
		if err != nil {
			return
		}
		prev := p.sched.Target()
		target := rungs.Timing{SendPeriod: int(t.SendPeriod), LookAhead: int(t.LookAhead)}
		d := rungs.Decision{Frame: int(t.Decided), Target: target, FPS: int(t.FPS), Reason: rungs.Reason(t.Reason)}
		p.master.Observe(d)
		p.sched.Change(f, target, int(t.FPS))
		p.emitNet(&TimingEvent{Header: Header{Type: "timing"}, Decided: int(t.Decided), SendPeriod: target.SendPeriod,
			LookAhead: target.LookAhead, Rung: target.Rung(), Tier: target.Tier().String(), FPS: int(t.FPS), Reason: d.Reason.String()})
		if msg, ok := rungs.TierMessage(prev, target); ok {
			p.emitNet(&MessageEvent{Header: Header{Type: "message"}, Text: msg})
		}
	case CmdRemove:
		r, err := decodeRemove(c.Payload)
		if err != nil {
			return
		}
		pl := p.byID[netcore.PeerID(r.Player)]
		if pl == nil || pl.removed || !pl.seated {
			return
		}
		pl.removed = true
		pl.queue = nil
		p.record.Remove(pl.idx)
		p.emitNet(&RemovedEvent{Header: Header{Type: "removed"}, Player: pl.Name})
		if pl != p.self {
			p.retire(pl)
		}
		if p.masterP == pl {
			p.masterP = p.firstSeated(nil)
			if p.masterP != nil {
				p.master.TakeOver(f)
				p.emitNet(&MasterEvent{Header: Header{Type: "master"}, Player: p.masterP.Name})
			}
		}
	case CmdGameSpeed:
		if v, err := decodeSpeed(c.Payload); err == nil {
			p.speed = v
		}
	case CmdLatencyFudge:
		// S19: reserved; the timing never reads it.
	}
}

// SetSpeed issues a game-speed event (S17): every machine records the new
// cap when it executes; the master's next timing event carries the rate.
func (p *Peer) SetSpeed(fps int) {
	if fps < 1 || fps > 1000 || p.self.Observer || !p.started {
		return
	}
	p.issue(CmdGameSpeed, speedBytes(fps))
}

func (p *Peer) issueReport() {
	var worst time.Duration
	all := true
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed {
			continue
		}
		st, ok := p.ep.Stats(pl.ID)
		if !ok || !measured(st) {
			all = false // S6: leave the round trip out
			continue
		}
		worst = max(worst, st.SRTT)
	}
	r := reportPayload{RTTMicros: noRTT,
		WaitMicros:    micros(max(p.waitCur, p.waitPrev)),
		ProcessMicros: micros(p.cfg.ProcessTime)}
	if all {
		r.RTTMicros = micros(worst)
	}
	p.waitPrev, p.waitCur = p.waitCur, 0
	p.issue(CmdNetworkReport, r.bytes())
}

func micros(d time.Duration) uint32 {
	us := d / time.Microsecond
	if us < 0 {
		return 0
	}
	if us >= time.Duration(noRTT) {
		return noRTT - 1
	}
	return uint32(us)
}

// syntheticCommands issues game commands at the configured rate.
func (p *Peer) syntheticCommands() {
	if p.cfg.CommandsPerMinute <= 0 {
		return
	}
	chance := p.cfg.CommandsPerMinute / 60 / float64(p.sched.FPS())
	if p.rng.Float64() < chance {
		var b [8]byte
		putU32(b[:], p.rng.Uint32())
		putU32(b[4:], uint32(p.frame))
		p.issue(CmdGame, b[:])
	}
}

// sendFramePacket tags the outbox with tag and sends one frame packet to every
// other machine. It asks for an ack (sends reliably) when it carries commands,
// and also for the first frame packet of the game and at least every 32
// frames while any link to a seated player lacks a clean sample (T6).
func (p *Peer) sendFramePacket(now time.Duration, f, tag int, withCommands, force bool) {
	pk := framePacket{Kind: kindFrame, Frame: int32(f), Through: int32(tag), CkFrame: int32(max(p.lastExec, 0)), Ck: p.ck}
	var cmds []Command
	if withCommands {
		cmds = p.outbox
		for i := range cmds {
			cmds[i].Tag = int32(tag)
		}
	}
	pk.Commands = cmds
	reliable := len(cmds) > 0 || force
	if !p.ackedFirst {
		reliable = true
	}
	// T6 counts frames, but a frame packet leaves only on a send frame: ask
	// on the last one before the gap to the next would pass 32 (at send
	// period 10: frames 30, 60, …, not 40, 80, …).
	if !reliable && p.sched.NextSendFrame(f+1)-p.lastAckReq > 32 && p.anyUnmeasured() {
		reliable = true
	}
	if reliable {
		p.ackedFirst = true
		p.lastAckReq = f
		p.relSent++
	}
	pk.RelCount = p.relSent
	// Our own commands are held at once.
	if withCommands {
		p.self.queue = append(p.self.queue, cmds...)
		p.outbox = p.outbox[:0]
	}
	p.self.through = max(p.self.through, tag)
	p.lastThrough = max(p.lastThrough, tag)
	p.buf = pk.appendTo(p.buf[:0])
	ch := netcore.ChannelUnreliable
	if reliable {
		ch = netcore.ChannelReliable
	}
	tel := p.tm.due(now, p)
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		msg := p.buf
		switch {
		case tel && !p.tm.wants(p, pl):
		case tel && ch == netcore.ChannelUnreliable:
			msg = p.tm.wrap(pl, p.buf) // one message: telemetry.go says why
		case tel:
			p.tm.sendTo(now, p, pl)
		}
		if err := p.ep.Send(now, pl.ID, ch, msg); err != nil {
			p.log.Debug("frame packet not sent", "to", pl.Name, "err", err)
		}
	}
	p.lastStatus = now
}

// sendStatus repeats our frame state without commands while we are stalled,
// with our completeness of every player (for removals).
func (p *Peer) sendStatus(now time.Duration) {
	pk := framePacket{Kind: kindStatus, Frame: int32(p.frame), Through: int32(p.lastThrough), RelCount: p.relSent,
		CkFrame: int32(max(p.lastExec, 0)), Ck: p.ck}
	for _, pl := range p.players {
		if pl.seated && !pl.removed && pl != p.self {
			pk.Holds = append(pk.Holds, hold{Player: uint16(pl.ID), Through: int32(pl.through)})
		}
	}
	p.buf = pk.appendTo(p.buf[:0])
	tel := p.tm.due(now, p)
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		msg := p.buf
		if tel && p.tm.wants(p, pl) {
			msg = p.tm.wrap(pl, p.buf)
		}
		_ = p.ep.Send(now, pl.ID, netcore.ChannelUnreliable, msg)
	}
}

func (p *Peer) anyUnmeasured() bool {
	for _, pl := range p.players {
		if pl == p.self || !pl.seated || pl.removed {
			continue
		}
		if st, ok := p.ep.Stats(pl.ID); !ok || !measured(st) {
			return true
		}
	}
	return false
}

// deliver is the endpoint's callback for every message that arrives.
func (p *Peer) deliver(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
	pl := p.byID[from]
	if pl == nil || pl == p.self {
		return
	}
	pl.lastHeard = now
	if inner, ok := p.tm.deliver(now, p, pl, msg); ok {
		if len(inner) == 0 {
			return
		}
		msg = inner // the frame or status packet that came with it
	}
	if pl.removed || pl.Observer {
		return
	}
	pk, err := decodeFramePacket(msg)
	if err != nil {
		p.badPackets++
		p.log.Debug("bad frame packet", "from", pl.Name, "err", err)
		return
	}
	if ch == netcore.ChannelReliable {
		pl.relDelivered++
	}
	for _, c := range pk.Commands {
		if int(c.Tag) <= pl.through && pl.relDelivered > 0 {
			// A command for a frame the sender had already promised
			// complete breaks the lockstep; drop it rather than desync.
			p.log.Warn("command for a frame already complete", "from", pl.Name, "tag", c.Tag, "through", pl.through)
			continue
		}
		if pl.removal != nil && c.Tag > pl.removal.Last {
			continue
		}
		pl.queue = append(pl.queue, c)
		if c.Type == CmdRemove {
			if r, err := decodeRemove(c.Payload); err == nil {
				if target := p.byID[netcore.PeerID(r.Player)]; target != nil && target.removal == nil {
					rr := r
					target.removal = &rr
					target.removing = true
					target.discardAfter(int(r.Last))
				}
			}
		}
	}
	for _, h := range pk.Holds {
		if o := p.byID[netcore.PeerID(h.Player)]; o != nil {
			pl.holds[o.idx] = max(pl.holds[o.idx], int(h.Through))
		}
	}
	if pk.RelCount <= pl.relDelivered {
		pl.through = max(pl.through, int(pk.Through))
	} else {
		pl.pending = append(pl.pending, pendingThrough{rel: pk.RelCount, through: int(pk.Through)})
	}
	if len(pl.pending) > 0 {
		kept := pl.pending[:0]
		for _, pt := range pl.pending {
			if pt.rel <= pl.relDelivered {
				pl.through = max(pl.through, pt.through)
			} else if pt.through > pl.through {
				kept = append(kept, pt)
			}
		}
		pl.pending = kept
		if len(pl.pending) > 64 {
			pl.pending = append(pl.pending[:0], pl.pending[len(pl.pending)-64:]...)
		}
	}
	p.compareChecksum(pl, int(pk.CkFrame), pk.Ck)
}

// discardAfter drops held commands tagged after last (a removed player's
// commands past its last frame never execute anywhere).
func (pl *player) discardAfter(last int) {
	n := 0
	for _, c := range pl.queue {
		if int(c.Tag) <= last || c.Type == CmdRemove {
			pl.queue[n] = c
			n++
		}
	}
	pl.queue = pl.queue[:n]
}

func (p *Peer) compareChecksum(pl *player, f int, ck uint32) {
	if pl.desynced || f <= 0 || f >= p.frame {
		return
	}
	slot := p.ckHist[f%ckHistory]
	if slot.frame != f || slot.ck == ck {
		return
	}
	pl.desynced = true
	p.emit(&MessageEvent{Header: Header{Type: "message", Frame: p.frame},
		Text: fmt.Sprintf("Desync with %s at frame %d", pl.Name, f), Player: p.self.Name})
	p.flushEvents()
}

func (p *Peer) activeEvent() *TimingActiveEvent {
	t := p.sched.InForce()
	return &TimingActiveEvent{Header: Header{Type: "timing_active"}, SendPeriod: t.SendPeriod, LookAhead: t.LookAhead,
		Rung: t.Rung(), Tier: t.Tier().String(), FPS: p.sched.FPS()}
}

// emitNet queues a network event for the frame being executed.
func (p *Peer) emitNet(e Event) {
	e.head().Frame = p.frame
	p.events = append(p.events, e)
}

// emit queues a local event; its frame is already set.
func (p *Peer) emit(e Event) { p.events = append(p.events, e) }

func (p *Peer) flushEvents() {
	for _, e := range p.events {
		p.cfg.Sink.Emit(p.self.Name, e)
	}
	clear(p.events)
	p.events = p.events[:0]
}

func (p *Peer) emitLinks(f int) {
	for _, pl := range p.players {
		if pl == p.self || pl.removed {
			continue
		}
		if ls, ok := p.LinkStat(pl.ID); ok {
			p.emit(&LinkEvent{Header: Header{Type: "link", Frame: f}, LinkStat: ls})
		}
	}
}

// LinkStat describes the private link to peer as the NDJSON contract names it.
func (p *Peer) LinkStat(peer netcore.PeerID) (LinkStat, bool) {
	pl := p.byID[peer]
	st, ok := p.ep.Stats(peer)
	if pl == nil || !ok {
		return LinkStat{}, false
	}
	return linkStat(p.self.Name, pl.Name, st), true
}

// Links lists every link this machine has, in house order.
func (p *Peer) Links() []LinkStat {
	var out []LinkStat
	for _, pl := range p.players {
		if pl == p.self {
			continue
		}
		if ls, ok := p.LinkStat(pl.ID); ok {
			out = append(out, ls)
		}
	}
	return out
}

// Summary is this machine's own totals for the summary line.
func (p *Peer) Summary() PlayerSummary {
	return PlayerSummary{Player: p.self.Name, TotalWaitMs: ms(p.waitTotal), MaxWaitMs: ms(p.waitMax), Frames: p.frames}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msp(d time.Duration) *float64 { v := ms(d); return &v }

func u64p(v uint64) *uint64 { return &v }
