package session

import (
	"github.com/lagscope/lagscope/vocab"
	"net/netip"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
)

// rosterChanged: the host's roster has a new version; tell everyone who
// reads it. Once the game runs, only the players do: a watcher links to
// the players alone, which no longer change, and gets one roster when it
// is let in (admission.go) — so n watchers arriving together cost n
// rosters, not n².
func (s *Session) rosterChanged(now time.Duration) {
	s.version++
	s.nat.tableDirty = s.nat.anyLocals
	s.emitRoster()
	for _, m := range s.members {
		if m.ID != s.self && m.linked && !m.removed && !(s.started && m.Observer) {
			s.sendRoster(now, m)
		}
	}
}

// currentRoster is the roster as the host sends it to member to. A
// watcher that attaches to a running game links to the players only and
// takes no roster after its first: its roster lists the players and
// itself, not every other watcher, so that 64 watchers attaching cost the
// host 64 short rosters, not 64 long ones.
func (s *Session) currentRoster(to *member) roster {
	r := roster{Version: s.version, Need: uint16(s.need), Speed: uint16(s.speed), DropTimeout: s.dropTimeout}
	short := s.started && to != nil && to.Observer && to.late
	for _, m := range s.members {
		if m.removed || (short && m.Observer && m != to) {
			continue
		}
		e := rosterEntry{ID: m.ID, Observer: m.Observer, Late: m.late, Name: m.Name, Addr: m.Addr, Key: m.Key}
		if m.ID == s.self {
			e.Addr = netip.AddrPort{} // "the sender": each member knows where it reaches the host
		}
		r.Members = append(r.Members, e)
	}
	return r
}

func (s *Session) sendRoster(now time.Duration, m *member) {
	s.buf = appendRoster(s.buf[:0], s.currentRoster(m))
	if err := s.ep.Send(now, m.ID, netcore.ChannelGlobal, s.buf); err != nil {
		s.log.Debug("roster not sent", "to", m.Name, "err", err)
	}
	m.rosterSent = now
}

// applyRoster: a member takes the host's roster.
func (s *Session) applyRoster(now time.Duration, r roster) {
	if s.started {
		s.rosterWhileRunning(now, r)
		return
	}
	if r.Version <= s.version {
		return
	}
	var self *rosterEntry
	for i := range r.Members {
		if r.Members[i].ID == s.self {
			self = &r.Members[i]
		}
	}
	if self == nil {
		s.fail(errDropped)
		return
	}
	if r.Members[0].ID != hostID {
		s.rejected.Lobby++
		return
	}
	keep := map[netcore.PeerID]bool{}
	var list []*member
	for _, e := range r.Members {
		keep[e.ID] = true
		list = append(list, s.takeEntry(now, e))
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
	s.membersChanged()
	s.version = r.Version
	s.lateSelf = self.Late
	s.need = int(r.Need)
	s.speed = int(r.Speed)
	s.dropTimeout = r.DropTimeout
	s.emitRoster()
	s.nextPing = now // tell the host at once
	if s.pendingStart == s.version && !s.lateSelf {
		s.startWanted = true
	}
	s.startWatching(now) // a snapshot that waited for this roster
}

// seenAt is where this machine reaches the member the host lists in e:
// the host itself for "the sender", and the host's address for a member
// the host saw on its own loopback.
func (s *Session) seenAt(e rosterEntry) netip.AddrPort {
	switch {
	case !e.Addr.IsValid():
		return s.hostAddr
	case e.Addr.Addr().IsLoopback() && !s.hostAddr.Addr().IsLoopback():
		return netip.AddrPortFrom(s.hostAddr.Addr(), e.Addr.Port())
	}
	return e.Addr
}

// takeEntry updates, or makes, the member of roster entry e and opens,
// keeps or closes this machine's link to it. Every player links to every
// other machine; an observer only to the players (T1: one private link per
// pair that has traffic).
func (s *Session) takeEntry(now time.Duration, e rosterEntry) *member {
	addr := s.seenAt(e)
	m := s.byID[e.ID]
	if m == nil {
		m = &member{lastHeard: now}
	}
	m.path.hostSeen = addr
	var moved netip.AddrPort
	switch {
	case m.path.state == pathDirect || m.path.state == pathRelayed:
		addr = m.Addr // the pair found its own path (punch.go)
	case m.linked && m.Addr.IsValid() && addr != m.Addr:
		// A live link moves only to an address that answered a check of
		// this machine's (punch.go): check the new one first.
		moved, addr = addr, m.Addr
	}
	if m.linked && m.Key != e.Key {
		// A machine's identity never changes for its PeerID: a roster
		// that says otherwise is no host's (a restart gets a new ID).
		s.rejected.Lobby++
		e.Key = m.Key
	}
	m.Member = probe.Member{ID: e.ID, Name: e.Name, Addr: addr, Observer: e.Observer, Key: e.Key}
	s.membersChanged() // its link may change too, below
	if moved.IsValid() {
		s.probePath(now, m, moved)
	}
	m.late = e.Late
	want := e.ID != s.self && (s.role != RoleObserver || !e.Observer)
	switch {
	case want && !m.linked:
		if err := s.ep.AddLink(now, e.ID, addr, e.Key); err != nil {
			s.log.Warn("cannot open link", "peer", e.Name, "err", err)
			return m
		}
		m.linked, m.heard, m.lastHeard = true, false, now
		s.openPair(now, m)
	case want && m.linked:
		_ = s.ep.MoveLink(e.ID, addr) // a no-op unless the path moved
	case !want && m.linked:
		s.ep.RemoveLink(e.ID)
		m.linked = false
	}
	return m
}

func (s *Session) emitRoster() {
	ev := &feed.RosterEvent{Header: feed.Header{Type: vocab.EventRoster, Frame: s.Frame()}, Version: s.version, Need: s.need,
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
