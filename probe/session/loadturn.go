package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/loadtest"
)

// Who may run a load test, and when (docs/load-test.md, "Consent and
// bounds"). A test runs between two seated players of a running game,
// one test at a time in the session, and only with the host's turn:
//
//  1. the tester asks the host for the turn toward its peer (a claim,
//     every 500 ms until answered);
//  2. the host, when the turn is free, the tester and the peer are seated
//     players and the tester's last turn ended a minute ago or more, holds
//     it for that test and tells the peer (a notice, again on each claim
//     until the peer is ready);
//  3. the peer, when its game runs and it serves no other test, keeps the
//     notice and tells the host it is ready; the host then grants the
//     turn to the tester;
//  4. the peer serves the one request whose link and test id the notice
//     names; every other request is refused, counted and shown once;
//  5. the tester and the peer each give the turn back when the test is
//     over; the peer also when no request took its notice up within 3 s.
//     A turn whose peer is not ready within 3 s lapses, and a granted one
//     lapses 30 s on even if both releases are lost.
//
// Everything is judged by the link a message came over (the member
// delivery names), never by what the message says of its sender.

const (
	// loadReadyWithin: a turn whose peer has not said it is ready this
	// long after the claim that took it lapses (host).
	loadReadyWithin = 3 * time.Second
	// loadStartWithin: a notice no request took up within this lapses,
	// and the peer gives the turn back.
	loadStartWithin = 3 * time.Second
	// loadTurnFor bounds how long the host holds a granted turn whose
	// releases are lost: a test takes at most 25 s.
	loadTurnFor = 30 * time.Second
	// loadEpisode: refusals of one kind from one member this close
	// together are one episode, shown in one message.
	loadEpisode = 10 * time.Second
)

// loadTurn is the host's record of the session's turn.
type loadTurn struct {
	held         bool
	ready        bool // the peer has the notice: the turn is granted
	holder, peer netcore.PeerID
	id           uint32
	at           time.Duration // when it was taken, then when it was granted
}

// loadNotice is the host's word, at the peer's end, that a tester holds
// the turn for one test toward this machine.
type loadNotice struct {
	held    bool
	used    bool // a request took it up
	refused bool // and was refused (peer refused, busy, relayed): a copy of the request gets the same answer
	tester  netcore.PeerID
	id      uint32
	until   time.Duration // a notice not used by then lapses
}

// loadShown keys the refusal messages shown: one per member and reason
// an episode.
type loadShown struct {
	from netcore.PeerID
	why  string
}

// Reasons a test's message is refused, as the message shows them after
// the member's name.
const (
	whyLobby    = "the game has not started here"
	whyWatcher  = "a watcher runs no load tests"
	whyNotSeat  = "not a player in the game"
	whyNoTurn   = "no turn from the host for this test toward this machine"
	whyPeer     = "its peer is not a player in the game"
	whyNonce    = "a pace without this machine's latest nonce"
	refusalLine = "Load test from %s refused: %s"
)

// hostThere: the host is in the game, to give the session's turn.
func (s *Session) hostThere() bool {
	if s.role == roleHost {
		return true
	}
	h := s.byID[hostID]
	return h != nil && !h.removed && h.linked
}

// toHost sends a claim to the host, or takes it here on the host.
func (s *Session) toHost(now time.Duration, c loadTurnMsg) {
	if s.role == roleHost {
		s.hostClaim(now, s.self, c)
		return
	}
	if !s.hostThere() {
		return
	}
	s.load.buf = appendLoadTurn(s.load.buf[:0], kindLoadClaim, c)
	_ = s.ep.SendUnnumbered(now, hostID, s.load.buf, false)
}

// toMember (the host) sends a grant or a notice to a member, or takes it
// here when the member is the host itself.
func (s *Session) toMember(now time.Duration, to netcore.PeerID, g loadTurnMsg) {
	if to == s.self {
		s.onGrant(now, g)
		return
	}
	s.load.buf = appendLoadTurn(s.load.buf[:0], kindLoadGrant, g)
	_ = s.ep.SendUnnumbered(now, to, s.load.buf, false)
}

