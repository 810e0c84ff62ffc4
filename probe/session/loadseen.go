package session

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// Every machine is told of a test between two members, and the test's
// cost counts where it falls (docs/load-test.md, "Everyone is told"):
//
//  1. the host, as it grants the turn, tells every member the test
//     begins (a note); each machine publishes `load_start`, keeps the
//     pair quiet in its diagnosis and alerts, and counts the frames it
//     waits on from then on;
//  2. the tester, when its test ends, tells every member so (a note); each
//     seated player answers with the frames it waited on and its longest
//     wait (waits), and stops counting;
//  3. the tester, once every seated player has answered or
//     loadReportsWithin has passed, counts the frames any of them (itself
//     included) waited on and the longest wait, publishes its `load` line
//     and hands every member the result, which each publishes as its own.
//
// A note, waits or a result is judged by the link it came over: the
// beginning only from the host, the end and the result only from the
// tester the beginning named, waits only from a seated player and only
// by the tester of the test they name. An end or a result that overtakes
// the host's beginning (they travel on different links) waits for it, one
// per tester.

const (
	// loadSeenFor bounds how long a machine counts a test it was told of
	// without hearing its end: the tester's test takes at most
	// loadtest.Longest from the grant, and its end may wait behind its
	// own full queue. The host holds a granted turn as long.
	loadSeenFor = loadTurnFor
	// loadReportsWithin is how long the tester waits for the seated
	// players' waits after its test has ended; a machine that has not
	// answered by then counts for nothing.
	loadReportsWithin = 3 * time.Second
	// loadOverKept is how many finished tests a machine remembers, so a
	// result, or a beginning that comes late, is taken once.
	loadOverKept = 8
)

// loadSeen is a test between two members as this machine knows of it,
// from its beginning until the tester says it has ended: the frames this
// machine waited on meanwhile, and its longest wait.
type loadSeen struct {
	id           uint32
	tester, peer *member
	began        time.Duration
	frames       []int
	longest      time.Duration
}

// loadOverRec is a test that has ended here, kept so that its result is
// published once and a late beginning starts nothing.
type loadOverRec struct {
	id           uint32
	tester, peer netcore.PeerID
	published    bool // its load line is out
}

// loadEarly is what a tester sent before the host's beginning arrived: its
// end, its result, or both.
type loadEarly struct {
	id     uint32
	ended  bool
	result *loadResultMsg
}

// loadClosing is the tester's test after its end: the result waiting for
// the seated players' waits.
type loadClosing struct {
	m       *member
	id      uint32
	res     loadtest.Result
	frames  []int
	longest time.Duration
	waiting []netcore.PeerID
	until   time.Duration
}

// seeTest starts this machine's picture of test id, tester toward peer:
// load_start, the pair kept quiet, and its waits counted from now. A test
// seen already, or over, changes nothing; a test still seen when another
// begins is over (the host gives the turn to one at a time).
func (s *Session) seeTest(now time.Duration, id uint32, tester, peer *member) {
	if v := s.load.seen; v != nil && v.id == id && v.tester == tester {
		return
	}
	if s.overTest(id, tester.ID) != nil {
		return
	}
	if s.load.seen != nil {
		s.forgetSeen(now)
	}
	v := &loadSeen{id: id, tester: tester, peer: peer, began: now}
	s.load.seen = v
	tms := units.Millis(now)
	s.cfg.Sink.Emit(s.cfg.Name, &feed.LoadStartEvent{Header: feed.Header{Type: vocab.EventLoadStart, Frame: s.Frame(), TMs: &tms},
		From: tester.Name, To: peer.Name, ForMs: units.Millis(loadtest.Longest)})
	switch s.self {
	case tester.ID:
	case peer.ID:
		s.emit(&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: s.Frame()}, Player: s.cfg.Name,
			Text: fmt.Sprintf("%s is load-testing the line to you for up to %s: waits meanwhile are the test's price, not a fault", tester.Name, wholeSeconds(loadtest.Longest))})
	default:
		s.emit(&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: s.Frame()}, Player: s.cfg.Name,
			Text: fmt.Sprintf("%s is load-testing the line to %s for up to %s: waits meanwhile are the test's price, not a fault", tester.Name, peer.Name, wholeSeconds(loadtest.Longest))})
	}
	s.syncQuiet()
	if e, ok := s.load.early[tester.ID]; ok && e.id == id {
		delete(s.load.early, tester.ID)
		if e.ended {
			s.seenEnded(now, v)
		}
		if e.result != nil {
			if s.load.seen == v {
				s.endSeen() // a result ends the test
			}
			s.takeResult(now, *e.result)
		}
	}
}

