package session

import (
	"fmt"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// Name is this machine's player name.
func (s *Session) Name() string { return s.cfg.Name }

// Peer is the game's peer once the game has started here, else nil.
func (s *Session) Peer() *probe.Peer { return s.peer }

// endpoint is the session's transport state (links, totals, rejections).
func (s *Session) endpoint() *netcore.Endpoint { return s.ep }

// Started reports whether the game runs here.
func (s *Session) Started() bool { return s.started }

// Done reports whether the session has ended for this machine; Err says
// why when it ended badly.
func (s *Session) Done() bool { return s.done }

// Err is why the session ended, or nil for a clean end. A joiner's
// error about the host names the host's address (joinError).
func (s *Session) Err() error {
	if s.role != roleHost && isJoinError(s.err) {
		return joinError{err: s.err, host: s.hostAddr, keyArg: s.cfg.KeyArg}
	}
	return s.err
}

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

// GameAt is the session time of frame f (probe.Peer.GameAt): the game's
// time since it started, the same on every machine and watcher; false
// before this machine's game started.
func (s *Session) GameAt(f int) (time.Duration, bool) {
	if s.peer != nil {
		return s.peer.GameAt(f)
	}
	return 0, false
}

// SetSpeed asks for a new game speed (S17) once the game runs.
func (s *Session) SetSpeed(fps int) {
	if s.peer != nil {
		s.peer.SetSpeed(fps)
	}
}

// Rejected is every datagram and message this machine refused: netcore's
// counts (token, sender, malformed, auth, replay, oversize, window), the
// session's (handshake, lobby) and the peer's undecodable frame packets.
func (s *Session) Rejected() feed.RejectedCounts {
	r := s.ep.Rejected()
	c := feed.RejectedCounts{Token: r.Token, Sender: r.Sender, Malformed: r.Malformed, Auth: r.Auth,
		Replay: r.Replay, Oversize: r.Oversize, Window: r.Window,
		Handshake: s.rejected.Handshake, Lobby: s.rejected.Lobby, Path: s.rejected.Path, Load: s.rejected.Load}
	if s.peer != nil {
		c.Frame = s.peer.BadPackets()
		c.Implausible = r.Implausible + s.peer.Implausible()
	} else {
		c.Implausible = r.Implausible
	}
	c.Sum()
	return c
}

// Links lists this machine's links, in house order.
func (s *Session) Links() []feed.LinkStat {
	if s.peer != nil {
		return s.markPaths(s.peer.Links())
	}
	var out []feed.LinkStat
	for _, m := range s.members {
		// A member named by nothing yet (the host, before its roster
		// arrives) has no line: its peer would be an empty name.
		if m.ID == s.self || !m.linked || m.Name == "" {
			continue
		}
		if st, ok := s.ep.Stats(m.ID); ok {
			l := probe.LinkOf(s.cfg.Name, m.Name, st)
			l.Relayed = isRelayed(m.Addr)
			out = append(out, l.Stat())
		}
	}
	return out
}

// KnownLinks lists every directed link this machine knows at now: its own
// and, once the game runs, every other player's from its telemetry (the
// `link` lines of the NDJSON events).
func (s *Session) KnownLinks(now time.Duration) []feed.LinkStat {
	if s.peer != nil {
		return s.markPaths(s.peer.KnownLinks(now))
	}
	return s.Links()
}

// Summary is this machine's summary line: every link it had (those that
// ended as they stood when they ended), its own waits (a player's), and
// what it rejected.
func (s *Session) Summary() *feed.SummaryEvent {
	sum := &feed.SummaryEvent{Header: feed.Header{Type: vocab.EventSummary, Frame: s.Frame()},
		Links: append([]feed.LinkStat{}, s.Links()...), Players: []feed.PlayerSummary{}}
	if s.peer != nil {
		sum.Links = append(sum.Links, s.peer.RetiredLinks()...)
	}
	if s.peer != nil && !s.peer.Observer() {
		sum.Players = append(sum.Players, s.peer.Summary())
	}
	r := s.Rejected()
	sum.Rejected = &r
	sum.Relay = s.relayed()
	sum.Incidents = []feed.Incident{}
	if s.peer != nil {
		sum.Watch = s.peer.WatchSummary()
		sum.Incidents = s.peer.Incidents()
	}
	return sum
}

// EndIncidents closes the incidents still open at the end of the run: a
// close line each, before the summary (which lists them all).
func (s *Session) EndIncidents(now time.Duration) {
	if s.peer != nil {
		s.peer.CloseIncidents(now)
		s.flush()
	}
}

// View is the picture front ends draw: the peer's once the game runs, a
// lobby picture before.
func (s *Session) View(now time.Duration) feed.View {
	var v feed.View
	if s.peer != nil {
		v = s.peer.View(now)
	} else {
		st := rungs.StartTiming()
		v = feed.View{At: now, Self: s.cfg.Name, FPS: s.speed, Speed: s.speed, InForce: st, Target: st}
		for _, m := range s.members {
			if m.removed || m.Name == "" { // not named yet: the roster is on its way
				continue
			}
			v.Players = append(v.Players, feed.PlayerView{Name: m.Name, Observer: m.Observer,
				Master: m.ID == hostID, Self: m.ID == s.self})
			if m.ID == hostID {
				v.Master = m.Name
			}
			if m.ID == s.self || !m.linked {
				continue
			}
			if ls, ok := s.ep.Stats(m.ID); ok {
				l := probe.LinkOf(s.cfg.Name, m.Name, ls)
				l.Relayed = isRelayed(m.Addr)
				v.Links = append(v.Links, feed.LinkView{Link: l,
					Peer: m.Name, Observer: m.Observer, Bad: ls.State == netcore.Bad})
			}
		}
		v.Totals = probe.TotalsOf(s.ep.Totals())
	}
	v.Session = s.SessionName()
	for i := range v.Links {
		if s.pathTo(v.Links[i].Peer) == pathRelayed {
			v.Links[i].Relayed = true
		}
	}
	for _, row := range v.Matrix.Players {
		for i := range row.Links {
			l := &row.Links[i].Link
			l.Relayed = (l.From == s.cfg.Name && s.pathTo(l.To) == pathRelayed) || s.relayedPair(l.From, l.To)
		}
	}
	v.Relay = s.relayed()
	v.Paths = s.Paths()
	if s.started {
		v.Load = s.loadView(now)
	}
	if !s.started {
		v.Lobby = s.lobbyView(now)
	}
	return v
}

// lobbyView is the lobby as this machine sees it: the seats, and the
// host's guide or the joiner's way in.
func (s *Session) lobbyView(now time.Duration) *feed.LobbyView {
	l := &feed.LobbyView{Need: s.need, Seated: s.seated(), Observers: s.observers(), Joining: s.join == joinHello || s.join == joinResponse,
		Pending: s.pending(now)}
	if s.role == roleHost {
		l.CanStart = !s.done && !s.quitting
		l.Guide = s.cfg.Guide
		return l
	}
	l.HostAddr, l.Watcher, l.Late = s.hostAddr, s.role == RoleObserver, s.lateSelf
	if l.Joining && s.began {
		// Hellos go out every helloEvery from the first Tick on.
		l.Attempt = int(max(0, now-s.beganAt)/helloEvery) + 1
	}
	return l
}

func (s *Session) message(text string) {
	w := probe.WatchEvent{Kind: probe.WatchMessage, Frame: s.Frame(), Text: text}
	w.Game, w.GameKnown = s.GameAt(w.Frame)
	s.noteWatch(w)
	s.emit(&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: s.Frame()}, Text: text, Player: s.cfg.Name})
}

