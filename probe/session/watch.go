package session

// Late watchers: an observer that arrives after the start. It
// cannot run the lockstep — it lacks the game's state — so the host hands
// it a snapshot of the game (kindWatch with the snapshot flag: frame,
// timing in force and target, master, report record, recent messages) and
// keeps it current with an update every watchEvery and at once whenever
// its own peer publishes a network event (a timing change, a new master, a
// removal, a report, a message), each with the frame it executed on. The
// players take the watcher into their peers (probe.Peer.AddObserver), link
// to it and stream it their telemetry, so its Matrix fills in from the
// players' updates like any machine's; its own links are measured by its
// keep-alives. Players still join only in the lobby.

import (
	"fmt"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/rungs"
)

const (
	// watchEvery paces the host's updates to late watchers when nothing
	// happens: the frame moves on and reports are in the record. A report
	// interval is 128 frames (over 4 s at 30 fps); a second keeps the
	// frame a watcher shows at most a second old.
	watchEvery = time.Second
	// watchRecent is how many recent messages a snapshot carries.
	watchRecent = 20
	// maxWatchPending bounds the events waiting for the next update; an
	// update goes after every input, so it is never near.
	maxWatchPending = 1024
)

// watchState is the host's side: what it has for its late watchers.
type watchState struct {
	recent  []probe.WatchEvent // the last watchRecent messages
	pending []probe.WatchEvent // network events since the last update
	next    time.Duration      // next update when nothing happens
	any     bool               // some late watcher is linked

	// the late watcher's side
	held []watchMsg // updates that came before this machine could start
}

// anyLate (host): a late watcher is still in the session.
func (s *Session) anyLate() bool {
	for _, m := range s.members {
		if m.late && !m.removed && m.linked {
			return true
		}
	}
	return false
}

// noteWatch (host): one network event for the late watchers.
func (s *Session) noteWatch(w probe.WatchEvent) {
	if s.role != roleHost {
		return
	}
	if w.Kind == probe.WatchMessage {
		s.watch.recent = append(s.watch.recent, w)
		if len(s.watch.recent) > watchRecent {
			s.watch.recent = slices.Delete(s.watch.recent, 0, len(s.watch.recent)-watchRecent)
		}
	}
	if s.watch.any && len(s.watch.pending) < maxWatchPending {
		s.watch.pending = append(s.watch.pending, w)
	}
}

// admitLate (host): an observer arrives after the start. Its link is open;
// the peer takes it in, everyone gets the roster, it gets the snapshot.
func (s *Session) admitLate(now time.Duration, m *member) {
	s.flushWatch(now) // the watchers already here get what came before
	if err := s.peer.AddObserver(now, m.Member); err != nil {
		s.log.Warn("cannot take the watcher in", "watcher", m.Name, "err", err)
	}
	s.watch.any = true
	s.sendWatch(now, m, true)
	m.watching = true
}

// sendWatch (host): the state now, with the pending events or, for a
// snapshot, the recent messages.
func (s *Session) sendWatch(now time.Duration, m *member, snapshot bool) {
	st, ok := s.peer.WatchState()
	if !ok {
		return
	}
	w := watchMsg{Snapshot: snapshot, Version: s.version, State: st, Events: s.watch.pending}
	if snapshot {
		w.Events = s.watch.recent
	}
	s.buf = appendWatch(s.buf[:0], w)
	if err := s.ep.Send(now, m.ID, netcore.ChannelReliable, s.buf); err != nil {
		s.log.Debug("watch update not sent", "to", m.Name, "err", err)
	}
}

// flushWatch (host): every late watcher gets an update with the pending
// events.
func (s *Session) flushWatch(now time.Duration) {
	if s.role != roleHost || s.peer == nil {
		return
	}
	s.watch.any = s.anyLate()
	if !s.watch.any {
		s.watch.pending = s.watch.pending[:0]
		return
	}
	for _, m := range s.members {
		if m.watching && !m.removed && m.linked {
			s.sendWatch(now, m, false)
		}
	}
	s.watch.pending = s.watch.pending[:0]
	s.watch.next = now + watchEvery
}

