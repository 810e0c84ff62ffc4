package session

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/units"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
)

// Load tests (docs/load-test.md): this machine runs at most one at a time,
// as the tester or as the peer, and only between two seated players of a
// running game. A tester first takes the session's turn from the host
// (one test at a time per session; loadturn.go), then runs the test on the
// pair's own link; it never runs one over the relay, and lets a minute
// pass between two of its tests. While a test runs, the pair's link is
// traced (the where of the result) and the game's stalls and timing are
// watched (the result's cost); the diagnosis and alerts keep quiet about
// the pair.

// LoadConfig is what a machine's flags say of load tests.
type LoadConfig struct {
	// Refuse: take no tests from others (--no-load-tests).
	Refuse bool
	// Cap is the most either direction carries, bit/s (--load-cap); 0 is
	// 50 Mbit/s.
	Cap int64
	// Test names a member to test against once the game runs (--load-test);
	// the test starts After the start (default loadTestAfter) and waits its
	// turn up to loadWaitFor.
	Test  string
	After time.Duration
}

// Load-test timing of the session.
const (
	// loadGap is how long a machine waits after its test before it runs
	// another, and how long a peer refuses the same tester's next one.
	loadGap = time.Minute
	// loadWaitFor is how long a test asked for on the command line waits
	// for the session's turn, loadTryFor how long one from the TUI tries
	// (a turn held by another is refused at once; this bounds a peer
	// that never gets ready); loadClaimEvery paces the asks, and
	// loadRetryBusy the asks of a waiting test the host found busy.
	loadWaitFor    = time.Minute
	loadTryFor     = 5 * time.Second
	loadClaimEvery = 500 * time.Millisecond
	loadRetryBusy  = 2 * time.Second
	// loadTestAfter is when a --load-test test starts by default: the game
	// has run long enough to have an idle picture of every link.
	loadTestAfter = 15 * time.Second
	// whereEvery paces the reading of a test's trace (watchWhere).
	whereEvery = 250 * time.Millisecond
)

// loadState is the session's load testing.
type loadState struct {
	run     *loadRun
	want    *loadWant                        // a test asked for, waiting for its turn
	results []feed.LoadEvent                 // latest finished test toward each peer
	ended   bool                             // this machine has run a test as tester
	endAt   time.Duration                    // when its last one ended
	byTest  map[netcore.PeerID]time.Duration // (peer end) when each tester's last test here ended
	flagged bool                             // the --load-test test has been asked for
	turn    loadTurn                         // (host) who holds the session's turn
	turnEnd map[netcore.PeerID]time.Duration // (host) when each holder's last turn ended
	notice  loadNotice                       // (peer end) the host's word on the test this machine may serve
	shown   map[loadShown]time.Duration      // refusals shown, and when the latest of each came
	claims  claimsNow                        // (host) the members whose claim it took at this instant
	buf     []byte
	// everyone told (loadseen.go)
	seen    *loadSeen                     // the test between two members running now, as this machine knows of it
	over    []loadOverRec                 // the latest tests that have ended here
	early   map[netcore.PeerID]*loadEarly // a tester's end or result that came before the host's beginning
	closing *loadClosing                  // (the tester) its test's result, waiting for the others' waits
}

// loadWant is a test asked for and not started yet.
type loadWant struct {
	m         *member
	id        uint32
	wait      bool          // wait for the turn (the command line) instead of stopping busy
	until     time.Duration // give up then
	nextClaim time.Duration
}

// loadRun is the test in progress.
type loadRun struct {
	m      *member
	id     uint32
	t      *loadtest.Test
	tester bool
	// cost: the timing the test raised (the waits are counted where
	// they fall: loadseen.go).
	rungFrom, rungTo int
	raisedAt         time.Duration
	raisedFor        time.Duration
	raised           bool
	// the trace's reading of each loaded hold, and the hold marked last
	// (watchWhere)
	holdWhere [len(loadHolds)]*loadtest.WhereAt
	marked    vocab.LoadPhase
	nextRead  time.Duration
}

