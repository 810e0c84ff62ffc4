package session

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
)

// Role is what a machine is in a session.
type Role uint8

const (
	roleHost     Role = iota + 1 // starts the session, seats players, is the master at start
	RolePlayer                   // joins and is seated (house order: join order)
	RoleObserver                 // joins without a seat: sees everything, is never waited for
)

func (r Role) String() string {
	switch r {
	case roleHost:
		return "host"
	case RolePlayer:
		return "player"
	case RoleObserver:
		return "observer"
	}
	return "invalid"
}

// hostID is the host's PeerID in every session: a Welcome names only the
// joiner's ID, so the joiner knows the host's by this convention.
const hostID netcore.PeerID = 1

// Timing of the lobby. None of these touch the game's timing; they pace
// the handshake and the lobby's keep-alives.
const (
	// helloEvery paces a joiner's Hello and Response: handshakes are not
	// on a link, so nothing measures them, and half a second retries a
	// lost one well within a player's patience.
	helloEvery = 500 * time.Millisecond
	// joinTimeout is how long a joiner tries before it says the host does
	// not answer (wrong address, host not running, or a different --key).
	joinTimeout = 10 * time.Second
	// pingEvery paces lobby pings: each member learns its links carry
	// traffic, and the host learns who is ready, within a second.
	pingEvery = 500 * time.Millisecond
	// aliveEvery paces an observer's keep-alive after the start. It is
	// reliable, so the observer's links are measured like any other.
	aliveEvery = time.Second
	// stallAlive is how long a stall lasts before the stalled machine
	// checks that the player it waits for is still there; a frame or two
	// of waiting is ordinary and adds no traffic.
	stallAlive = time.Second
	// rosterResend is how soon the host sends the roster again to a member
	// whose pings show an older version (the global channel drops a
	// message at its timeout, T14, so the host repeats rather than trusts).
	rosterResend = time.Second
	// maxLobbySilence bounds how long a silent machine holds up the lobby
	// (the drop timeout applies in full once the game runs).
	maxLobbySilence = 10 * time.Second
	// quitLinger is how long a leaving machine waits for its last
	// reliable datagrams (its removal, its leave) to be acked.
	quitLinger = 2 * time.Second
	// quitLimit bounds a clean quit: a player whose removal cannot execute
	// (every other machine has vanished) leaves anyway.
	quitLimit = 5 * time.Second
	// cookieEpoch is how long a challenge cookie stays good (this epoch
	// and the one before).
	cookieEpoch = 30 * time.Second
	// maxObservers bounds the seats for watchers.
	maxObservers = 64
	// maxBuffered bounds the frame packets held for a peer that has not
	// started yet (a Start that is late, or lost and repeated).
	maxBuffered = 4096
	// DefaultPlayers is how many seated players a host starts at when not
	// told otherwise.
	DefaultPlayers = 2
)

