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
//
// The feed survives the host: every player keeps the recent messages and
// network events, and when the host's removal makes one of them the
// master (S16), that player sends every late watcher it reaches directly
// an update at once and feeds them from then on. A watcher reached only
// through the host's relay cannot be fed without the host: it stops with
// a line that says so once no update has come for feedLimit. Admission of
// new machines ends with the host.

import (
	"fmt"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

const (
	// watchEvery paces the host's updates to late watchers when nothing
	// happens: the frame moves on and reports are in the record. A report
	// interval is 128 frames (over 4 s at 30 fps); a second keeps the
	// frame a watcher shows at most a second old.
	watchEvery = time.Second
	// roundPart is the part of the feeder's extra bucket its rounds of
	// updates may take; the rest is for snapshots and the relay.
	roundPart = 0.75
	// watchRecent is how many recent messages a snapshot carries.
	watchRecent = 20
	// maxWatchPending bounds the events waiting for the next update; an
	// update goes after every input, so it is never near.
	maxWatchPending = 1024
	// watchRecentNet is how many recent network events a player keeps,
	// for the first update it sends once it feeds the watchers in the
	// host's place: enough for the seconds between the host's last update
	// and its removal.
	watchRecentNet = 64
	// feedGrace is how long past the drop timeout a late watcher waits
	// for an update before it says the feed is lost: a vanished host is
	// removed only after the drop timeout, and the new master feeds from
	// then on.
	feedGrace = 10 * time.Second
)

// watchState is the host's side: what it has for its late watchers.
type watchState struct {
	recent  []probe.WatchEvent // the last watchRecent messages
	pending []probe.WatchEvent // network events since the last update
	// round is the update being handed out; roundLeft the watchers still
	// without it (flushWatch).
	round     []byte
	roundLeft []netcore.PeerID
	earliest  time.Duration // no new round before this, even with events pending
	next      time.Duration // next update when nothing happens
	any       bool          // some late watcher is linked
	// recentNet (players) are the last network events, for taking over
	// the feed; feeding (a player) is set once it feeds in the host's place.
	recentNet []probe.WatchEvent
	feeding   bool

	// the late watcher's side
	held []watchMsg // updates that came before this machine could start
	// followed is the frame of the last state followed: events of an
	// update older than it came with an earlier update already.
	followed int
	// lastUpdate is when the last update came.
	lastUpdate time.Duration
}

// feedsWatchers reports whether this machine feeds the late watchers: the
// host, or, once the host is removed, the player that is the master.
func (s *Session) feedsWatchers() bool {
	if s.role == roleHost {
		return true
	}
	if s.role == RoleObserver || s.peer == nil || s.peer.Spectator() {
		return false
	}
	if h := s.byID[hostID]; h != nil && !h.removed {
		return false
	}
	id, ok := s.peer.MasterID()
	return ok && id == s.self
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

// noteWatch (host and players): one network event for the late watchers,
// kept by every player for a feed it may take over.
func (s *Session) noteWatch(w probe.WatchEvent) {
	if s.role == RoleObserver {
		return
	}
	if s.role != roleHost {
		s.watch.recentNet = append(s.watch.recentNet, w)
		if len(s.watch.recentNet) > watchRecentNet {
			s.watch.recentNet = slices.Delete(s.watch.recentNet, 0, len(s.watch.recentNet)-watchRecentNet)
		}
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
// The snapshot waits its turn in the watchers' budget like every update
// (sendSnapshots), so that watchers arriving together are let in one by
// one as the budget allows, never sent one the budget would hold back.
func (s *Session) admitLate(now time.Duration, m *member) {
	s.flushWatch(now) // the watchers already here get what came before
	if err := s.peer.AddObserver(now, m.Member); err != nil {
		s.log.Warn("cannot take the watcher in", "watcher", m.Name, "err", err)
	}
	s.watch.any = true
	m.snapshotDue = true
	s.sendSnapshots(now)
}

// sendSnapshots (the feeder): the late watchers waiting for their
// snapshot get it, in the order they came, as long as the extra bucket
// holds each; the rest wait for the next tick.
func (s *Session) sendSnapshots(now time.Duration) {
	for _, m := range s.members {
		if !m.snapshotDue || m.removed || !m.linked {
			continue
		}
		st, ok := s.peer.WatchState()
		if !ok {
			return
		}
		s.buf = appendWatch(s.buf[:0], watchMsg{Snapshot: true, Version: s.version, State: st, Events: s.watch.recent})
		if !s.feedFits(now, len(s.buf)) {
			return
		}
		if err := s.ep.Send(now, m.ID, netcore.ChannelReliable, s.buf); err != nil {
			s.log.Debug("snapshot not sent", "to", m.Name, "err", err)
		}
		m.snapshotDue, m.watching = false, true
	}
}

// flushWatch (the feeder): every late watcher gets each update with the
// pending events, in turn, as the watchers' budget holds them
// (watchbudget.go): an update that the budget cannot give every watcher at
// once goes to the next ones as it refills, before the next update is
// made, so every watcher gets every event, in order.
func (s *Session) flushWatch(now time.Duration) {
	if s.peer == nil || !s.feedsWatchers() {
		return
	}
	s.watch.any = s.anyLate()
	if !s.watch.any {
		s.watch.pending = s.watch.pending[:0]
		s.watch.roundLeft = s.watch.roundLeft[:0]
		return
	}
	s.sendSnapshots(now)
	if !s.continueRound(now) {
		return
	}
	if len(s.watch.pending) == 0 && now < s.watch.next {
		return // nothing to tell yet
	}
	if now < s.watch.earliest {
		s.watch.next = s.watch.earliest // the last round's share of the bucket first
		return
	}
	st, ok := s.peer.WatchState()
	if !ok {
		return
	}
	s.watch.round = appendWatch(s.watch.round[:0], watchMsg{Version: s.version, State: st, Events: s.watch.pending})
	for _, m := range s.members {
		if m.watching && !m.removed && m.linked {
			s.watch.roundLeft = append(s.watch.roundLeft, m.ID)
		}
	}
	s.watch.pending = s.watch.pending[:0]
	// The next round waits until this one has had its share of the
	// bucket: as watchers are added, updates come less often and leave a
	// quarter of the bucket for the snapshots of those arriving.
	frags := (len(s.watch.round) + netcore.MaxDataPayload - 1) / netcore.MaxDataPayload
	cost := float64(len(s.watch.roundLeft) * (len(s.watch.round) + frags*(wireOverhead+s.sealOverhead())))
	spacing := time.Duration(cost / (roundPart * watchExtraRate) * float64(time.Second))
	s.watch.earliest = now + spacing
	s.watch.next = now + max(watchEvery, spacing)
	s.continueRound(now)
}

// continueRound sends the update being handed out to the watchers still
// without it while the extra bucket holds it, and reports whether all
// have it.
func (s *Session) continueRound(now time.Duration) bool {
	for len(s.watch.roundLeft) > 0 {
		m := s.byID[s.watch.roundLeft[0]]
		if m != nil && m.watching && !m.removed && m.linked {
			if !s.feedFits(now, len(s.watch.round)) {
				return false
			}
			if err := s.ep.Send(now, m.ID, netcore.ChannelReliable, s.watch.round); err != nil {
				s.log.Debug("watch update not sent", "to", m.Name, "err", err)
			}
		}
		s.watch.roundLeft = s.watch.roundLeft[1:]
	}
	return true
}

// tickWatch: the feeder's updates that are due; a player that has just
// become the feeder takes the watchers over; a late watcher whose feed has
// stopped says so.
func (s *Session) tickWatch(now time.Duration) {
	if s.role == RoleObserver {
		s.checkFeed(now)
		return
	}
	if !s.started || !s.feedsWatchers() {
		return
	}
	if s.role != roleHost && !s.watch.feeding {
		s.takeOverFeed(now)
	}
	if s.watch.any && (len(s.watch.pending) > 0 || now >= s.watch.next) {
		s.flushWatch(now)
	}
}

// takeOverFeed (the new master): the host is gone; every late watcher this
// machine reaches directly gets an update at once, with the recent network
// events (the watcher drops the ones it had from the host), and updates
// from then on. One reached only through the host's relay is left out.
func (s *Session) takeOverFeed(now time.Duration) {
	s.watch.feeding = true
	n := 0
	for _, m := range s.members {
		if !m.late || m.removed || !m.linked {
			continue
		}
		if _, relayed := relayPeer(m.Addr); relayed {
			continue
		}
		m.watching = true
		n++
	}
	if n == 0 {
		return
	}
	s.watch.pending = append(s.watch.pending[:0], s.watch.recentNet...)
	s.watch.any = true
	s.log.Info("feeding the late watchers in the host's place", "watchers", n)
	s.flushWatch(now)
}

// checkFeed (a late watcher): no update for the drop timeout and
// feedGrace means the host is gone and no player feeds this machine.
func (s *Session) checkFeed(now time.Duration) {
	if !s.started || s.peer == nil || !s.peer.Spectator() || s.done || s.quitting {
		return
	}
	if now-s.watch.lastUpdate >= s.dropTimeout+feedGrace {
		s.fail(errFeedLost)
	}
}

// watchDeadline: when the feeder's next update is due, or when a late
// watcher's feed would count as lost.
func (s *Session) watchDeadline() (time.Duration, bool) {
	if s.role == RoleObserver {
		return s.watch.lastUpdate + s.dropTimeout + feedGrace, s.started && !s.done && !s.quitting && s.peer != nil && s.peer.Spectator()
	}
	return s.watch.next, s.started && s.watch.any && s.feedsWatchers()
}

// onWatch (a late watcher): the host's snapshot or an update.
func (s *Session) onWatch(now time.Duration, w watchMsg) {
	if s.role != RoleObserver {
		return
	}
	if s.peer != nil {
		if s.peer.Spectator() {
			s.watch.lastUpdate = now
			s.peer.Follow(now, s.newEvents(w.Events), w.State)
			s.watch.followed = max(s.watch.followed, w.State.Frame)
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
		Sink: feed.SinkFunc(s.peerEvent), Logger: s.log, Alerts: s.cfg.Alerts,
		LinkEvery: s.cfg.LinkEvery, FillMatrix: s.cfg.FillMatrix, GameClock: s.cfg.Virtual,
	}
	peer, err := probe.NewSpectatorOn(now, cfg, s.ep, snap.State)
	if err != nil {
		s.fail(fmt.Errorf("live: cannot follow the game: %w", err))
		return
	}
	s.peer = peer
	s.started, s.startedAt = true, now
	s.buffered = nil // frame packets: a spectator executes none
	s.message(fmt.Sprintf("Watching a game in progress from frame %d", snap.State.Frame))
	s.log.Info("watching a running game", "frame", snap.State.Frame, "roster", s.version)
	peer.Follow(now, snap.Events, snap.State) // the recent messages
	s.watch.followed = snap.State.Frame
	for _, w := range s.watch.held[1:] {
		peer.Follow(now, s.newEvents(w.Events), w.State)
		s.watch.followed = max(s.watch.followed, w.State.Frame)
	}
	s.watch.held = nil
	s.watch.lastUpdate = now
	s.nextAlive = now
	if s.quitting {
		s.peer.Quit(now)
	}
}

// newEvents are the events of an update from the frame of the last state
// followed on: a new feeder's first update repeats recent events, and the
// ones before that frame came with the host's updates already.
func (s *Session) newEvents(evs []probe.WatchEvent) []probe.WatchEvent {
	i := 0
	for i < len(evs) && evs[i].Frame < s.watch.followed {
		i++
	}
	return evs[i:]
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
		m := &member{Member: probe.Member{ID: e.ID, Name: e.Name, Addr: addr, Observer: true, Key: e.Key}, late: true, lastHeard: now}
		s.addMember(m)
		if err := s.peer.AddObserver(now, m.Member); err != nil {
			s.log.Warn("cannot take the watcher in", "watcher", e.Name, "err", err)
			continue
		}
		if s.role == RoleObserver {
			continue // observers do not link to each other
		}
		if err := s.ep.AddLink(now, e.ID, addr, e.Key); err != nil {
			s.log.Warn("cannot open link", "peer", e.Name, "err", err)
			continue
		}
		m.linked, m.heard = true, false
		s.membersChanged()
		s.openPair(now, m)
		s.message(e.Name + " is watching")
	}
	s.emitRoster()
}