// StartLoadTest asks for a load test from this machine toward the member
// named peer. Without wait a test that cannot start now (another holds the
// session, this machine's last ended less than a minute ago) ends at once
// with stopped "busy"; with wait it waits its turn for up to a minute.
func (s *Session) StartLoadTest(now time.Duration, peer string, wait bool) {
	s.wb.now = now
	m := s.memberNamed(peer)
	switch {
	case !s.started || s.peer == nil:
		s.message("No load test before the game starts: it measures what a busy line costs the game")
		return
	case s.role == RoleObserver:
		s.message("No load test from a watcher: a load test runs between two players of the game")
		return
	case m == nil || m.ID == s.self || !m.linked || m.removed:
		s.message(fmt.Sprintf("No load test: %s is not a member this machine has a link to", peer))
		return
	case m.Observer:
		s.message(fmt.Sprintf("No load test to %s: a watcher takes no load tests, only players do", m.Name))
		return
	case !s.hostThere():
		s.message("No load test: the host has left the game, and only the host gives the session's turn")
		return
	case s.load.want != nil && wait:
		s.message(fmt.Sprintf("No load test to %s: this machine's test to %s waits its turn already", peer, s.load.want.m.Name))
		return
	case !wait && (s.load.run != nil || s.load.want != nil || (s.load.ended && now < s.load.endAt+loadGap)):
		s.loadOver(now, m, loadtest.Result{Stopped: stopText("busy")})
		return
	case isRelayed(m.Addr):
		s.loadOver(now, m, loadtest.Result{Stopped: stopText("relayed")})
		return
	}
	// A test that waits may queue behind the one this machine takes part
	// in now: tickWant asks for the turn once that is over.
	until := now + loadTryFor
	if wait {
		until = now + loadWaitFor
	}
	s.load.want = &loadWant{m: m, id: s.loadID(), wait: wait, until: until, nextClaim: now}
}

// CancelLoadTest stops this machine's test, running or waiting.
func (s *Session) CancelLoadTest(now time.Duration) {
	s.wb.now = now
	if w := s.load.want; w != nil {
		s.dropWant(now, "cancelled")
	}
	if r := s.load.run; r != nil {
		r.t.Close(now)
	}
}

func (s *Session) memberNamed(name string) *member {
	for _, m := range s.members {
		if m.Name == name && !m.removed {
			return m
		}
	}
	return nil
}

// loadID is a fresh test id: random, so that a stale message of another
// test never matches.
func (s *Session) loadID() uint32 {
	var b [4]byte
	if _, err := s.rnd.Read(b[:]); err != nil || binary.LittleEndian.Uint32(b[:]) == 0 {
		return uint32(s.Frame()) | 1
	}
	return binary.LittleEndian.Uint32(b[:])
}

func stopText(s string) *string { return &s }

// tickLoad moves the load testing on: the --load-test test once its time
// has come, a waiting test's claim, the running test.
func (s *Session) tickLoad(now time.Duration) {
	if s.done {
		return
	}
	s.tickSeen(now)
	if s.quitting {
		return
	}
	if c := s.cfg.Load; c.Test != "" && !s.load.flagged && s.started && now >= s.startedAt+s.loadAfter() {
		s.load.flagged = true
		s.StartLoadTest(now, c.Test, true)
	}
	s.tickTurn(now)
	if w := s.load.want; w != nil {
		s.tickWant(now, w)
	}
	if r := s.load.run; r != nil {
		if d, ok := r.t.NextDeadline(); ok && now >= d {
			r.t.Tick(now)
		}
		if r = s.load.run; r != nil && r.tester {
			s.watchWhere(r)
		}
	}
}

func (s *Session) loadAfter() time.Duration {
	if s.cfg.Load.After > 0 {
		return s.cfg.Load.After
	}
	return loadTestAfter
}

func (s *Session) startRun(now time.Duration, r *loadRun) {
	s.load.run = r
	s.syncQuiet()
	s.syncTrace()
	r.t.Tick(now)
}

// loadSender sends a test's messages to m, unnumbered (L2).
func (s *Session) loadSender(m *member) func([]byte) {
	return func(msg []byte) { _ = s.ep.SendUnnumbered(s.wb.now, m.ID, msg, false) }
}

// testerDone ends this machine's test: the result gets its where and
// cost, and goes out once the other players' waits are in (closeTest).
func (s *Session) testerDone(id uint32, res loadtest.Result) {
	now := s.wb.now
	r := s.load.run
	if r == nil {
		return
	}
	s.load.run = nil
	s.toHost(now, loadTurnMsg{ID: id, Tester: s.self, Peer: r.m.ID, Flag: turnRelease})
	s.load.ended, s.load.endAt = true, now
	if res.IdleRTTMS != nil { // past the idle phase: load went out, and the game paid for it
		res.Where = r.finishWhere()
		res.Cost = r.cost(now)
	}
	s.closeTest(now, r.m, id, res)
	s.afterRun()
}

func (s *Session) afterRun() {
	s.syncQuiet()
	s.syncTrace()
}

// addedOf is the round trip a direction's load added, -1 when not
// measured.
func addedOf(d *loadtest.DirResult) time.Duration {
	if d == nil || !d.HasAdded {
		return -1
	}
	return d.Added
}