// Config sets up a session.
type Config struct {
	Name string
	Key  []byte // pre-shared key (Q7); nil for none
	// Plain runs the session unsealed: the simulator and the demo, whose
	// machines share one process and one network of their own. Every
	// other session seals each link under keys of its pair (netcore's
	// seal.go), keyed or open.
	Plain bool

	// Speed is the game speed (frames per second, S15). The host's is the
	// session's; a joiner's, when set, is asked for with a game-speed
	// event once the game runs (S17).
	Speed int
	// Players (host) is how many seated players, the host included, start
	// the game; default DefaultPlayers.
	Players int
	// Guide (host) is what this machine's lobby shows others to join it
	// (feed.LobbyView.Guide); it stays on this machine.
	Guide *feed.JoinGuide
	// KeyArg (a joiner) is the key as the command line gave it (--key),
	// for the command a refusal suggests instead; "" when the key came
	// from a file (which the other command reads too) or there is none.
	KeyArg string
	// DropTimeout (host) removes a player silent this long; default 60 s.
	// Joiners take the host's.
	DropTimeout time.Duration

	// CommandsPerMinute is the synthetic game commands each player issues:
	// what makes frame packets reliable, and so measured (T6).
	CommandsPerMinute float64
	Seed              uint64

	// Net tunes the endpoint (retry interval, connection timeout, ping
	// interval); identity, key, logger and handshake are the session's.
	Net netcore.Config

	Sink   feed.Sink
	Logger *slog.Logger
	Rand   io.Reader // session token, nonces, cookie secret; nil: crypto/rand
	// OnFrame, when set, is the peer's OnFrame: called after each frame
	// with the running checksum of executed commands (tests, recorder).
	OnFrame func(frame int, checksum uint32)
	// FrameClock is the peer's FrameClock: a monotonic clock read around
	// each frame's work so that a live machine reports its measured
	// processing time (S5, S15). nil: none is measured (reports say 0).
	FrameClock func() time.Duration
	// OnCommand, when set, is the peer's OnCommand: every command this
	// machine executes, with the send frame it ran on and the frame it was
	// scheduled for (S13; --record stores them). at is the session's time.
	// It runs on the driver's goroutine; c.Payload must be copied to be
	// kept.
	OnCommand func(at time.Duration, player string, sendFrame int, c feed.Command)
	// ProcessTime is the peer's processing time per frame (S5): the
	// simulator charges it in virtual time; live machines leave it 0.
	ProcessTime time.Duration
	// LinkEvery, when above 0, has the peer publish a link line per link
	// every this many frames (the simulator's link_every).
	LinkEvery int
	// NoTelemetry keeps a player from streaming its links to the others
	// (the simulator: its printed run stays the game's own traffic).
	NoTelemetry bool
	// Observers (host) is how many observers must be in the session, as
	// well as Players seated, before the game starts by itself; default 0.
	// The simulator sets it so the watchers a scenario names see the start.
	Observers int
	// Virtual says the session runs on a virtual clock (the simulator):
	// the peer reports every stall, however short. On the wall clock a
	// stall shorter than a frame time is jitter, so live machines drop it.
	Virtual bool
	// LobbySink, when set, takes the session's own events (its session
	// and roster lines and its messages about joins, leaves and the
	// start) instead of Sink, which then gets only the game's (the
	// peer's). The simulator prints only the game's.
	LobbySink feed.Sink
	// TelemetryTo names the machines a player streams its telemetry to;
	// nil: every machine. The demo sets it: its machines share
	// one process, and a stream costs both ends a ring of 32 snapshots
	// (132 KB), so 64 machines streaming to each other would hold a
	// gigabyte for matrices only yours draws.
	TelemetryTo []string
	// LocalAddrs are the addresses this machine tells the host it can be
	// reached at, for hole punching; nil: the socket's, or
	// every interface's at the socket's port for a wildcard socket.
	LocalAddrs []netip.AddrPort
	// FillMatrix, when set, is the peer's FillMatrix: the simulator hands
	// every machine's diagnosis the other machines' own rows.
	FillMatrix func(now time.Duration, m *feed.MatrixView)
	// Alerts are the peer's alert thresholds (the config file's
	// [alerts]); zero values take the defaults.
	Alerts probe.AlertConfig
	// Trace names a machine whose link this machine looks at closely, a
	// round of probes a second, for the whole session, from the moment
	// the link exists (--trace): what a machine without a Path view
	// shows (trace.go).
	Trace string
	// NoTrace: this machine traces nothing and sends no probe
	// (--no-trace, or trace = false in the config file).
	NoTrace bool
	// Load is what this machine's flags say of load tests (load.go).
	Load LoadConfig
}

// Errors that end a session.
var (
	errNoAnswer = errors.New("the host does not answer (is it running at that address, with the same --key?)")
	errHostLeft = errors.New("the host closed the session before the game started")
	// errFeedLost: a late watcher heard no update for the drop timeout and
	// more: the host is gone and no player reaches this watcher directly.
	errFeedLost = errors.New("the game's feed stopped: the host left, and no player reaches this watcher directly (it came in through the host's relay)")
	errLostHost = errors.New("lost contact with the host before the game started")
	errDropped  = errors.New("the host dropped this machine from the lobby")
	// errNotJoined: the machine left (Ctrl-C, --duration) before the host
	// answered its join.
	errNotJoined = errors.New("left before the host answered (is it running at that address, with the same --key?)")
)

// refusedError is a host's refusal of a join; Host and Cmd ("join" or
// "watch") make the line that says what to type instead.
type refusedError struct {
	Reason netcore.RefuseReason
	Host   netip.AddrPort
	Cmd    string
}

func (e refusedError) Error() string {
	switch e.Reason {
	case netcore.RefuseNeedKey:
		return fmt.Sprintf("this session needs its code: lagscope %s %s --key CODE", e.Cmd, e.Host)
	case netcore.RefuseFull:
		return "the host refused: no seat left"
	case netcore.RefuseStarted:
		return "the host refused: the game has already started"
	case netcore.RefuseBadCookie:
		return "the host refused: the handshake did not check out"
	case refuseNameTaken:
		return "the host refused: that name is taken in this session (choose another with --name)"
	case refuseBadName:
		return "the host refused: not a valid name"
	}
	return fmt.Sprintf("the host refused (reason %d)", e.Reason)
}