func wholeSeconds(d time.Duration) string {
	return fmt.Sprintf("%d s", int64((d+time.Second-1)/time.Second))
}

// syncQuiet names the pair under test to the engine: this machine's own
// test, else the test it was told of; none when neither runs.
func (s *Session) syncQuiet() {
	if s.peer == nil {
		return
	}
	switch r, v := s.load.run, s.load.seen; {
	case r != nil && r.tester:
		s.peer.QuietPair(s.cfg.Name, r.m.Name)
	case r != nil:
		s.peer.QuietPair(r.m.Name, s.cfg.Name)
	case v != nil:
		s.peer.QuietPair(v.tester.Name, v.peer.Name)
	default:
		s.peer.QuietPair("", "")
	}
}

// countWait counts one of this machine's waits (a stall it published)
// against the test it knows of.
func (s *Session) countWait(e *feed.StallEvent) {
	v := s.load.seen
	if v == nil || e.Player != s.cfg.Name {
		return
	}
	v.longest = max(v.longest, e.Wait)
	if len(v.frames) < maxWaitFrames { // a test spans fewer frames (waitsOf)
		v.frames = append(v.frames, e.Frame)
	}
}

// sortedFrames is frames ascending, each once.
func sortedFrames(frames []int) []int {
	slices.Sort(frames)
	return slices.Compact(frames)
}

// endSeen ends this machine's picture of the test it knows of: no more
// waits are counted, the pair is no longer quiet, and the test is kept
// among those over.
func (s *Session) endSeen() *loadSeen {
	v := s.load.seen
	if v == nil {
		return nil
	}
	s.load.seen = nil
	s.load.over = append(s.load.over, loadOverRec{id: v.id, tester: v.tester.ID, peer: v.peer.ID})
	if len(s.load.over) > loadOverKept {
		s.load.over = slices.Delete(s.load.over, 0, len(s.load.over)-loadOverKept)
	}
	s.syncQuiet()
	return v
}

// forgetSeen ends a test whose end never came (its bound passed, or the
// host began another): nothing is reported.
func (s *Session) forgetSeen(now time.Duration) {
	if v := s.endSeen(); v != nil {
		s.log.Debug("load test forgotten without its end", "tester", v.tester.Name, "peer", v.peer.Name, "since", now-v.began)
	}
}

// overTest is the finished test id by tester, nil when none.
func (s *Session) overTest(id uint32, tester netcore.PeerID) *loadOverRec {
	for i := range s.load.over {
		if o := &s.load.over[i]; o.id == id && o.tester == tester {
			return o
		}
	}
	return nil
}

// seenEnded is the tester's end of the test this machine knows of: a
// seated player sends the tester its waits.
func (s *Session) seenEnded(now time.Duration, v *loadSeen) {
	s.endSeen()
	if s.role == RoleObserver || s.player(s.self) == nil || v.tester.ID == s.self {
		return
	}
	w := waitsOf(v.id, sortedFrames(v.frames), v.longest)
	s.load.buf = appendLoadWaits(s.load.buf[:0], w)
	_ = s.ep.Send(now, v.tester.ID, netcore.ChannelReliable, s.load.buf)
}