// player is the member id when it is a seated player of the game this
// machine knows (this machine included), nil otherwise.
func (s *Session) player(id netcore.PeerID) *member {
	m := s.byID[id]
	if m == nil || m.Observer || m.removed || (id != s.self && !m.linked) {
		return nil
	}
	return m
}

// tickWant claims the turn for a waiting test, and gives up at its time.
func (s *Session) tickWant(now time.Duration, w *loadWant) {
	switch {
	case w.m.removed || !w.m.linked:
		s.dropWant(now, "peer left")
		return
	case !s.hostThere():
		s.message("No load test: the host has left the game, and only the host gives the session's turn")
		s.dropWant(now, "busy")
		return
	case now >= w.until:
		s.dropWant(now, "busy")
		return
	case s.load.run != nil:
		return // this machine answers another's test: one at a time
	case s.load.ended && now < s.load.endAt+loadGap:
		return // this machine's own gap: the wait covers it
	case now < w.nextClaim:
		return
	}
	w.nextClaim = now + loadClaimEvery
	s.toHost(now, loadTurnMsg{ID: w.id, Tester: s.self, Peer: w.m.ID, Flag: turnAsk})
}

// dropWant ends the waiting test, stopped why, and gives back the turn it
// may hold.
func (s *Session) dropWant(now time.Duration, why string) {
	w := s.load.want
	s.load.want = nil
	s.toHost(now, loadTurnMsg{ID: w.id, Tester: s.self, Peer: w.m.ID, Flag: turnRelease})
	s.loadOver(now, w.m, loadtest.Result{Stopped: stopText(why)})
}

// hostClaim (the host) takes a claim that came over from's link.
func (s *Session) hostClaim(now time.Duration, from netcore.PeerID, c loadTurnMsg) {
	t := &s.load.turn
	ours := t.held && t.id == c.ID && t.holder == c.Tester && t.peer == c.Peer
	switch c.Flag {
	case turnAsk:
		if c.Tester != from {
			s.badLoad(s.byID[from], errLoadWire) // a claim for another machine
			return
		}
		s.hostAsk(now, c, ours)
	case turnRelease:
		if ours && (from == t.holder || from == t.peer) {
			s.endTurn(now)
		}
	case turnReady:
		if ours && from == t.peer && !t.ready {
			t.ready, t.at = true, now
			s.announceTest(now, *t)
			s.toMember(now, t.holder, loadTurnMsg{ID: t.id, Tester: t.holder, Peer: t.peer, Flag: grantOK})
		}
	}
}

// hostAsk (the host) answers a tester's ask: the turn is taken for it and
// its peer told, or, taken already, the peer told again (not ready yet)
// or the grant sent again (lost); otherwise busy.
func (s *Session) hostAsk(now time.Duration, c loadTurnMsg, ours bool) {
	t := &s.load.turn
	busy := c
	busy.Flag = grantBusy
	if why := s.mayTest(c); why != "" {
		s.refuseLoad(now, s.byID[c.Tester], why)
		s.toMember(now, c.Tester, busy)
		return
	}
	last, had := s.load.turnEnd[c.Tester]
	switch {
	case ours && t.ready:
		s.toMember(now, t.holder, loadTurnMsg{ID: t.id, Tester: t.holder, Peer: t.peer, Flag: grantOK})
	case ours:
		s.toMember(now, t.peer, loadTurnMsg{ID: t.id, Tester: t.holder, Peer: t.peer, Flag: grantNotice})
	case t.held, had && now < last+loadGap:
		// Another test holds the turn, or this holder's last turn ended
		// less than a minute ago: the turn passes on.
		s.toMember(now, c.Tester, busy)
	default:
		*t = loadTurn{held: true, holder: c.Tester, peer: c.Peer, id: c.ID, at: now}
		s.toMember(now, t.peer, loadTurnMsg{ID: t.id, Tester: t.holder, Peer: t.peer, Flag: grantNotice})
	}
}