// tickWatch (host): the updates that are due.
func (s *Session) tickWatch(now time.Duration) {
	if s.role == roleHost && s.started && s.watch.any && (len(s.watch.pending) > 0 || now >= s.watch.next) {
		s.flushWatch(now)
	}
}

// watchDeadline (host): when the next update is due.
func (s *Session) watchDeadline() (time.Duration, bool) {
	return s.watch.next, s.role == roleHost && s.started && s.watch.any
}

// onWatch (a late watcher): the host's snapshot or an update.
func (s *Session) onWatch(now time.Duration, w watchMsg) {
	if s.role != RoleObserver {
		return
	}
	if s.peer != nil {
		if s.peer.Spectator() {
			s.peer.Follow(now, w.Events, w.State)
		}
		return
	}
	if s.started {
		return // an observer of the lobby runs the lockstep
	}
	if !w.Snapshot && len(s.watch.held) == 0 {
		return // an update without its snapshot first: cannot happen on a reliable channel
	}
	if len(s.watch.held) < maxBuffered {
		s.watch.held = append(s.watch.held, w)
	}
	s.startWatching(now)
}

// startWatching (a late watcher): the snapshot and a roster at least as new
// are both here: follow the game from them.
func (s *Session) startWatching(now time.Duration) {
	if s.started || s.done || len(s.watch.held) == 0 || s.version < s.watch.held[0].Version {
		return
	}
	snap := s.watch.held[0]
	var list []probe.Member
	for _, m := range s.members {
		if !m.removed {
			list = append(list, m.Member)
		}
	}
	cfg := probe.Config{
		Self: s.self, Roster: list, Speed: snap.State.Speed, DropTimeout: s.dropTimeout,
		Timing: rungs.StartTiming(), Seed: s.cfg.Seed,
		Sink: probe.SinkFunc(s.peerEvent), Logger: s.log, Alerts: s.cfg.Alerts,
		LinkEvery: s.cfg.LinkEvery, FillMatrix: s.cfg.FillMatrix,
	}
	peer, err := probe.NewSpectatorOn(now, cfg, s.ep, snap.State)
	if err != nil {
		s.fail(fmt.Errorf("live: cannot follow the game: %w", err))
		return
	}
	s.peer = peer
	s.started = true
	s.buffered = nil // frame packets: a spectator executes none
	s.message(fmt.Sprintf("Watching a game in progress from frame %d", snap.State.Frame))
	s.log.Info("watching a running game", "frame", snap.State.Frame, "roster", s.version)
	peer.Follow(now, snap.Events, snap.State) // the recent messages
	for _, w := range s.watch.held[1:] {
		peer.Follow(now, w.Events, w.State)
	}
	s.watch.held = nil
	s.nextAlive = now
	if s.quitting {
		s.peer.Quit(now)
	}
}

// rosterWhileRunning (a player or lobby observer): the host's roster after
// the start can only add late watchers; take them in.
func (s *Session) rosterWhileRunning(now time.Duration, r roster) {
	if r.Version <= s.version || s.peer == nil || s.peer.Spectator() {
		return
	}
	if len(r.Members) == 0 || r.Members[0].ID != hostID {
		s.rejected.Lobby++
		return
	}
	s.version = r.Version
	for _, e := range r.Members {
		if !e.Late || s.byID[e.ID] != nil || e.ID == s.self {
			continue
		}
		addr := s.seenFromHere(e.Addr)
		if !e.Addr.IsValid() {
			continue // only the host itself goes without an address
		}
		m := &member{Member: probe.Member{ID: e.ID, Name: e.Name, Addr: addr, Observer: true}, late: true, lastHeard: now}
		s.addMember(m)
		if err := s.peer.AddObserver(now, m.Member); err != nil {
			s.log.Warn("cannot take the watcher in", "watcher", e.Name, "err", err)
			continue
		}
		if s.role == RoleObserver {
			continue // observers do not link to each other
		}
		if err := s.ep.AddLink(now, e.ID, addr); err != nil {
			s.log.Warn("cannot open link", "peer", e.Name, "err", err)
			continue
		}
		m.linked, m.heard = true, false
		s.openPair(now, m)
		s.message(e.Name + " is watching")
	}
	s.emitRoster()
}