type joinState uint8

const (
	joinHello    joinState = iota + 1 // sending Hello
	joinResponse                      // sending Response with the cookie
	joinWelcomed                      // in the session
)

// member is one machine of the roster as the session sees it.
type member struct {
	probe.Member
	linked    bool // this machine keeps a link to it
	heard     bool // something arrived from it since it was linked
	lastHeard time.Duration
	removed   bool // removed from the game (executed removal) or forgotten
	late      bool // an observer that attached after the start (watch.go)
	watching  bool // (host) a late watcher that has its snapshot: updates follow
	// snapshotDue (the feeder): a late watcher let in, waiting for the
	// watchers' budget to hold its snapshot (watch.go).
	snapshotDue bool

	// host side
	nonce      uint64 // its handshake nonce (a repeated Response gets the same Welcome)
	version    uint32 // newest roster version it said it holds
	ready      bool
	started    bool
	rosterSent time.Duration
	startSent  time.Duration

	path pairPath // hole punching and relaying (punch.go)
}

// Session is one machine's part in a live session: the handshake, the lobby
// and, once the game starts, its probe.Peer. Like the Peer it is a sans-I/O
// state machine: every method takes the current time, one goroutine calls
// them all, and datagrams go out through the transport it was built on.
type Session struct {
	cfg  Config
	role Role
	ep   *netcore.Endpoint
	tr   netcore.Transport
	log  *slog.Logger
	rnd  io.Reader
	peer *probe.Peer

	token    uint64
	self     netcore.PeerID
	hostAddr netip.AddrPort // joiners: where the host is reached

	// joiner handshake
	join      joinState
	nonce     uint64
	cookie    [netcore.CookieLen]byte
	nextHello time.Duration
	joinUntil time.Duration
	began     bool
	beganAt   time.Duration

	// roster
	version     uint32
	members     []*member // house order
	byID        map[netcore.PeerID]*member
	need        int
	speed       int
	dropTimeout time.Duration

	// host
	secret  [32]byte
	nextID  netcore.PeerID
	budget  replyBudget // handshake replies to unverified sources (budget.go)
	started bool

	startWanted  bool   // start once the current input is handled
	pendingStart uint32 // a Start for a roster version not held yet
	buffered     []held
	nextPing     time.Duration
	nextAlive    time.Duration
	nextCheck    time.Duration
	askedSpeed   bool

	quitting  bool
	quitAt    time.Duration
	lingering bool
	lingerEnd time.Duration
	// lingerCap bounds the wait for every peer to have the removal
	// (quitMarks) once the short linger is over; awaitRemoval is that
	// wait.
	lingerCap    time.Duration
	awaitRemoval bool
	quitMarks    []quitMark
	done         bool
	err          error

	nat natState // hole punching and relaying (punch.go, relay.go)

	wb watchBudget // what watchers cost this machine (watchbudget.go)

	watch     watchState    // late watchers (watch.go)
	trace     traceState    // which links are traced (trace.go)
	load      loadState     // load tests (load.go)
	startedAt time.Duration // when the game started here
	lateSelf  bool          // this machine is a late watcher: it follows, never starts

	rejected rejected
	events   []feed.Event
	buf      []byte
}

// held is a frame packet that arrived before this machine's game started.
type held struct {
	from netcore.PeerID
	ch   netcore.Channel
	msg  []byte
}

// rejected counts what the session layer refused, beside netcore's counts.
type rejected struct {
	Handshake uint64 // handshake records out of place, too small to answer, or with a bad cookie
	Lobby     uint64 // lobby messages that did not decode or came from the wrong machine
	Path      uint64 // checks and relay frames that would move a link without a verified path
	Load      uint64 // load-test messages malformed, or from a machine that may not send them (loadturn.go)
}