// announceTest (the host, as it grants the turn) tells every member the
// test begins, and sees it here.
func (s *Session) announceTest(now time.Duration, t loadTurn) {
	tester, peer := s.player(t.holder), s.player(t.peer)
	if tester == nil || peer == nil {
		return
	}
	s.load.buf = appendLoadTurn(s.load.buf[:0], kindLoadNote, loadTurnMsg{ID: t.id, Tester: t.holder, Peer: t.peer, Flag: noteBegins})
	s.toEveryone(now, s.load.buf)
	s.seeTest(now, t.id, tester, peer)
}

// toEveryone sends msg on the reliable channel to every member this
// machine is linked to.
func (s *Session) toEveryone(now time.Duration, msg []byte) {
	for _, o := range s.members {
		if o.ID != s.self && o.linked && !o.removed {
			_ = s.ep.Send(now, o.ID, netcore.ChannelReliable, msg)
		}
	}
}

// onLoadNote takes a note over m's link: a beginning from the host, an
// end from the tester of the test it names.
func (s *Session) onLoadNote(now time.Duration, m *member, n loadTurnMsg) {
	tester, peer := s.player(n.Tester), s.player(n.Peer)
	switch {
	case tester == nil || peer == nil || tester == peer:
		return // a member that left, or one this machine never seated: nothing to count
	case n.Flag == noteBegins:
		if m.ID != hostID || s.role == roleHost {
			s.badLoad(m, errLoadWire)
			return
		}
		if tester.ID == s.self {
			return // the grant starts this machine's own test
		}
		s.seeTest(now, n.ID, tester, peer)
	case m.ID != n.Tester:
		s.badLoad(m, errLoadWire) // an end from anyone but the tester
	case s.load.seen != nil && s.load.seen.id == n.ID && s.load.seen.tester == tester:
		s.seenEnded(now, s.load.seen)
	case s.overTest(n.ID, tester.ID) == nil:
		s.early(tester.ID, n.ID).ended = true
	}
}

// early is the slot for what tester sent of test id before the host's
// beginning: one per tester, the latest test's.
func (s *Session) early(tester netcore.PeerID, id uint32) *loadEarly {
	if s.load.early == nil {
		s.load.early = map[netcore.PeerID]*loadEarly{}
	}
	e := s.load.early[tester]
	if e == nil || e.id != id {
		e = &loadEarly{id: id}
		s.load.early[tester] = e
	}
	return e
}

// onLoadResult takes a result over m's link: only from the tester it
// names, and for a test this machine was told of.
func (s *Session) onLoadResult(now time.Duration, m *member, r loadResultMsg) {
	tester, peer := s.player(r.Tester), s.player(r.Peer)
	switch {
	case m.ID != r.Tester || r.Tester == s.self:
		s.badLoad(m, errLoadWire)
	case tester == nil || peer == nil || tester == peer:
	case s.load.seen != nil && s.load.seen.id == r.ID && s.load.seen.tester == tester:
		s.endSeen() // a result ends the test; one that carries no cost asked for no waits
		s.takeResult(now, r)
	case s.overTest(r.ID, tester.ID) != nil:
		s.takeResult(now, r)
	default:
		e := s.early(tester.ID, r.ID)
		e.result = &r
	}
}

// takeResult publishes a test's result once, as this machine's own line,
// and gives the diagnosis the tester's figures.
func (s *Session) takeResult(now time.Duration, r loadResultMsg) {
	o := s.overTest(r.ID, r.Tester)
	if o == nil || o.published || o.peer != r.Peer {
		return
	}
	o.published = true
	tester, peer := s.byID[r.Tester], s.byID[r.Peer]
	tms := units.Millis(now)
	e := feed.LoadEvent{Header: feed.Header{Type: vocab.EventLoad, Frame: s.Frame(), TMs: &tms}, From: tester.Name, To: peer.Name, Result: r.Result}
	s.cfg.Sink.Emit(s.cfg.Name, &e)
	if f := figuresOf(r.Result); f.Up >= 0 || f.Down >= 0 {
		s.noteLoad(tester.Name, f)
	}
}

func figuresOf(res loadtest.Result) loadFigures {
	return loadFigures{Up: addedOf(res.Upload), Down: addedOf(res.Download)}
}

