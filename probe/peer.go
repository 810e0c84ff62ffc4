package probe

import (
	"errors"
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// Member is one machine of a session, in house order.
type Member struct {
	ID       netcore.PeerID
	Name     string
	Addr     netip.AddrPort
	Observer bool // never seated, never waited for, never in a report
	// Key is its identity, what a sealing endpoint's link to it derives
	// its keys from (netcore.PublicKey); zero where nothing is sealed.
	Key netcore.PublicKey
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
	ProcessTime time.Duration
	// FrameClock, when set, is a monotonic clock the peer reads around
	// each executed frame's work (its commands and OnFrame) to measure its
	// own processing time: a live peer reports the average over each
	// report interval (S5), so the master's frame-rate cap (S15) works
	// live. The peer never reads the wall clock itself; nil (the
	// simulator) reports ProcessTime.
	FrameClock        func() time.Duration
	CommandsPerMinute float64 // synthetic game commands; 0 = none
	Seed              uint64

	LinkEvery int // publish a link line per link every this many frames; 0 = never

	Alerts AlertConfig // alert thresholds (alerts.go); zero values take the defaults

	// Telemetry makes a seated player stream its own links and waits to
	// every other machine (telemetry.go). Live sessions turn it
	// on; the simulator leaves it off, so its output stays what it was.
	// Every peer takes in the telemetry that reaches it either way.
	Telemetry bool
	// SparseStatus makes a stalled machine repeat its frame state at the
	// usual pace only to the machines that may lack some of its commands
	// (they may be waiting on it), and to the rest once every
	// sparseStatusGap (packets.go). In a session of 64 where everyone
	// waits for one machine, every other machine sent its state to all 63
	// every 50 ms: 78 % of a demo's datagrams. Live sessions turn it on;
	// the simulator leaves it off, so its output stays what it was.
	SparseStatus bool
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
	OnCommand func(now time.Duration, player string, sendFrame int, c feed.Command)

	// FillMatrix, when set, completes the matrix the diagnosis reads
	// (diagnose.go): the simulator, which holds every machine, fills in
	// each machine's own row, so that every machine diagnoses from every
	// machine's links without telemetry (which would change its output).
	FillMatrix func(now time.Duration, m *feed.MatrixView)
	// GameClock says the machine runs on the simulator's game clock:
	// incidents tell their times from the game's start (a scenario's
	// at_ms), and every wait counts against the player waited for.
	// Otherwise the times are the live machine's t_ms, and waits shorter
	// than a frame are the wall clock's jitter (stallFloor).
	GameClock bool

	Net    netcore.Config // Self is filled in from Self
	Sink   feed.Sink
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
	queue        []feed.Command // held, not yet executed, in tag order

	lastHeard time.Duration
	holds     []int // from its status packets: its completeness of each house index
	removal   *removePayload
	removing  bool // a removal of it is issued or held
	desynced  bool
	bad       bool // the link to it has gone bad (T11)

	// known is a lower bound of its completeness of this machine's
	// commands: the frames it has executed (frame packets), its holds
	// (status packets). SparseStatus spares it our status once known
	// reaches what we promised. lastStatus is when it last got one.
	known      int
	lastStatus time.Duration

	// waits this machine spent on this player's commands, and the
	// frames it waited on for them
	caused       time.Duration
	framesWaited int
}

// Peer is one machine of a lockstep session (docs/architecture.md, "The
// lockstep as built"). It is a sans-I/O state machine: every method takes
// the current time, and one goroutine calls them all.
type Peer struct {
	cfg     Config
	ep      *netcore.Endpoint
	log     *slog.Logger
	self    *player
	players []*player // house order
	byID    map[netcore.PeerID]*player
	ids     playerIndex // byID as a slice, for the per-datagram lookups (packets.go)
	rng     *rand.Rand

	started    bool
	done       bool
	quitting   bool
	startAt    time.Duration
	frame      int       // next frame to execute
	game       gameClock // the session's time of each frame (gameclock.go)
	nextDue    time.Duration
	stallFrom  time.Duration
	dropAt     time.Duration // checkDrops has nothing to do before this
	stalled    bool
	lastCause  *player // the player this machine waited for last
	lastStatus time.Duration

	sched  *rungs.Schedule
	record *rungs.Record
	master *rungs.Master
	// shadow follows the master's evaluations on every machine (the record
	// and the game speed are the same everywhere): the diagnosis names the
	// target chosen at an evaluation before its timing event executes, and
	// what the target does next (rungs.Master.Outlook).
	shadow  rungs.Master
	masterP *player
	speed   int

	seq         uint32
	outbox      []feed.Command // issued, not yet sent
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
	// measured processing time (Config.FrameClock): the sum and count
	// since the last report, and the last average reported.
	costSum   time.Duration
	costN     int
	processed time.Duration

	waitTotal time.Duration
	waitMax   time.Duration
	frames    int

	paths pathShare // the hop traces shared with the others (pathshare.go)

	buf     []byte
	holds   []hold // sendStatus's scratch
	rxHolds []hold // deliver's scratch for a status packet's holds
	exec    []execCmd
	events  []feed.Event

	nextWatch  time.Duration
	watched    bool
	badPackets uint64 // frame packets that did not decode
	// implausible counts what the plausibility bounds refused; doubtful
	// is how many queued removals may not be held yet (plausible.go).
	implausible uint64
	doubtful    int
	retired     []feed.LinkStat // ended links, as they stood when they ended

	tm *telemetry // the snapshot streams of every player's links (telemetry.go)

	spec *spectator // set: a late watcher following the game (spectator.go)

	alerts alerts    // the alert watch (alerts.go)
	dg     diagState // the diagnosis's scratch and history (diagnose.go)
	inc    incidents // the incidents told so far (incidents.go)
	load   loadNotes // load tests the diagnosis and alerts take in (load_note.go)
}

type execCmd struct {
	p   *player
	cmd feed.Command
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
		cfg.Sink = feed.SinkFunc(func(string, feed.Event) {})
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Peer{cfg: cfg, log: cfg.Logger, byID: map[netcore.PeerID]*player{}, speed: cfg.Speed, lastExec: -1, tm: newTelemetry(cfg.Telemetry)}
	for i, m := range cfg.Roster {
		if _, dup := p.byID[m.ID]; dup {
			return nil, fmt.Errorf("probe: peer id %d twice in the roster", m.ID)
		}
		pl := &player{Member: m, idx: i, seated: !m.Observer, through: cfg.Timing.LookAhead - 1, known: cfg.Timing.LookAhead - 1}
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

// Name is this machine's player name.
func (p *Peer) Name() string { return p.self.Name }

// Frame is the next frame this machine will execute.
func (p *Peer) Frame() int { return p.frame }

// Done reports whether this machine has left the session.
func (p *Peer) Done() bool { return p.done }

// Observer reports whether this machine watches without a seat.
func (p *Peer) Observer() bool { return p.self.Observer }

// FPS is the frame rate in force (S15); before the start, the game speed.
func (p *Peer) FPS() int {
	if p.started {
		return p.sched.FPS()
	}
	return p.cfg.Speed
}

// WaitingFor is the player this machine is stalled on right now, and since
// when (the frame's due time), if it is stalled.
func (p *Peer) WaitingFor() (netcore.PeerID, time.Duration, bool) {
	if !p.stalled || p.lastCause == nil {
		return 0, 0, false
	}
	return p.lastCause.ID, p.stallFrom, true
}

// InForce is the timing in force (S12).
func (p *Peer) InForce() rungs.Timing { return p.sched.InForce() }

// BadPackets counts messages from linked machines that did not decode as
// frame packets (dropped, never acted on).
func (p *Peer) BadPackets() uint64 { return p.badPackets }

// Connect opens the private link to every other machine of the roster (T1).
// Call it before Start, while the lobby forms.
func (p *Peer) Connect(now time.Duration) {
	for _, pl := range p.players {
		if pl != p.self {
			if err := p.ep.AddLink(now, pl.ID, pl.Addr, pl.Key); err != nil {
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
	p.game.mark(p.frame, 0, p.sched.FPS())
	p.master = rungs.NewMaster(0, p.cfg.Timing, p.cfg.Speed)
	p.shadow = *p.master
	p.masterP = p.firstSeated(nil)
	if p.masterP != nil {
		p.emitNet(&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster}, Player: p.masterP.Name})
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
	p.sharePaths(now)
	p.run(now)
	p.evaluateIncidents(now)
}

// FrameDue is when the next frame is due, while the peer runs frames and
// is not waiting for another machine's commands: how late the frame loop
// is at a wake-up (a stall is the network's wait, not the loop's). False
// otherwise (before the start, stalled, a spectator, done).
func (p *Peer) FrameDue() (time.Duration, bool) {
	if !p.started || p.done || p.stalled || p.nextDue == never {
		return 0, false
	}
	return p.nextDue, true
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
		if !ok || p.inc.next < d {
			d, ok = p.inc.next, true
		}
	}
	return d, ok
}