func (s *Session) emit(e feed.Event) { s.events = append(s.events, e) }

// peerEvent is the peer's sink. A live machine reports only stalls of at
// least one frame time (docs/live.md: shorter waits are the wall clock's
// ordinary jitter, not lag).
func (s *Session) peerEvent(from string, e feed.Event) {
	if st, ok := e.(*feed.StallEvent); ok && !s.cfg.Virtual && s.peer != nil && st.Wait*time.Duration(s.peer.FPS()) < time.Second {
		return
	}
	s.loadPeerEvent(e) // a load test's cost counts the stalls a player would see
	if r, ok := e.(*feed.RemovedEvent); ok {
		for _, m := range s.members {
			if m.Name == r.Player && !m.Observer {
				m.removed = true
				m.linked = false
				s.membersChanged()
			}
		}
	}
	if s.role != RoleObserver && s.peer != nil {
		if w, ok := s.peer.WatchEventOf(e); ok {
			s.noteWatch(w)
		}
	}
	s.cfg.Sink.Emit(from, e)
}

func (s *Session) flush() {
	k := s.cfg.Sink
	if s.cfg.LobbySink != nil {
		k = s.cfg.LobbySink
	}
	for _, e := range s.events {
		k.Emit(s.cfg.Name, e)
	}
	clear(s.events)
	s.events = s.events[:0]
}

// Diagnose is the summary's diagnosis: the last evaluation's,
// when there was one — at the end the others are leaving and their
// telemetry goes quiet, so a fresh one would know less — else one from the
// links this machine knows at now. Before the game nothing is measured, and
// the verdict says so.
func (s *Session) Diagnose(now time.Duration) diagnosis.Diagnosis {
	if s.peer == nil {
		return diagnosis.Diagnose(diagnosis.Input{Speed: s.speed})
	}
	if d := s.peer.LastDiagnosis(); d != nil {
		return *d
	}
	return s.peer.Diagnose(now)
}