// onLoadWaits (the tester) takes a seated player's waits for the test it
// closes.
func (s *Session) onLoadWaits(now time.Duration, m *member, w loadWaitsMsg) {
	c := s.load.closing
	if s.player(m.ID) == nil || m.ID == s.self {
		s.badLoad(m, errLoadWire)
		return
	}
	if c == nil || c.id != w.ID {
		return // late: the result went out without it
	}
	i := slices.Index(c.waiting, m.ID)
	if i < 0 {
		return // a copy, or a machine that did not take part
	}
	c.waiting = slices.Delete(c.waiting, i, i+1)
	c.frames = append(c.frames, w.frames()...)
	c.longest = max(c.longest, w.Longest)
	if len(c.waiting) == 0 {
		s.finishClosing(now)
	}
}

// closeTest (the tester, at its test's end) tells every member the test
// has ended and waits for the seated players' waits; a test that loaded
// nothing cost nothing, and its result goes out at once.
func (s *Session) closeTest(now time.Duration, m *member, id uint32, res loadtest.Result) {
	c := &loadClosing{m: m, id: id, res: res, until: now + loadReportsWithin}
	if v := s.load.seen; v != nil && v.id == id && v.tester.ID == s.self {
		c.frames, c.longest = v.frames, v.longest
	}
	s.endSeen()
	s.load.closing = c
	if res.Cost == nil {
		s.finishClosing(now)
		return
	}
	for _, o := range s.members {
		if o.ID != s.self && s.player(o.ID) != nil {
			c.waiting = append(c.waiting, o.ID)
		}
	}
	s.load.buf = appendLoadTurn(s.load.buf[:0], kindLoadNote, loadTurnMsg{ID: id, Tester: s.self, Peer: m.ID, Flag: noteEnds})
	s.toEveryone(now, s.load.buf)
	if len(c.waiting) == 0 {
		s.finishClosing(now)
	}
}

// finishClosing (the tester) completes the result's cost with every
// seated machine's waits, publishes it here and hands it to every member.
func (s *Session) finishClosing(now time.Duration) {
	c := s.load.closing
	if c == nil {
		return
	}
	s.load.closing = nil
	res := c.res
	if res.Cost != nil {
		cost := *res.Cost
		cost.FramesLate = len(sortedFrames(c.frames))
		cost.MaxWaitMS = math.Round(units.Millis(c.longest)*10) / 10
		res.Cost = &cost
	}
	s.loadOver(now, c.m, res)
	s.load.buf = appendLoadResult(s.load.buf[:0], loadResultMsg{ID: c.id, Tester: s.self, Peer: c.m.ID, Result: res})
	s.toEveryone(now, s.load.buf)
	if f := figuresOf(res); f.Up >= 0 || f.Down >= 0 {
		s.noteLoad(s.cfg.Name, f)
	}
}

// tickSeen lapses what waits too long: a test whose end never came, the
// tester's wait for waits that do not come.
func (s *Session) tickSeen(now time.Duration) {
	if v := s.load.seen; v != nil && (now >= v.began+loadSeenFor || v.tester.removed || v.peer.removed) {
		s.forgetSeen(now)
	}
	if c := s.load.closing; c != nil && (now >= c.until || s.quitting) {
		s.finishClosing(now)
	}
}

// seenDeadline is when tickSeen next has something to do.
func (s *Session) seenDeadline() (time.Duration, bool) {
	d, ok := time.Duration(0), false
	if v := s.load.seen; v != nil {
		d, ok = v.began+loadSeenFor, true
	}
	if c := s.load.closing; c != nil && (!ok || c.until < d) {
		d, ok = c.until, true
	}
	return d, ok
}

// seenView is the test this machine knows of, for the View.
func (s *Session) seenView() *feed.LoadSeen {
	v := s.load.seen
	if v == nil {
		return nil
	}
	return &feed.LoadSeen{From: v.tester.Name, To: v.peer.Name, Began: v.began, For: loadtest.Longest}
}