func (s *Session) noteLoad(player string, f loadFigures) {
	if s.peer == nil {
		return
	}
	ms := func(d time.Duration) float64 {
		if d < 0 {
			return math.NaN()
		}
		return units.Millis(d)
	}
	s.peer.NoteLoad(diagnosis.Load{Player: player, UploadMs: ms(f.Up), DownloadMs: ms(f.Down)})
}

// loadOver publishes the end of this machine's own test, here (the other
// machines publish its result when it reaches them: loadseen.go), and
// keeps it as the latest toward m.
func (s *Session) loadOver(now time.Duration, m *member, res loadtest.Result) {
	// A test is about the line, not a frame: its time is what places it,
	// here as on the wire (the live driver stamps the same clock).
	tms := units.Millis(now)
	e := feed.LoadEvent{Header: feed.Header{Type: vocab.EventLoad, Frame: s.Frame(), TMs: &tms}, From: s.cfg.Name, To: m.Name, Result: res}
	kept := false
	for i := range s.load.results {
		if s.load.results[i].To == m.Name {
			s.load.results[i], kept = e, true
		}
	}
	if !kept {
		s.load.results = append(s.load.results, e)
	}
	// A game's event, not the lobby's: it goes where the peer's events go
	// (the simulator prints those alone).
	s.cfg.Sink.Emit(s.cfg.Name, &e)
	if res.Stopped != nil {
		s.message(fmt.Sprintf("Load test to %s stopped: %s", m.Name, *res.Stopped))
	}
}

// loadHolds are the loaded phases whose trace readings make the where.
var loadHolds = vocab.LoadHolds

// watchWhere reads, while a loaded hold runs, where the trace puts the
// pair's added delay. Each hold marks the trace as it begins and reads
// only the answers since (Endpoint.PathSinceMark): a hop's figures over
// the whole trace are the median of a hundred answers, and those from
// before the load would pull them down to the idle line. The latest
// reading of each hold stands for it; the where is the hold that adds
// most (finishWhere).
func (s *Session) watchWhere(r *loadRun) {
	if !s.trace.on[r.m.ID] {
		return
	}
	ph := r.t.Phase()
	i := slices.Index(loadHolds[:], ph)
	if i < 0 {
		return
	}
	if r.marked != ph {
		r.marked = ph
		s.ep.MarkPath(r.m.ID)
		return
	}
	// The trace gains an answer per hop a second: reading it every Tick
	// of a test (thousands a second) would only repeat the analysis.
	now := s.wb.now
	if now < r.nextRead {
		return
	}
	r.nextRead = now + whereEvery
	res, ok := s.ep.PathSinceMark(r.m.ID)
	switch d := res.DelayStarts; {
	case !ok:
	case d != nil:
		r.holdWhere[i] = holdWhere(ph, d.Link, d.TTL, d.Added)
	case res.OneHop && len(res.Hops) == 1:
		// A one-hop path places nothing by itself and is not probed (the
		// peer is the only hop, and the test's own probes time that same
		// round trip), but a loaded hold knows who sends: the rise of the
		// test's round trip in this hold over its idle phase is the hold's.
		if added, ok := holdRise(r.t.Progress(), ph); ok && added >= minWhere {
			r.holdWhere[i] = holdWhere(ph, vocab.HopPeer, res.Hops[0].TTL, added)
		}
	}
}

// minWhere is the least rise of a one-hop path's round trip during a
// loaded hold that names a where: the trace's own least added delay.
const minWhere = 5 * time.Millisecond

// holdRise is how much the median round trip of the test's probes in hold
// ph rose over its idle phase's, once both have samples.
func holdRise(p loadtest.Progress, ph vocab.LoadPhase) (time.Duration, bool) {
	var idle, hold *loadtest.PhaseProgress
	for i := range p.Phases {
		switch p.Phases[i].Name {
		case vocab.LoadIdle:
			idle = &p.Phases[i]
		case ph:
			hold = &p.Phases[i]
		}
	}
	if idle == nil || hold == nil || idle.Samples == 0 || hold.Samples == 0 {
		return 0, false
	}
	return hold.Median - idle.Median, true
}

// holdWhere is where a loaded hold's trace puts the added delay. The
// trace names the link into the hop where the delay starts, and calls the
// last link `peer` whatever its hop: the other end's side. In the upload
// hold only this machine sends load, so a delay that starts at hop 1 when
// the peer is hop 1 (no router between) is this machine's own way out —
// its uplink's queue — not the peer's. The added round trip is written in
// ms rounded to 0.1, as the result's figures are.
func holdWhere(ph vocab.LoadPhase, link vocab.HopLink, ttl int, added time.Duration) *loadtest.WhereAt {
	if ph == vocab.LoadUpload && ttl == 1 && link == vocab.HopPeer {
		link = vocab.HopUplink
	}
	return &loadtest.WhereAt{Link: link, TTL: ttl, AddedMS: units.Millis(added.Round(100 * time.Microsecond))}
}