// mayTest (the host) is why a claim is refused, "" when it is not: both
// ends seated players of a running game.
func (s *Session) mayTest(c loadTurnMsg) string {
	switch tester := s.byID[c.Tester]; {
	case !s.started || s.peer == nil:
		return whyLobby
	case tester != nil && tester.Observer:
		return whyWatcher
	case s.player(c.Tester) == nil:
		return whyNotSeat
	case c.Peer == c.Tester || s.player(c.Peer) == nil:
		return whyPeer
	}
	return ""
}

// endTurn (the host) frees the turn and starts its holder's minute before
// its next — whether its test ran or not: a holder whose peer never gets
// ready (one that colludes, or is gone) holds the turn 3 s a minute.
func (s *Session) endTurn(now time.Duration) {
	t := &s.load.turn
	if s.load.turnEnd == nil {
		s.load.turnEnd = map[netcore.PeerID]time.Duration{}
	}
	s.load.turnEnd[t.holder] = now
	*t = loadTurn{}
}

// tickTurn lapses the host's turn and this machine's notice at their time;
// a turn whose tester or peer has left the game ends at once.
func (s *Session) tickTurn(now time.Duration) {
	t := &s.load.turn
	switch {
	case !t.held:
	case (!t.ready && now >= t.at+loadReadyWithin) || (t.ready && now >= t.at+loadTurnFor):
		s.endTurn(now)
	case s.player(t.holder) == nil || s.player(t.peer) == nil:
		*t = loadTurn{}
	}
	if n := &s.load.notice; n.held && !n.used && now >= n.until {
		n.held = false
		s.toHost(now, loadTurnMsg{ID: n.id, Tester: n.tester, Peer: s.self, Flag: turnRelease})
	}
}

// turnDeadline is when tickTurn next has something to do.
func (s *Session) turnDeadline() (time.Duration, bool) {
	d, ok := time.Duration(0), false
	if t := s.load.turn; t.held {
		d, ok = t.at+loadReadyWithin, true
		if t.ready {
			d = t.at + loadTurnFor
		}
	}
	if n := s.load.notice; n.held && !n.used && (!ok || n.until < d) {
		d, ok = n.until, true
	}
	return d, ok
}

// onGrant takes the host's grant, refusal or notice.
func (s *Session) onGrant(now time.Duration, g loadTurnMsg) {
	switch {
	case g.Flag == grantNotice && g.Peer == s.self:
		s.onNotice(now, g)
	case g.Flag != grantNotice && g.Tester == s.self:
		s.onLoadGrant(now, g)
	}
}

// onNotice (the peer's end) keeps the host's word that g's tester holds
// the turn for test g.ID toward this machine, and says it is ready — when
// its game runs, the tester is a seated player, and it serves no other
// test. Otherwise it says nothing, and the host's turn lapses.
func (s *Session) onNotice(now time.Duration, g loadTurnMsg) {
	if !s.started || s.peer == nil || s.player(g.Tester) == nil || g.Tester == s.self {
		return
	}
	n := &s.load.notice
	switch {
	case !n.held || n.tester != g.Tester || n.id != g.ID:
		if s.load.run != nil {
			return
		}
		*n = loadNotice{held: true, tester: g.Tester, id: g.ID, until: now + loadStartWithin}
	case !n.used:
		// A copy: the host has not heard the ready yet, so the tester
		// has no grant either; its request may come as late again.
		n.until = now + loadStartWithin
	}
	// Every copy is answered: the host sends one again on each claim
	// until the ready reaches it.
	s.toHost(now, loadTurnMsg{ID: g.ID, Tester: g.Tester, Peer: s.self, Flag: turnReady})
}

