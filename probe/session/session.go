package live

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/rungs"
)

// Role is what a machine is in a session.
type Role uint8

const (
	RoleHost     Role = iota + 1 // starts the session, seats players, is the master at start
	RolePlayer                   // joins and is seated (house order: join order)
	RoleObserver                 // joins without a seat: sees everything, is never waited for
)

func (r Role) String() string {
	switch r {
	case RoleHost:
		return "host"
	case RolePlayer:
		return "player"
	case RoleObserver:
		return "observer"
	}
	return "invalid"
}

// HostID is the host's PeerID in every session: a Welcome names only the
// joiner's ID, so the joiner knows the host's by this convention.
const HostID netcore.PeerID = 1

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

	// Speed is the game speed (frames per second, S15). The host's is the
	// session's; a joiner's, when set, is asked for with a game-speed
	// event once the game runs (S17).
	Speed int
	// Players (host) is how many seated players, the host included, start
	// the game; default DefaultPlayers.
	Players int
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

	Sink   probe.Sink
	Logger *slog.Logger
	Rand   io.Reader // session token, nonces, cookie secret; nil: crypto/rand
	// OnFrame, when set, is the peer's OnFrame: called after each frame
	// with the running checksum of executed commands (tests, recorder).
	OnFrame func(frame int, checksum uint32)
	// OnCommand, when set, is the peer's OnCommand: every command this
	// machine executes, with the send frame it ran on and the frame it was
	// scheduled for (S13; --record stores them). at is the session's time.
	// It runs on the driver's goroutine; c.Payload must be copied to be
	// kept.
	OnCommand func(at time.Duration, player string, sendFrame int, c probe.Command)
	// TelemetryTo names the machines a player streams its telemetry to;
	// nil: every machine (issue 7). The demo sets it: its machines share
	// one process, and a stream costs both ends a ring of 32 snapshots
	// (132 KB), so 64 machines streaming to each other would hold a
	// gigabyte for matrices only yours draws.
	TelemetryTo []string
}

// Errors that end a session.
var (
	ErrNoAnswer = errors.New("the host does not answer (is it running at that address, with the same --key?)")
	ErrHostLeft = errors.New("the host closed the session before the game started")
	ErrLostHost = errors.New("lost contact with the host before the game started")
	ErrDropped  = errors.New("the host dropped this machine from the lobby")
)

// RefusedError is a host's refusal of a join.
type RefusedError struct{ Reason netcore.RefuseReason }