// finishWhere is the hold whose reading adds most, nil without one: a
// copy, which a View may hold.
func (r *loadRun) finishWhere() *loadtest.WhereAt {
	return bestWhere(r.holdWhere)
}

// bestWhere is the reading that adds most of the holds' (upload, download,
// both), nil without one. The both hold loads both directions, so the
// link into a hop is as ambiguous there as the trace's naming: where the
// upload or the download hold read the same hop on its own, the link is
// named as the one of them that added more there names it (the upload's
// uplink at hop 1 is the tester's own way out, not the peer's).
func bestWhere(holds [len(loadHolds)]*loadtest.WhereAt) *loadtest.WhereAt {
	var w *loadtest.WhereAt
	for _, h := range holds {
		if h != nil && (w == nil || h.AddedMS > w.AddedMS) {
			w = h
		}
	}
	if w == nil {
		return nil
	}
	out := *w
	if w == holds[2] {
		var alone *loadtest.WhereAt
		for _, h := range holds[:2] {
			if h != nil && h.TTL == w.TTL && (alone == nil || h.AddedMS > alone.AddedMS) {
				alone = h
			}
		}
		if alone != nil {
			out.Link = alone.Link
		}
	}
	return &out
}

// loadPeerEvent watches the game's events for a test's cost: this
// machine's waits during any test it knows of, and the timing during its
// own.
func (s *Session) loadPeerEvent(e feed.Event) {
	if st, ok := e.(*feed.StallEvent); ok {
		s.countWait(st)
	}
	r := s.load.run
	if r == nil {
		return
	}
	now := s.wb.now
	switch e := e.(type) {
	case *feed.TimingActiveEvent:
		switch {
		case e.Rung > r.rungFrom && !r.raised:
			r.raised, r.raisedAt = true, now
		case e.Rung <= r.rungFrom && r.raised:
			r.raised, r.raisedFor = false, r.raisedFor+now-r.raisedAt
		}
		r.rungTo = max(r.rungTo, e.Rung)
	}
}

// cost is the game's cost of the test at its end as this machine sees it
// alone: the timing the test raised and for how long (up to the end of
// the test). The frames late and the longest wait are every seated
// machine's (finishClosing).
func (r *loadRun) cost(now time.Duration) *loadtest.GameCost {
	held := r.raisedFor
	if r.raised {
		held += now - r.raisedAt
	}
	return &loadtest.GameCost{RungFrom: r.rungFrom, RungTo: r.rungTo, ForMS: math.Round(units.Millis(held))}
}

// loadDeadline is when the load testing next needs a Tick.
func (s *Session) loadDeadline() (time.Duration, bool) {
	if s.done {
		return 0, false
	}
	d, ok := s.seenDeadline()
	if s.quitting {
		return d, ok
	}
	take := func(t time.Duration) {
		if !ok || t < d {
			d, ok = t, true
		}
	}
	if c := s.cfg.Load; c.Test != "" && !s.load.flagged && s.started {
		take(s.startedAt + s.loadAfter())
	}
	if d, ok := s.turnDeadline(); ok {
		take(d)
	}
	if w := s.load.want; w != nil {
		take(min(w.until, max(w.nextClaim, s.load.endAt+loadGap)))
	}
	if r := s.load.run; r != nil {
		if t, has := r.t.NextDeadline(); has {
			take(t)
		}
	}
	return d, ok
}

// LoadView is this machine's load testing for the View.
func (s *Session) loadView(now time.Duration) *feed.LoadView {
	v := &feed.LoadView{Refuses: s.cfg.Load.Refuse, Cap: s.cfg.Load.Cap, Results: append([]feed.LoadEvent(nil), s.load.results...),
		Seen: s.seenView()}
	if v.Cap <= 0 {
		v.Cap = loadtest.DefaultCap
	}
	if s.load.ended && now < s.load.endAt+loadGap {
		v.NextAt = s.load.endAt + loadGap
	}
	if w := s.load.want; w != nil {
		v.Running = &feed.LoadRun{Peer: w.m.Name, Tester: true, Waiting: true}
	}
	if r := s.load.run; r != nil {
		v.Running = &feed.LoadRun{Peer: r.m.Name, Tester: r.tester, Progress: r.t.Progress()}
		if r.tester {
			v.Running.Where = r.finishWhere()
		}
	}
	return v
}