// onLoadGrant starts the waiting test its grant names, or, refused,
// stops it busy (a test from the TUI) or lets it ask again later.
func (s *Session) onLoadGrant(now time.Duration, g loadTurnMsg) {
	w := s.load.want
	if w == nil || w.id != g.ID || w.m.ID != g.Peer || s.load.run != nil {
		return // not ours, or this machine answers a test of another now: it asks again
	}
	if g.Flag != grantOK {
		if !w.wait {
			s.dropWant(now, "busy")
			return
		}
		w.nextClaim = now + loadRetryBusy
		return
	}
	s.load.want = nil
	m, id := w.m, w.id
	if self := s.byID[s.self]; self != nil {
		s.seeTest(now, id, self, m)
	}
	r := &loadRun{m: m, id: id, tester: true}
	r.rungFrom = s.peer.InForce().Rung()
	r.rungTo = r.rungFrom
	r.t = loadtest.New(loadtest.Config{ID: id, Cap: s.cfg.Load.Cap, Relayed: isRelayed(m.Addr),
		Send: s.loadSender(m), Done: func(res loadtest.Result) { s.testerDone(id, res) }})
	s.startRun(now, r)
}

// loadMessage takes a test's message over m's link: the running test's go
// to it, a request may start this machine's peer end, and anything else
// (a message of a test that is over) is dropped.
func (s *Session) loadMessage(now time.Duration, m *member, msg []byte) {
	id, err := loadtest.Check(msg)
	if err != nil {
		s.badLoad(m, err)
		return
	}
	if r := s.load.run; r != nil && r.m == m && r.id == id {
		before := r.t.Ignored()
		r.t.Receive(now, msg)
		if n := r.t.Ignored() - before; n > 0 {
			s.rejected.Load += uint64(n)
			s.showRefusal(now, m, whyNonce)
		}
		return
	}
	if loadtest.IsRequest(msg) {
		s.loadRequest(now, m, id, msg)
	}
}

// loadRequest answers a request for test id over m's link: it is served
// only when m is a seated player of the running game and the host's
// notice names m and id; then the peer's consent and bounds (refuse,
// busy, relayed) answer it. A request that may not be served is not
// answered: it is counted and shown once.
func (s *Session) loadRequest(now time.Duration, m *member, id uint32, msg []byte) {
	n := &s.load.notice
	switch {
	case !s.started || s.peer == nil:
		s.refuseLoad(now, m, whyLobby)
		return
	case m.Observer:
		s.refuseLoad(now, m, whyWatcher)
		return
	case s.player(m.ID) == nil:
		s.refuseLoad(now, m, whyNotSeat)
		return
	case !n.held || n.tester != m.ID || n.id != id:
		s.refuseLoad(now, m, whyNoTurn)
		return
	case n.used && !n.refused:
		return // a copy of the request of a test served and over
	}
	last, tested := s.load.byTest[m.ID]
	busy := s.load.run != nil || (tested && now < last+loadGap)
	cfg := loadtest.Config{Request: msg, Cap: s.cfg.Load.Cap, Refuse: s.cfg.Load.Refuse, Busy: busy,
		Relayed: isRelayed(m.Addr), Send: s.loadSender(m), Rand: s.rnd}
	accepted := !cfg.Refuse && !busy && !cfg.Relayed
	if accepted {
		cfg.Done = func(loadtest.Result) { s.peerDone(m, id) }
	}
	t := loadtest.New(cfg)
	if t == nil {
		s.badLoad(m, errLoadWire)
		return
	}
	first := !n.used
	n.used, n.refused = true, !accepted
	if !accepted {
		t.Tick(now) // the answer says why; the end is over
		if first {
			s.toHost(now, loadTurnMsg{ID: id, Tester: m.ID, Peer: s.self, Flag: turnRelease})
		}
		return
	}
	if self := s.byID[s.self]; self != nil {
		s.seeTest(now, id, m, self)
	}
	s.startRun(now, &loadRun{m: m, id: id, t: t})
}