// NewHost starts a session on tr: the host is seated first and is the master
// at the start (S16). It listens for joiners at once.
func NewHost(cfg Config, tr netcore.Transport) (*Session, error) {
	s, err := newSession(cfg, roleHost, tr)
	if err != nil {
		return nil, err
	}
	if err := s.random(s.secret[:]); err != nil {
		return nil, err
	}
	for s.token == 0 {
		var b [8]byte
		if err := s.random(b[:]); err != nil {
			return nil, err
		}
		s.token = le.Uint64(b[:])
	}
	s.self = hostID
	s.nextID = hostID + 1
	s.need = cfg.Players
	if s.need <= 0 {
		s.need = DefaultPlayers
	}
	if s.need > maxMembers-maxObservers {
		return nil, fmt.Errorf("live: at most %d players", maxMembers-maxObservers)
	}
	s.speed = s.cfg.Speed
	s.dropTimeout = cfg.DropTimeout
	if s.dropTimeout <= 0 {
		s.dropTimeout = 60 * time.Second
	}
	if s.dropTimeout > maxDropLimit {
		return nil, fmt.Errorf("live: drop timeout above %v", maxDropLimit)
	}
	if err := s.newEndpoint(hostID, s.token); err != nil {
		return nil, err
	}
	s.addMember(&member{Member: probe.Member{ID: hostID, Name: cfg.Name, Addr: tr.LocalAddr(), Key: s.ep.PublicKey()}})
	s.version = 1
	s.emit(&feed.SessionEvent{Header: feed.Header{Type: vocab.EventSession}, Session: s.SessionName(), Role: roleHost.String(),
		Name: cfg.Name, Addr: tr.LocalAddr().String(), Need: s.need})
	s.emitRoster()
	return s, nil
}

// NewJoiner joins the session hosted at host, as a player or an observer
// (role RolePlayer or RoleObserver). The handshake starts on the first Tick.
func NewJoiner(cfg Config, role Role, tr netcore.Transport, host netip.AddrPort) (*Session, error) {
	if role != RolePlayer && role != RoleObserver {
		return nil, errors.New("live: a joiner is a player or an observer")
	}
	if !host.IsValid() || host.Port() == 0 {
		return nil, errors.New("live: the host's address needs a host and a port")
	}
	s, err := newSession(cfg, role, tr)
	if err != nil {
		return nil, err
	}
	s.hostAddr = netip.AddrPortFrom(host.Addr().Unmap(), host.Port())
	var b [8]byte
	if err := s.random(b[:]); err != nil {
		return nil, err
	}
	s.nonce = le.Uint64(b[:])
	s.self = netcore.PeerUnassigned
	s.join = joinHello
	if err := s.newEndpoint(netcore.PeerUnassigned, 0); err != nil {
		return nil, err
	}
	s.emit(&feed.SessionEvent{Header: feed.Header{Type: vocab.EventSession}, Role: role.String(), Name: cfg.Name,
		Addr: tr.LocalAddr().String(), Host: s.hostAddr.String()})
	return s, nil
}

func newSession(cfg Config, role Role, tr netcore.Transport) (*Session, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, fmt.Errorf("live: name %q: %w", cfg.Name, err)
	}
	if tr == nil {
		return nil, errors.New("live: no transport")
	}
	if cfg.Speed == 0 && role == roleHost {
		cfg.Speed = 30
	}
	if cfg.Speed != 0 && (cfg.Speed < minSpeed || cfg.Speed > maxSpeed) {
		return nil, fmt.Errorf("live: game speed %d outside %d..%d", cfg.Speed, minSpeed, maxSpeed)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Sink == nil {
		cfg.Sink = feed.SinkFunc(func(string, feed.Event) {})
	}
	s := &Session{cfg: cfg, role: role, tr: tr, log: cfg.Logger, rnd: cfg.Rand, byID: map[netcore.PeerID]*member{}}
	if s.rnd == nil {
		s.rnd = rand.Reader
	}
	return s, nil
}

func (s *Session) random(b []byte) error {
	_, err := io.ReadFull(s.rnd, b)
	return err
}

func (s *Session) newEndpoint(self netcore.PeerID, token uint64) error {
	nc := s.cfg.Net
	nc.Self, nc.Session = self, token
	nc.Key = s.cfg.Key
	nc.Seal = !s.cfg.Plain
	nc.Logger = s.log
	nc.Handshake = s.handshake
	nc.NewSource = s.onNewSource
	// An observer sends no game commands: its keep-alives' replies are
	// what measures its links (an observer's keep-alive is unnumbered, L2).
	nc.KeepAliveSamples = s.role == RoleObserver
	if nc.Rand == nil {
		nc.Rand = s.rnd
	}
	ep, err := netcore.NewEndpoint(nc, pathTransport{s}, s.deliver)
	if err != nil {
		return err
	}
	s.ep = ep
	return nil
}

func (s *Session) addMember(m *member) {
	s.members = append(s.members, m)
	s.byID[m.ID] = m
	s.membersChanged()
}
