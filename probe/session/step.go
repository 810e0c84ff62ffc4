package session

import (
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
)

// A Session is what both drivers run: probe/live's Runner on the wall
// clock, simnet.Driver in virtual time.
var _ netcore.Machine = (*Session)(nil)

// Receive hands the session one datagram from the network.
func (s *Session) Receive(now time.Duration, from netip.AddrPort, datagram []byte) {
	if s.done {
		return
	}
	s.wb.now = now // the time of the sends that follow (watchbudget.go)
	s.budget.datagram(len(datagram))
	if len(datagram) >= 2 && datagram[0] == netcore.Magic0 && datagram[1] != netcore.Magic1 {
		switch datagram[1] {
		case punchMagic1:
			s.onCheck(now, from, datagram)
		case relayMagic1:
			s.onRelayFrame(now, from, datagram)
		default:
			s.ep.Receive(now, from, datagram) // counted as malformed there
		}
		s.after(now)
		return
	}
	if s.runsPeer() {
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
	s.wb.now = now
	if !s.began {
		s.began, s.beganAt = true, now
		s.joinUntil = now + joinTimeout
		s.nextCheck = now + time.Second
	}
	s.syncTrace() // before the endpoint's Tick, which sends the probes due
	if s.runsPeer() {
		s.peer.Tick(now)
	} else {
		s.ep.Tick(now)
	}
	if s.join == joinHello || s.join == joinResponse {
		s.tickJoin(now)
	}
	if s.inLobby() || s.started {
		s.tickPunch(now)
	}
	if !s.started && s.inLobby() && now >= s.nextPing {
		s.sendPings(now)
		s.nextPing = now + pingEvery
	}
	if s.started && !s.quitting && now >= s.nextAlive {
		s.nextAlive = now + aliveEvery
		if s.role == RoleObserver {
			s.sendToPlayers(now, []byte{kindAlive})
		} else if id, since, ok := s.peer.WaitingFor(); ok && now-since >= stallAlive {
			// A stalled machine sends no frame packets that ask for an
			// ack, so a player that vanished would leave nothing unacked
			// and its link would never show bad (T11). One reliable
			// keep-alive a second to the player we wait for does.
			_ = s.ep.SendUnnumbered(now, id, []byte{kindAlive}, true)
		}
	}
	s.tickWatch(now)
	s.tickLoad(now)
	if now >= s.nextCheck {
		s.checkSilence(now)
		s.checkUnconnected(now)
		s.nextCheck = now + time.Second
	}
	s.after(now)
}

// FrameDue is when the game's next frame is due, while it runs frames and
// waits for no other machine (probe.Peer.FrameDue).
func (s *Session) FrameDue() (time.Duration, bool) {
	if s.peer == nil || s.done {
		return 0, false
	}
	return s.peer.FrameDue()
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
	if t, has := s.punchDeadline(); has && !s.quitting {
		take(t)
	}
	if t, has := s.watchDeadline(); has && !s.quitting {
		take(t)
	}
	if t, has := s.loadDeadline(); has {
		take(t)
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
	return !s.started && (s.role == roleHost || s.join == joinWelcomed)
}

// after runs once an input has been handled: a start decided during it,
// the host's start rule, a quit that has finished.
func (s *Session) after(now time.Duration) {
	if s.startWanted {
		s.startWanted = false
		s.startGame(now)
	}
	if s.role == roleHost && !s.started && !s.quitting && s.allReady() {
		s.hostStart(now)
	}
	if s.peer != nil && !s.askedSpeed && s.role == RolePlayer && s.cfg.Speed != 0 && s.cfg.Speed != s.speed {
		s.askedSpeed = true
		s.peer.SetSpeed(s.cfg.Speed)
	}
	if (s.inLobby() || s.started) && !s.quitting && !s.done {
		// After the start too: a late watcher's pairs punch (watch.go).
		s.sendAddrs(now)
		s.sendTables(now)
		if s.inLobby() && s.join == joinWelcomed {
			s.sendPairs(now)
		}
	}
	if len(s.watch.pending) > 0 && !s.done {
		s.flushWatch(now)
	}
	if !s.quitting && !s.done {
		s.sendPaths(now)
	}
	if !s.done {
		s.tickWatchBudget(now)
	}
	if s.quitting {
		s.checkQuit(now)
	}
	s.flush()
}

// SetSink sends the session's events to k from now on (a driver's
// collector). Only the session's owner calls it, before it drives.
func (s *Session) SetSink(k feed.Sink) { s.cfg.Sink = k }

// Flush hands the events still pending to the sink: the constructor's
// (the session line), which no Receive or Tick has carried out yet.
func (s *Session) Flush() { s.flush() }

// End ends the session from outside with err (its socket closed under it).
func (s *Session) End(err error) { s.finish(err) }
