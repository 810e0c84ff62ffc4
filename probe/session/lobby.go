package session

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/rungs"
)

// deliver is the endpoint's DeliverFunc: lobby messages to the session,
// frame packets to the peer (held until the game starts here).
func (s *Session) deliver(now time.Duration, from netcore.PeerID, ch netcore.Channel, msg []byte) {
	m := s.byID[from]
	if m == nil {
		return
	}
	m.heard, m.lastHeard = true, now
	if loadtest.IsMessage(msg) {
		if ch == netcore.ChannelControl {
			s.loadMessage(now, m, msg)
		}
		return
	}
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
	fromHost := m.ID == hostID && s.role != roleHost
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
		if s.role == roleHost {
			s.hostPing(now, m, pg)
		}
	case kindStart:
		v, err := decodeStart(msg)
		if err != nil || !fromHost {
			s.badLobby(m, err)
			return
		}
		if s.started || s.lateSelf {
			return // a late watcher follows from the host's snapshot
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
	case kindAddrs:
		addrs, err := decodeAddrs(msg)
		if err != nil || s.role != roleHost {
			s.badLobby(m, err)
			return
		}
		s.onAddrs(m, addrs)
	case kindPeers:
		list, err := decodePeers(msg)
		if err != nil || !fromHost {
			s.badLobby(m, err)
			return
		}
		s.onPeers(now, list)
	case kindPairs:
		list, err := decodePairs(msg)
		if err != nil || s.role != roleHost {
			s.badLobby(m, err)
			return
		}
		m.path.reports = list
	case kindPaths:
		pairs, err := decodePaths(msg)
		if err != nil || !fromHost {
			s.badLobby(m, err)
			return
		}
		s.nat.relayedPairs = pairs
	case kindLoadClaim, kindLoadGrant, kindLoadRetired, kindLoadNote, kindLoadWaits, kindLoadResult:
		s.onLoadLobby(now, m, msg)
	case kindWatch:
		w, err := decodeWatch(msg)
		if err != nil || !(fromHost || s.fromMaster(m)) {
			s.badLobby(m, err)
			return
		}
		s.onWatch(now, w)
	}
}

// fromMaster: m is the master this machine's game names, which feeds the
// late watchers once the host is gone (watch.go).
func (s *Session) fromMaster(m *member) bool {
	if s.peer == nil {
		return false
	}
	id, ok := s.peer.MasterID()
	return ok && id == m.ID && m.ID != s.self
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
	if s.started && !m.late && !pg.Started && pg.Version == s.version && now-m.startSent >= rosterResend {
		s.sendStart(now, m)
	}
}

func (s *Session) sendPings(now time.Duration) {
	s.buf = appendPing(s.buf[:0], ping{Version: s.version, Ready: s.ready(), Started: s.started})
	for _, m := range s.members {
		// A peer whose address was just primed gets no ping for the
		// prime's hold (punch.go): a full-size datagram there before the
		// peer's own primes leave would make its masquerade-only router
		// keep a clashing entry. Pings repeat, so it has the next one.
		if m.ID != s.self && m.linked && !m.removed && !s.primeHeld(now, m) {
			_ = s.ep.SendUnnumbered(now, m.ID, s.buf, false)
		}
	}
}

func (s *Session) sendToPlayers(now time.Duration, msg []byte) {
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed && !m.Observer {
			_ = s.ep.SendUnnumbered(now, m.ID, msg, true)
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
	if s.seated() < s.need || s.observers() < s.cfg.Observers || !s.ready() {
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
	if s.role != roleHost || s.started || s.done || s.quitting {
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
		Sink: feed.SinkFunc(s.peerEvent), Logger: s.log, OnFrame: s.cfg.OnFrame, OnCommand: s.cfg.OnCommand,
		Alerts:     s.cfg.Alerts,
		FrameClock: s.cfg.FrameClock,
		// Every player streams its links to everyone: anyone can draw
		// the admin's matrix and print every pair's link lines.
		Telemetry: !s.cfg.NoTelemetry, ProcessTime: s.cfg.ProcessTime, LinkEvery: s.cfg.LinkEvery,
		// Live sessions spare a stalled machine's state to machines that
		// hold all its commands; the simulator, which turns
		// telemetry off to print the game's traffic as before, keeps
		// the old status traffic too.
		SparseStatus: !s.cfg.NoTelemetry,
		FillMatrix:   s.cfg.FillMatrix,
		GameClock:    s.cfg.Virtual,
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
	s.started, s.startedAt = true, now
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

// checkSilence: machines silent too long leave the lobby (watchers after
// watchSilence); observers silent past the drop timeout are forgotten once
// the game runs, those heard once already after watchSilence
// (dropSilentWatchers; players are the peer's to remove, with a removal
// event).
func (s *Session) checkSilence(now time.Duration) {
	lobbyLimit := min(s.dropTimeout, maxLobbySilence)
	if lobbyLimit <= 0 {
		lobbyLimit = maxLobbySilence
	}
	switch {
	case s.role == roleHost && !s.started:
		for _, m := range slices.Clone(s.members) {
			limit := lobbyLimit
			if m.Observer {
				// A watcher pings every half second in the lobby too:
				// silent for watchSilence, it is gone (watchbudget.go).
				limit = min(limit, watchSilence)
			}
			if m.ID != s.self && !m.removed && now-m.lastHeard > limit {
				s.dropMember(now, m, "went silent")
			}
		}
	case s.role != roleHost && s.join == joinWelcomed && !s.started:
		if h := s.byID[hostID]; h != nil && now-h.lastHeard > lobbyLimit {
			s.fail(errLostHost)
		}
	case s.started && s.role != RoleObserver:
		for _, m := range s.members {
			limit := s.dropTimeout
			if !m.heard {
				// Watchers arriving together are let in as the host's
				// budget for them refills: one may get its roster, and
				// link to this machine, some seconds after this machine
				// learnt of it.
				limit = max(limit, unheardWatcherLimit)
			}
			if m.Observer && !m.removed && now-m.lastHeard > limit {
				s.forgetObserver(m, "went silent")
			}
		}
	}
}