func (e RefusedError) Error() string {
	switch e.Reason {
	case netcore.RefuseFull:
		return "the host refused: no seat left"
	case netcore.RefuseStarted:
		return "the host refused: the game has already started"
	case netcore.RefuseBadCookie:
		return "the host refused: the handshake did not check out"
	case RefuseNameTaken:
		return "the host refused: that name is taken in this session (choose another with --name)"
	case RefuseBadName:
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

	// host side
	nonce      uint64 // its handshake nonce (a repeated Response gets the same Welcome)
	version    uint32 // newest roster version it said it holds
	ready      bool
	started    bool
	rosterSent time.Duration
	startSent  time.Duration
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
	rxLen   int // size of the datagram being received (amplification rule)
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
	done      bool
	err       error

	rejected Rejected
	events   []probe.Event
	buf      []byte
}

// held is a frame packet that arrived before this machine's game started.
type held struct {
	from netcore.PeerID
	ch   netcore.Channel
	msg  []byte
}

// Rejected counts what the session layer refused, beside netcore's counts.
type Rejected struct {
	Handshake uint64 // handshake records out of place, too small to answer, or with a bad cookie
	Lobby     uint64 // lobby messages that did not decode or came from the wrong machine
}

// NewHost starts a session on tr: the host is seated first and is the master
// at the start (S16). It listens for joiners at once.
func NewHost(cfg Config, tr netcore.Transport) (*Session, error) {
	s, err := newSession(cfg, RoleHost, tr)
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
	s.self = HostID
	s.nextID = HostID + 1
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
	if err := s.newEndpoint(HostID, s.token); err != nil {
		return nil, err
	}
	s.addMember(&member{Member: probe.Member{ID: HostID, Name: cfg.Name, Addr: tr.LocalAddr()}})
	s.version = 1
	s.emit(&probe.SessionEvent{Header: probe.Header{Type: "session"}, Session: s.SessionName(), Role: RoleHost.String(),
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
	s.emit(&probe.SessionEvent{Header: probe.Header{Type: "session"}, Role: role.String(), Name: cfg.Name,
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
	if cfg.Speed == 0 && role == RoleHost {
		cfg.Speed = 30
	}
	if cfg.Speed != 0 && (cfg.Speed < minSpeed || cfg.Speed > maxSpeed) {
		return nil, fmt.Errorf("live: game speed %d outside %d..%d", cfg.Speed, minSpeed, maxSpeed)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Sink == nil {
		cfg.Sink = probe.SinkFunc(func(string, probe.Event) {})
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
	nc.Logger = s.log
	nc.Handshake = s.handshake
	if nc.Rand == nil {
		nc.Rand = s.rnd
	}
	ep, err := netcore.NewEndpoint(nc, s.tr, s.deliver)
	if err != nil {
		return err
	}
	s.ep = ep
	return nil
}

func (s *Session) addMember(m *member) {
	s.members = append(s.members, m)
	s.byID[m.ID] = m
}

// Role is what this machine is in the session.
func (s *Session) Role() Role { return s.role }

// Name is this machine's player name.
func (s *Session) Name() string { return s.cfg.Name }

// Peer is the game's peer once the game has started here, else nil.
func (s *Session) Peer() *probe.Peer { return s.peer }

// Endpoint is the session's transport state (links, totals, rejections).
func (s *Session) Endpoint() *netcore.Endpoint { return s.ep }

// Started reports whether the game runs here.
func (s *Session) Started() bool { return s.started }

// Done reports whether the session has ended for this machine; Err says
// why when it ended badly.
func (s *Session) Done() bool { return s.done }

// Err is why the session ended, or nil for a clean end.
func (s *Session) Err() error { return s.err }

// SessionName is a short name of the session every machine agrees on:
// the top of the session token, once this machine knows it.
func (s *Session) SessionName() string {
	if s.token == 0 {
		return ""
	}
	return fmt.Sprintf("%08x", s.token>>32)
}

// Frame is the next frame the game executes here (0 in the lobby).
func (s *Session) Frame() int {
	if s.peer != nil {
		return s.peer.Frame()
	}
	return 0
}

// Receive hands the session one datagram from the network.
func (s *Session) Receive(now time.Duration, from netip.AddrPort, datagram []byte) {
	if s.done {
		return
	}
	s.rxLen = len(datagram)
	if s.peer != nil {
		s.peer.Receive(now, from, datagram)
	} else {
		s.ep.Receive(now, from, datagram)
	}
	s.after(now)
}

// Tick runs whatever is due at now.
func (s *Session) Tick(now time.Duration) {
	if s.done {
		return
	}
	if !s.began {
		s.began, s.beganAt = true, now
		s.joinUntil = now + joinTimeout
		s.nextCheck = now + time.Second
	}
	if s.peer != nil {
		s.peer.Tick(now)
	} else {
		s.ep.Tick(now)
	}
	if s.join == joinHello || s.join == joinResponse {
		s.tickJoin(now)
	}
	if !s.started && s.inLobby() && now >= s.nextPing {
		s.sendPings(now)
		s.nextPing = now + pingEvery
	}
	if s.started && !s.quitting && now >= s.nextAlive {
		s.nextAlive = now + aliveEvery
		if s.role == RoleObserver {
			s.sendToPlayers(now, netcore.ChannelReliable, []byte{kindAlive})
		} else if id, since, ok := s.peer.WaitingFor(); ok && now-since >= stallAlive {
			// A stalled machine sends no frame packets that ask for an
			// ack, so a player that vanished would leave nothing unacked
			// and its link would never show bad (T11). One reliable
			// keep-alive a second to the player we wait for does.
			_ = s.ep.Send(now, id, netcore.ChannelReliable, []byte{kindAlive})
		}
	}
	if now >= s.nextCheck {
		s.checkSilence(now)
		s.nextCheck = now + time.Second
	}
	s.after(now)
}

// NextDeadline is when the session next needs a Tick.
func (s *Session) NextDeadline() (time.Duration, bool) {
	if s.done {
		return 0, false
	}
	if !s.began {
		return 0, true
	}
	d, ok := s.ep.NextDeadline()
	if s.peer != nil {
		d, ok = s.peer.NextDeadline()
	}
	take := func(t time.Duration) {
		if !ok || t < d {
			d, ok = t, true
		}
	}
	take(s.nextCheck)
	switch {
	case s.join == joinHello || s.join == joinResponse:
		take(min(s.nextHello, s.joinUntil))
	case !s.started && s.inLobby():
		take(s.nextPing)
	case s.started && !s.quitting:
		take(s.nextAlive)
	}
	if s.lingering {
		take(s.lingerEnd)
	}
	if s.quitting {
		take(s.quitAt + quitLimit)
	}
	return d, ok
}

// inLobby: welcomed (or hosting) and the game has not started.
func (s *Session) inLobby() bool {
	return !s.started && (s.role == RoleHost || s.join == joinWelcomed)
}

// after runs once an input has been handled: a start decided during it,
// the host's start rule, a quit that has finished.
func (s *Session) after(now time.Duration) {
	if s.startWanted {
		s.startWanted = false
		s.startGame(now)
	}
	if s.role == RoleHost && !s.started && !s.quitting && s.allReady() {
		s.hostStart(now)
	}
	if s.peer != nil && !s.askedSpeed && s.role == RolePlayer && s.cfg.Speed != 0 && s.cfg.Speed != s.speed {
		s.askedSpeed = true
		s.peer.SetSpeed(s.cfg.Speed)
	}
	if s.quitting {
		s.checkQuit(now)
	}
	s.flush()
}

// ---- handshake ----

// challengeLen is the size of the host's Challenge datagram; a Hello must be
// at least this large to be answered, so an unverified (possibly spoofed)
// source never gets a reply larger than its request.
func (s *Session) challengeLen() int {
	n := netcore.HeaderLen + 3 + 8 + netcore.CookieLen
	if len(s.cfg.Key) > 0 {
		n += netcore.SealOverhead
	}
	return n
}

// paddedHello is the Hello's name field: the session layer takes the name
// from the Response (sent by a source that proved it receives), so the
// Hello's name only needs to make the Hello as large as the Challenge. It
// is the name followed by NUL bytes up to MaxNameLen.
func paddedHello(name string) string {
	if len(name) >= netcore.MaxNameLen {
		return name
	}
	return name + strings.Repeat("\x00", netcore.MaxNameLen-len(name))
}

func (s *Session) tickJoin(now time.Duration) {
	if now >= s.joinUntil {
		s.fail(ErrNoAnswer)
		return
	}
	if now < s.nextHello {
		return
	}
	s.nextHello = now + helloEvery
	role := netcore.RolePlayer
	if s.role == RoleObserver {
		role = netcore.RoleObserver
	}
	var err error
	if s.join == joinHello {
		err = s.ep.SendHandshake(s.hostAddr, netcore.Hello{Nonce: s.nonce, Role: role, Name: paddedHello(s.cfg.Name)})
	} else {
		err = s.ep.SendHandshake(s.hostAddr, netcore.Response{Nonce: s.nonce, Cookie: s.cookie, Role: role, Name: s.cfg.Name})
	}
	if err != nil {
		s.log.Debug("handshake not sent", "to", s.hostAddr, "err", err)
	}
}

// handshake is the endpoint's hook for handshake records (token 0).
func (s *Session) handshake(now time.Duration, from netip.AddrPort, sender netcore.PeerID, m netcore.HandshakeMsg) {
	if s.done {
		return
	}
	switch m := m.(type) {
	case netcore.Hello:
		s.onHello(now, from, m)
	case netcore.Response:
		s.onResponse(now, from, m)
	case netcore.Challenge:
		if s.join != joinHello || from != s.hostAddr || m.Nonce != s.nonce {
			s.rejected.Handshake++
			return
		}
		s.cookie = m.Cookie
		s.join = joinResponse
		s.nextHello = now // answer at once (in tickJoin, after this datagram)
	case netcore.Welcome:
		if (s.join != joinHello && s.join != joinResponse) || from != s.hostAddr || m.Nonce != s.nonce {
			s.rejected.Handshake++
			return
		}
		s.welcomed(now, m)
	case netcore.Refuse:
		if (s.join != joinHello && s.join != joinResponse) || from != s.hostAddr || m.Nonce != s.nonce {
			s.rejected.Handshake++
			return
		}
		s.fail(RefusedError{Reason: m.Reason})
	default:
		s.rejected.Handshake++
	}
}

func (s *Session) onHello(now time.Duration, from netip.AddrPort, m netcore.Hello) {
	if s.role != RoleHost || s.quitting {
		s.rejected.Handshake++
		return
	}
	if s.rxLen < s.challengeLen() {
		// Too small to answer without amplifying a spoofed request.
		s.rejected.Handshake++
		return
	}
	c := s.cookieFor(from, m.Nonce, s.epoch(now))
	if err := s.ep.SendHandshake(from, netcore.Challenge{Nonce: m.Nonce, Cookie: c}); err != nil {
		s.log.Debug("challenge not sent", "to", from, "err", err)
	}
}

func (s *Session) epoch(now time.Duration) uint64 { return uint64(now / cookieEpoch) }

// cookieFor binds a challenge to the joiner's address and nonce and to a
// time epoch, under a secret only the host knows: a Response that carries
// it proves its sender receives at that address.
func (s *Session) cookieFor(from netip.AddrPort, nonce, epoch uint64) [netcore.CookieLen]byte {
	mac := hmac.New(sha256.New, s.secret[:])
	a := from.Addr().As16()
	var b [16 + 2 + 8 + 8]byte
	copy(b[:], a[:])
	le.PutUint16(b[16:], from.Port())
	le.PutUint64(b[18:], nonce)
	le.PutUint64(b[26:], epoch)
	mac.Write(b[:])
	var c [netcore.CookieLen]byte
	copy(c[:], mac.Sum(nil))
	return c
}

func (s *Session) cookieOK(now time.Duration, from netip.AddrPort, nonce uint64, c [netcore.CookieLen]byte) bool {
	e := s.epoch(now)
	for _, ep := range []uint64{e, e - 1} {
		want := s.cookieFor(from, nonce, ep)
		if hmac.Equal(want[:], c[:]) {
			return true
		}
	}
	return false
}

func (s *Session) refuse(to netip.AddrPort, nonce uint64, why netcore.RefuseReason) {
	if err := s.ep.SendHandshake(to, netcore.Refuse{Nonce: nonce, Reason: why}); err != nil {
		s.log.Debug("refusal not sent", "to", to, "err", err)
	}
}

func (s *Session) onResponse(now time.Duration, from netip.AddrPort, m netcore.Response) {
	if s.role != RoleHost || s.quitting {
		s.rejected.Handshake++
		return
	}
	if !s.cookieOK(now, from, m.Nonce, m.Cookie) {
		// A Refuse is smaller than any Response, so answering an
		// unverified source cannot amplify.
		s.rejected.Handshake++
		s.refuse(from, m.Nonce, netcore.RefuseBadCookie)
		return
	}
	// From here on the source is verified: it received our Challenge.
	for _, o := range s.members {
		if o.ID == s.self || o.removed || o.Addr != from {
			continue
		}
		if o.nonce == m.Nonce {
			s.welcome(from, o) // our Welcome was lost: the same answer again
			return
		}
		if s.started {
			s.refuse(from, m.Nonce, netcore.RefuseStarted)
			return
		}
		// The same address with a new attempt: the old process is gone.
		s.log.Info("machine restarted at the same address", "player", o.Name, "addr", from)
		s.dropMember(now, o, "restarted")
	}
	observer := m.Role == netcore.RoleObserver
	switch {
	case s.started:
		s.refuse(from, m.Nonce, netcore.RefuseStarted)
		return
	case checkName(m.Name) != nil:
		s.refuse(from, m.Nonce, RefuseBadName)
		return
	case s.nameTaken(m.Name):
		s.refuse(from, m.Nonce, RefuseNameTaken)
		return
	case !observer && s.seated() >= s.need, observer && s.observers() >= maxObservers,
		s.nextID == netcore.PeerUnassigned:
		s.refuse(from, m.Nonce, netcore.RefuseFull)
		return
	}
	id := s.nextID
	s.nextID++
	if err := s.ep.AddLink(now, id, from); err != nil {
		s.log.Warn("cannot open link", "addr", from, "err", err)
		return
	}
	nm := &member{Member: probe.Member{ID: id, Name: m.Name, Addr: from, Observer: observer},
		linked: true, lastHeard: now, nonce: m.Nonce}
	s.addMember(nm)
	s.welcome(from, nm)
	what := "joined"
	if observer {
		what = "is watching"
	}
	s.message(fmt.Sprintf("%s %s (%d of %d players seated)", m.Name, what, s.seated(), s.need))
	s.log.Info("joined", "player", m.Name, "id", id, "addr", from, "observer", observer)
	s.rosterChanged(now)
}

func (s *Session) welcome(to netip.AddrPort, m *member) {
	if err := s.ep.SendHandshake(to, netcore.Welcome{Nonce: m.nonce, Peer: m.ID, Token: s.token}); err != nil {
		s.log.Debug("welcome not sent", "to", to, "err", err)
	}
}

func (s *Session) nameTaken(name string) bool {
	for _, m := range s.members {
		if !m.removed && strings.EqualFold(m.Name, name) {
			return true
		}
	}
	return false
}

func (s *Session) seated() int {
	n := 0
	for _, m := range s.members {
		if !m.Observer && !m.removed {
			n++
		}
	}
	return n
}

func (s *Session) observers() int {
	n := 0
	for _, m := range s.members {
		if m.Observer && !m.removed {
			n++
		}
	}
	return n
}

// welcomed: the joiner has its place in the session.
func (s *Session) welcomed(now time.Duration, w netcore.Welcome) {
	if err := s.ep.Rebind(w.Peer, w.Token); err != nil {
		s.fail(fmt.Errorf("live: cannot take the session's identity: %w", err))
		return
	}
	s.join = joinWelcomed
	s.self, s.token = w.Peer, w.Token
	host := &member{Member: probe.Member{ID: HostID, Addr: s.hostAddr}, lastHeard: now}
	s.addMember(host)
	if err := s.ep.AddLink(now, HostID, s.hostAddr); err != nil {
		s.fail(err)
		return
	}
	host.linked = true
	s.nextPing = now
	s.log.Info("welcomed", "id", w.Peer, "session", s.SessionName())
	s.message(fmt.Sprintf("Joined session %s as %s", s.SessionName(), s.cfg.Name))
}

// ---- roster ----

// rosterChanged: the host's roster has a new version; tell everyone.
func (s *Session) rosterChanged(now time.Duration) {
	s.version++
	s.emitRoster()
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed {
			s.sendRoster(now, m)
		}
	}
}

func (s *Session) currentRoster() roster {
	r := roster{Version: s.version, Need: uint16(s.need), Speed: uint16(s.speed), DropTimeout: s.dropTimeout}
	for _, m := range s.members {
		if m.removed {
			continue
		}
		e := rosterEntry{ID: m.ID, Observer: m.Observer, Name: m.Name, Addr: m.Addr}
		if m.ID == s.self {
			e.Addr = netip.AddrPort{} // "the sender": each member knows where it reaches the host
		}
		r.Members = append(r.Members, e)
	}
	return r
}

func (s *Session) sendRoster(now time.Duration, m *member) {
	s.buf = appendRoster(s.buf[:0], s.currentRoster())
	if err := s.ep.Send(now, m.ID, netcore.ChannelGlobal, s.buf); err != nil {
		s.log.Debug("roster not sent", "to", m.Name, "err", err)
	}
	m.rosterSent = now
}

// applyRoster: a member takes the host's roster.
func (s *Session) applyRoster(now time.Duration, r roster) {
	if r.Version <= s.version || s.started {
		return
	}
	var self *rosterEntry
	for i := range r.Members {
		if r.Members[i].ID == s.self {
			self = &r.Members[i]
		}
	}
	if self == nil {
		s.fail(ErrDropped)
		return
	}
	if r.Members[0].ID != HostID {
		s.rejected.Lobby++
		return
	}
	keep := map[netcore.PeerID]bool{}
	var list []*member
	for _, e := range r.Members {
		addr := e.Addr
		if !addr.IsValid() {
			addr = s.hostAddr
		} else if addr.Addr().IsLoopback() && !s.hostAddr.Addr().IsLoopback() {
			// The host saw this member on its own loopback: from here it
			// is at the host's address.
			addr = netip.AddrPortFrom(s.hostAddr.Addr(), addr.Port())
		}
		m := s.byID[e.ID]
		if m == nil {
			m = &member{lastHeard: now}
		}
		m.Member = probe.Member{ID: e.ID, Name: e.Name, Addr: addr, Observer: e.Observer}
		keep[e.ID] = true
		list = append(list, m)
		// Every player links to every other machine; an observer only to
		// the players (T1: one private link per pair that has traffic).
		want := e.ID != s.self && (s.role != RoleObserver || !e.Observer)
		switch {
		case want && !m.linked:
			if err := s.ep.AddLink(now, e.ID, addr); err != nil {
				s.log.Warn("cannot open link", "peer", e.Name, "err", err)
				continue
			}
			m.linked, m.heard, m.lastHeard = true, false, now
		case want && m.linked:
			_ = s.ep.AddLink(now, e.ID, addr) // moves it if the address changed
		case !want && m.linked:
			s.ep.RemoveLink(e.ID)
			m.linked = false
		}
	}
	for _, m := range s.members {
		if !keep[m.ID] && m.linked {
			s.ep.RemoveLink(m.ID)
			s.message(m.Name + " left the lobby")
		}
	}
	for _, m := range list {
		if m.ID != s.self && s.byID[m.ID] == nil {
			s.message(m.Name + " is in the session")
		}
	}
	s.members = list
	s.byID = map[netcore.PeerID]*member{}
	for _, m := range list {
		s.byID[m.ID] = m
	}
	s.version = r.Version
	s.need = int(r.Need)
	s.speed = int(r.Speed)
	s.dropTimeout = r.DropTimeout
	s.emitRoster()
	s.nextPing = now // tell the host at once
	if s.pendingStart == s.version {
		s.startWanted = true
	}
}

func (s *Session) emitRoster() {
	ev := &probe.RosterEvent{Header: probe.Header{Type: "roster", Frame: s.Frame()}, Version: s.version, Need: s.need,
		Players: []string{}, Observers: []string{}}
	for _, m := range s.members {
		if m.removed {
			continue
		}
		if m.Observer {
			ev.Observers = append(ev.Observers, m.Name)
		} else {
			ev.Players = append(ev.Players, m.Name)
		}
	}
	s.emit(ev)
}

// ---- lobby messages ----

// deliver is the endpoint's DeliverFunc: lobby messages to the session,
// frame packets to the peer (held until the game starts here).
func (s *Session) deliver(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
	m := s.byID[from]
	if m == nil {
		return
	}
	m.heard, m.lastHeard = true, now
	if len(msg) > 0 && isLobbyKind(msg[0]) {
		s.lobbyMessage(now, m, ch, msg)
		return
	}
	switch {
	case s.peer != nil:
		s.peer.Deliver(now, from, ch, msg)
	case len(s.buffered) < maxBuffered:
		s.buffered = append(s.buffered, held{from: from, ch: ch, msg: slices.Clone(msg)})
	default:
		s.log.Warn("frame packet dropped before the start: too many held", "from", m.Name)
	}
}

func (s *Session) lobbyMessage(now time.Duration, m *member, ch netcore.Channel, msg []byte) {
	fromHost := m.ID == HostID && s.role != RoleHost
	switch msg[0] {
	case kindRoster:
		r, err := decodeRoster(msg)
		if err != nil || !fromHost {
			s.badLobby(m, err)
			return
		}
		s.applyRoster(now, r)
	case kindPing:
		pg, err := decodePing(msg)
		if err != nil {
			s.badLobby(m, err)
			return
		}
		if s.role == RoleHost {
			s.hostPing(now, m, pg)
		}
	case kindStart:
		v, err := decodeStart(msg)
		if err != nil || !fromHost {
			s.badLobby(m, err)
			return
		}
		if s.started {
			return
		}
		if v == s.version {
			s.startWanted = true
		} else {
			s.pendingStart = v
		}
	case kindLeave:
		if err := decodeBare(msg, kindLeave); err != nil {
			s.badLobby(m, err)
			return
		}
		s.onLeave(now, m)
	case kindAlive:
		if err := decodeBare(msg, kindAlive); err != nil {
			s.badLobby(m, err)
		}
		// lastHeard is all it is for.
	}
}

func (s *Session) badLobby(m *member, err error) {
	s.rejected.Lobby++
	s.log.Debug("lobby message refused", "from", m.Name, "err", err)
}

// hostPing: a member's lobby state.
func (s *Session) hostPing(now time.Duration, m *member, pg ping) {
	m.version, m.ready, m.started = pg.Version, pg.Ready, pg.Started
	if pg.Version < s.version && now-m.rosterSent >= rosterResend {
		s.sendRoster(now, m)
	}
	if s.started && !pg.Started && pg.Version == s.version && now-m.startSent >= rosterResend {
		s.sendStart(now, m)
	}
}

func (s *Session) onLeave(now time.Duration, m *member) {
	switch {
	case m.ID == HostID && !s.started && s.role != RoleHost:
		s.fail(ErrHostLeft)
	case s.role == RoleHost && !s.started:
		s.dropMember(now, m, "left")
	case s.started && m.Observer:
		s.forgetObserver(m, "stopped watching")
	}
	// A player leaving a running game sends its removal (S7); its leave
	// adds nothing.
}

// dropMember: the host takes a member out of the lobby.
func (s *Session) dropMember(now time.Duration, m *member, why string) {
	if m.removed {
		return
	}
	m.removed = true
	if m.linked {
		s.ep.RemoveLink(m.ID)
		m.linked = false
	}
	s.members = slices.DeleteFunc(s.members, func(x *member) bool { return x == m })
	delete(s.byID, m.ID)
	s.message(fmt.Sprintf("%s %s (%d of %d players seated)", m.Name, why, s.seated(), s.need))
	s.log.Info("left the lobby", "player", m.Name, "why", why)
	s.rosterChanged(now)
}

func (s *Session) forgetObserver(m *member, why string) {
	if m.removed {
		return
	}
	m.removed = true
	if s.peer != nil {
		s.peer.ForgetObserver(m.ID)
	} else if m.linked {
		s.ep.RemoveLink(m.ID)
	}
	m.linked = false
	s.message(m.Name + " " + why)
}

func (s *Session) sendPings(now time.Duration) {
	s.buf = appendPing(s.buf[:0], ping{Version: s.version, Ready: s.ready(), Started: s.started})
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed {
			_ = s.ep.Send(now, m.ID, netcore.ChannelUnreliable, s.buf)
		}
	}
}

func (s *Session) sendToPlayers(now time.Duration, ch netcore.Channel, msg []byte) {
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed && !m.Observer {
			_ = s.ep.Send(now, m.ID, ch, msg)
		}
	}
}

// ready: this machine holds a roster and has heard from every machine of
// it that it links to, so its links carry traffic both ways.
func (s *Session) ready() bool {
	if s.version == 0 {
		return false
	}
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed && !m.heard {
			return false
		}
	}
	return true
}

// allReady (host): enough players are seated and every machine holds the
// newest roster and is ready — "every player is ready" of T5.
func (s *Session) allReady() bool {
	if s.seated() < s.need || !s.ready() {
		return false
	}
	for _, m := range s.members {
		if m.ID != s.self && !m.removed && (m.version != s.version || !m.ready) {
			return false
		}
	}
	return true
}

// StartNow starts the game with whoever is seated (a host's key in the
// TUI). Machines still behind on the roster start when it reaches them.
func (s *Session) StartNow(now time.Duration) {
	if s.role != RoleHost || s.started || s.done || s.quitting {
		return
	}
	s.hostStart(now)
	s.flush()
}

func (s *Session) hostStart(now time.Duration) {
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed {
			s.sendStart(now, m)
		}
	}
	s.startGame(now)
}

func (s *Session) sendStart(now time.Duration, m *member) {
	s.buf = appendStart(s.buf[:0], s.version)
	if err := s.ep.Send(now, m.ID, netcore.ChannelGlobal, s.buf); err != nil {
		s.log.Debug("start not sent", "to", m.Name, "err", err)
	}
	m.startSent = now
}

// startGame builds the peer on the roster in force and starts it: every
// player is ready, so measurement starts over (T5).
func (s *Session) startGame(now time.Duration) {
	if s.started || s.done {
		return
	}
	var list []probe.Member
	var players, watchers []string
	for _, m := range s.members {
		if m.removed {
			continue
		}
		list = append(list, m.Member)
		if m.Observer {
			watchers = append(watchers, m.Name)
		} else {
			players = append(players, m.Name)
		}
	}
	cfg := probe.Config{
		Self: s.self, Roster: list, Speed: s.speed, DropTimeout: s.dropTimeout,
		Timing: rungs.StartTiming(), CommandsPerMinute: s.cfg.CommandsPerMinute, Seed: s.cfg.Seed,
		Sink: probe.SinkFunc(s.peerEvent), Logger: s.log, OnFrame: s.cfg.OnFrame, OnCommand: s.cfg.OnCommand,
		// Every player streams its links to everyone: anyone can draw
		// the admin's matrix and print every pair's link lines (issue 7).
		Telemetry: true,
	}
	if to := s.cfg.TelemetryTo; to != nil {
		cfg.TelemetryTo = func(m probe.Member) bool { return slices.Contains(to, m.Name) }
	}
	if s.role == RoleObserver {
		cfg.CommandsPerMinute = 0
	}
	peer, err := probe.NewPeerOn(cfg, s.ep)
	if err != nil {
		s.fail(fmt.Errorf("live: cannot start the game: %w", err))
		return
	}
	s.peer = peer
	s.started = true
	text := "The game starts: " + strings.Join(players, ", ")
	if len(watchers) > 0 {
		text += " (watching: " + strings.Join(watchers, ", ") + ")"
	}
	s.message(text)
	s.log.Info("game starts", "players", players, "observers", watchers, "roster", s.version)
	peer.Start(now)
	for _, h := range s.buffered {
		peer.Deliver(now, h.from, h.ch, h.msg)
	}
	s.buffered = nil
	peer.Tick(now)
	s.nextAlive = now
	if s.quitting {
		s.peer.Quit(now)
	}
}

// checkSilence: machines silent too long leave the lobby; observers silent
// past the drop timeout are forgotten once the game runs (players are the
// peer's to remove, with a removal event).
func (s *Session) checkSilence(now time.Duration) {
	lobbyLimit := min(s.dropTimeout, maxLobbySilence)
	if lobbyLimit <= 0 {
		lobbyLimit = maxLobbySilence
	}
	switch {
	case s.role == RoleHost && !s.started:
		for _, m := range slices.Clone(s.members) {
			if m.ID != s.self && !m.removed && now-m.lastHeard > lobbyLimit {
				s.dropMember(now, m, "went silent")
			}
		}
	case s.role != RoleHost && s.join == joinWelcomed && !s.started:
		if h := s.byID[HostID]; h != nil && now-h.lastHeard > lobbyLimit {
			s.fail(ErrLostHost)
		}
	case s.started && s.role != RoleObserver:
		for _, m := range s.members {
			if m.Observer && !m.removed && now-m.lastHeard > s.dropTimeout {
				s.forgetObserver(m, "went silent")
			}
		}
	}
}

// ---- leaving ----

// Quit leaves the session cleanly: a player in a running game issues its
// removal (S7) and waits for it to execute; anyone else says it is leaving.
// The session is Done once that is through, or after quitLimit at most.
func (s *Session) Quit(now time.Duration) {
	if s.done || s.quitting {
		return
	}
	s.quitting = true
	s.quitAt = now
	switch {
	case s.join == joinHello || s.join == joinResponse:
		s.finish(nil)
	case s.started && s.role != RoleObserver:
		s.peer.Quit(now)
	default:
		for _, m := range s.members {
			if m.ID != s.self && m.linked && !m.removed {
				_ = s.ep.Send(now, m.ID, netcore.ChannelGlobal, []byte{kindLeave})
			}
		}
		if s.peer != nil {
			s.peer.Quit(now)
		}
		s.linger(now)
	}
	s.after(now)
}

func (s *Session) linger(now time.Duration) {
	if !s.lingering {
		s.lingering = true
		s.lingerEnd = now + quitLinger
	}
}

func (s *Session) checkQuit(now time.Duration) {
	if s.done {
		return
	}
	if now >= s.quitAt+quitLimit {
		s.finish(nil)
		return
	}
	if s.peer != nil && !s.peer.Done() {
		return
	}
	s.linger(now)
	if now >= s.lingerEnd || s.settled() {
		s.finish(nil)
	}
}

// settled: nothing this machine sent reliably is still waiting for an ack.
func (s *Session) settled() bool {
	for _, id := range s.ep.Peers(nil) {
		if st, ok := s.ep.Stats(id); ok && (st.InFlight > 0 || st.Backlog > 0 || st.GlobalInFlight > 0) {
			return false
		}
	}
	return true
}

func (s *Session) fail(err error) {
	s.log.Warn("session ends", "err", err)
	s.finish(err)
}

func (s *Session) finish(err error) {
	if s.done {
		return
	}
	s.done, s.err = true, err
	s.flush()
}

// ---- reading ----

// SetSpeed asks for a new game speed (S17) once the game runs.
func (s *Session) SetSpeed(fps int) {
	if s.peer != nil {
		s.peer.SetSpeed(fps)
	}
}

// Rejected is every datagram and message this machine refused: netcore's
// counts (token, sender, malformed, auth, replay, oversize, window), the
// session's (handshake, lobby) and the peer's undecodable frame packets.
func (s *Session) Rejected() probe.RejectedCounts {
	r := s.ep.Rejected()
	c := probe.RejectedCounts{Token: r.Token, Sender: r.Sender, Malformed: r.Malformed, Auth: r.Auth,
		Replay: r.Replay, Oversize: r.Oversize, Window: r.Window,
		Handshake: s.rejected.Handshake, Lobby: s.rejected.Lobby}
	if s.peer != nil {
		c.Frame = s.peer.BadPackets()
	}
	c.Sum()
	return c
}

// Links lists this machine's links, in house order.
func (s *Session) Links() []probe.LinkStat {
	if s.peer != nil {
		return s.peer.Links()
	}
	var out []probe.LinkStat
	for _, m := range s.members {
		if m.ID == s.self || !m.linked {
			continue
		}
		if st, ok := s.ep.Stats(m.ID); ok {
			out = append(out, probe.NewLinkStat(s.cfg.Name, m.Name, st))
		}
	}
	return out
}

// KnownLinks lists every directed link this machine knows at now: its own
// and, once the game runs, every other player's from its telemetry (the
// `link` lines of issue 7).
func (s *Session) KnownLinks(now time.Duration) []probe.LinkStat {
	if s.peer != nil {
		return s.peer.KnownLinks(now)
	}
	return s.Links()
}

// Summary is this machine's summary line: every link it had (those that
// ended as they stood when they ended), its own waits (a player's), and
// what it rejected.
func (s *Session) Summary() *probe.SummaryEvent {
	sum := &probe.SummaryEvent{Header: probe.Header{Type: "summary", Frame: s.Frame()},
		Links: append([]probe.LinkStat{}, s.Links()...), Players: []probe.PlayerSummary{}}
	if s.peer != nil {
		sum.Links = append(sum.Links, s.peer.RetiredLinks()...)
	}
	if s.peer != nil && !s.peer.Observer() {
		sum.Players = append(sum.Players, s.peer.Summary())
	}
	r := s.Rejected()
	sum.Rejected = &r
	return sum
}

// View is the picture front ends draw: the peer's once the game runs, a
// lobby picture before.
func (s *Session) View(now time.Duration) probe.View {
	var v probe.View
	if s.peer != nil {
		v = s.peer.View(now)
	} else {
		st := rungs.StartTiming()
		v = probe.View{At: now, Self: s.cfg.Name, FPS: s.speed, Speed: s.speed, InForce: st, Target: st}
		for _, m := range s.members {
			if m.removed {
				continue
			}
			v.Players = append(v.Players, probe.PlayerView{Name: m.Name, Observer: m.Observer,
				Master: m.ID == HostID, Self: m.ID == s.self})
			if m.ID == HostID {
				v.Master = m.Name
			}
			if m.ID == s.self || !m.linked {
				continue
			}
			if ls, ok := s.ep.Stats(m.ID); ok {
				v.Links = append(v.Links, probe.LinkView{LinkStat: probe.NewLinkStat(s.cfg.Name, m.Name, ls),
					Peer: m.Name, Observer: m.Observer, Bad: ls.State == netcore.Bad})
			}
		}
		v.Totals = probe.TotalsOf(s.ep.Totals())
	}
	v.Session = s.SessionName()
	if !s.started {
		v.Lobby = &probe.LobbyView{Need: s.need, Seated: s.seated(), Observers: s.observers(), Joining: s.join == joinHello || s.join == joinResponse}
	}
	return v
}

// ---- events ----

func (s *Session) message(text string) {
	s.emit(&probe.MessageEvent{Header: probe.Header{Type: "message", Frame: s.Frame()}, Text: text, Player: s.cfg.Name})
}

func (s *Session) emit(e probe.Event) { s.events = append(s.events, e) }

// peerEvent is the peer's sink. A live machine reports only stalls of at
// least one frame time (CONTRACTS.md: shorter waits are the wall clock's
// ordinary jitter, not lag).
func (s *Session) peerEvent(from string, e probe.Event) {
	if st, ok := e.(*probe.StallEvent); ok && s.peer != nil && st.WaitMs < 1000/float64(s.peer.FPS()) {
		return
	}
	if r, ok := e.(*probe.RemovedEvent); ok {
		for _, m := range s.members {
			if m.Name == r.Player && !m.Observer {
				m.removed = true
				m.linked = false
			}
		}
	}
	s.cfg.Sink.Emit(from, e)
}

func (s *Session) flush() {
	for _, e := range s.events {
		s.cfg.Sink.Emit(s.cfg.Name, e)
	}
	clear(s.events)
	s.events = s.events[:0]
}