// peerDone ends this machine's peer end of m's test id, and gives back
// the turn.
func (s *Session) peerDone(m *member, id uint32) {
	if r := s.load.run; r == nil || r.m != m || r.id != id || r.tester {
		return
	}
	s.load.run = nil
	if s.load.byTest == nil {
		s.load.byTest = map[netcore.PeerID]time.Duration{}
	}
	s.load.byTest[m.ID] = s.wb.now
	s.toHost(s.wb.now, loadTurnMsg{ID: id, Tester: m.ID, Peer: s.self, Flag: turnRelease})
	s.afterRun()
}

// onLoadLobby handles the session's own load messages.
func (s *Session) onLoadLobby(now time.Duration, m *member, msg []byte) {
	switch msg[0] {
	case kindLoadClaim:
		c, err := decodeLoadTurn(msg, kindLoadClaim)
		if err != nil || s.role != roleHost {
			s.badLoad(m, err)
			return
		}
		if !s.load.claims.take(now, m.ID) {
			s.badLoad(m, errLoadTwice)
			return
		}
		s.hostClaim(now, m.ID, c)
	case kindLoadGrant:
		g, err := decodeLoadTurn(msg, kindLoadGrant)
		if err != nil || m.ID != hostID || s.role == roleHost {
			s.badLoad(m, err)
			return
		}
		s.onGrant(now, g)
	case kindLoadNote:
		n, err := decodeLoadTurn(msg, kindLoadNote)
		if err != nil {
			s.badLoad(m, err)
			return
		}
		s.onLoadNote(now, m, n)
	case kindLoadWaits:
		w, err := decodeLoadWaits(msg)
		if err != nil {
			s.badLoad(m, err)
			return
		}
		s.onLoadWaits(now, m, w)
	case kindLoadResult:
		r, err := decodeLoadResult(msg)
		if err != nil {
			s.badLoad(m, err)
			return
		}
		s.onLoadResult(now, m, r)
	default: // the retired figures
		s.badLoad(m, errLoadWire)
	}
}

// claimsNow is the members whose claim the host took at one instant. A
// datagram's messages all arrive at one instant, so taking one claim a
// member an instant means that claims packed into one datagram draw at
// most one grant or notice: never more datagrams, nor more bytes, than
// came in. A conforming machine sends one claim a datagram, one every
// 500 ms at most.
type claimsNow struct {
	at   time.Duration
	from []netcore.PeerID
}

// take reports whether a claim from id at now is the first this instant,
// and notes it.
func (c *claimsNow) take(now time.Duration, id netcore.PeerID) bool {
	if c.at != now {
		c.at, c.from = now, c.from[:0]
	}
	if slices.Contains(c.from, id) {
		return false
	}
	c.from = append(c.from, id)
	return true
}

// badLoad counts a load message that does not decode or came from a
// machine that may not send it.
func (s *Session) badLoad(m *member, err error) {
	s.rejected.Load++
	name := ""
	if m != nil {
		name = m.Name
	}
	s.log.Debug("load message refused", "from", name, "err", err)
}

// refuseLoad counts a refused request or claim from m, and shows it once
// an episode.
func (s *Session) refuseLoad(now time.Duration, m *member, why string) {
	s.rejected.Load++
	s.showRefusal(now, m, why)
}

// showRefusal shows a message for m's refusal why, unless one was shown
// for the same within the last loadEpisode: a flood of refused datagrams
// is one line.
func (s *Session) showRefusal(now time.Duration, m *member, why string) {
	if m == nil {
		return
	}
	if s.load.shown == nil {
		s.load.shown = map[loadShown]time.Duration{}
	}
	k := loadShown{from: m.ID, why: why}
	last, seen := s.load.shown[k]
	s.load.shown[k] = now
	if seen && now-last < loadEpisode {
		return
	}
	if len(s.load.shown) > 64 { // members × reasons: forget the episodes that are over
		for k, at := range s.load.shown {
			if now-at >= loadEpisode {
				delete(s.load.shown, k)
			}
		}
	}
	s.message(fmt.Sprintf(refusalLine, m.Name, why))
}
