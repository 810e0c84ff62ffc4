package session

import (
	"errors"
	"time"
	"unicode/utf8"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/rungs"
)

// kindWatch (host → late watcher, reliable channel): the game as the host's
// peer holds it, and the network events since the last one.
// docs/live.md has the bytes.
const kindWatch byte = 0x29

// Limits of a watch message: far above what a session holds, so that a
// decoder refuses a count the bytes cannot hold before allocating.
const (
	maxWatchEvents = 4096
	maxWatchText   = 4096
	watchSnapshot  = 0x01 // flags: the first, to start from
	// watchGame (flags): the state and every event carry their session
	// time, u64 nanoseconds after their frame, noGame for none (a line from
	// before the game started). A message without it (an older host) is
	// read, its times estimated from frames.
	watchGame = 0x02
	noGame    = ^uint64(0)
	// maxWatchGame bounds a session time: a year of game.
	maxWatchGame = 366 * 24 * time.Hour
)

var errWatchEvent = errors.New("live: watch event of an unknown kind")

// watchMsg is one kindWatch message.
type watchMsg struct {
	Snapshot bool   // the first: the watcher starts from it
	Version  uint32 // the roster version the state's machines are of
	State    probe.WatchState
	Events   []probe.WatchEvent // in the order they executed
}

func appendDur(b []byte, d time.Duration) []byte { return le.AppendUint64(b, uint64(max(d, 0))) }

func appendGame(b []byte, d time.Duration, known bool) []byte {
	if !known {
		return le.AppendUint64(b, noGame)
	}
	return appendDur(b, d)
}

func appendTiming(b []byte, t rungs.Timing) []byte {
	return le.AppendUint16(le.AppendUint16(b, uint16(t.SendPeriod)), uint16(t.LookAhead))
}

func appendWatch(b []byte, w watchMsg) []byte {
	b = append(b, kindWatch)
	f := byte(watchGame)
	if w.Snapshot {
		f |= watchSnapshot
	}
	b = append(b, f)
	b = le.AppendUint32(b, w.Version)
	st := &w.State
	b = le.AppendUint32(b, uint32(st.Frame))
	b = appendGame(b, st.Game, st.GameKnown)
	b = le.AppendUint16(b, uint16(st.Speed))
	b = le.AppendUint16(b, uint16(st.FPS))
	b = appendTiming(b, st.InForce)
	b = appendTiming(b, st.Target)
	b = le.AppendUint16(b, uint16(st.Master))
	b = le.AppendUint16(b, uint16(len(st.Players)))
	for _, p := range st.Players {
		var pf byte
		if p.Observer {
			pf |= 1
		}
		if p.Removed {
			pf |= 2
		}
		b = le.AppendUint16(b, uint16(p.ID))
		b = append(b, pf, byte(len(p.Name)))
		b = append(b, p.Name...)
	}
	b = le.AppendUint16(b, uint16(len(st.Reports)))
	for _, r := range st.Reports {
		b = le.AppendUint16(b, uint16(r.Player))
		b = appendReport(b, r.Reported, r.Report)
	}
	b = le.AppendUint16(b, uint16(len(w.Events)))
	for _, e := range w.Events {
		b = append(b, byte(e.Kind))
		b = le.AppendUint32(b, uint32(e.Frame))
		b = appendGame(b, e.Game, e.GameKnown)
		switch e.Kind {
		case probe.WatchTiming:
			b = le.AppendUint32(b, uint32(e.Decided))
			b = appendTiming(b, e.Timing)
			b = le.AppendUint16(b, uint16(e.FPS))
			b = append(b, byte(e.Reason))
		case probe.WatchActive:
			b = appendTiming(b, e.Timing)
			b = le.AppendUint16(b, uint16(e.FPS))
		case probe.WatchMaster, probe.WatchRemoved:
			b = le.AppendUint16(b, uint16(e.Player))
		case probe.WatchReportK:
			b = le.AppendUint16(b, uint16(e.Player))
			b = appendReport(b, true, e.Report)
		case probe.WatchMessage:
			t := e.Text
			if len(t) > maxWatchText {
				t = t[:maxWatchText]
				for !utf8.ValidString(t) {
					t = t[:len(t)-1]
				}
			}
			b = le.AppendUint16(b, uint16(len(t)))
			b = append(b, t...)
		}
	}
	return b
}

// appendReport: flags (1 reported, 2 with a round trip), the frame it
// executed on, then round trip, wait and processing time in nanoseconds.
func appendReport(b []byte, reported bool, r rungs.Report) []byte {
	var f byte
	if reported {
		f |= 1
	}
	if r.HasRTT {
		f |= 2
	}
	b = append(b, f)
	b = le.AppendUint32(b, uint32(max(r.Frame, 0)))
	b = appendDur(b, r.RTT)
	b = appendDur(b, r.Wait)
	return appendDur(b, r.Process)
}

// watchReader reads a watch message; the first error sticks. timed: the
// message carries session times (watchGame).
type watchReader struct {
	p     []byte
	err   error
	timed bool
}

// game is a session time where the message carries them: at most
// maxWatchGame; false where it carries none.
func (r *watchReader) game() (time.Duration, bool) {
	if !r.timed {
		return 0, false
	}
	b := r.take(8)
	if b == nil {
		return 0, false
	}
	v := le.Uint64(b)
	if v == noGame {
		return 0, false
	}
	if v > uint64(maxWatchGame) {
		r.fail(errLobbyField)
		return 0, false
	}
	return time.Duration(v), true
}

func (r *watchReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.p) < n {
		r.err = errLobbyShort
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *watchReader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *watchReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return le.Uint16(b)
	}
	return 0
}

func (r *watchReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return le.Uint32(b)
	}
	return 0
}

// frame is a frame number: at most 2^31-1 on every platform.
func (r *watchReader) frame() int {
	v := r.u32()
	if v > 1<<31-1 {
		r.fail(errLobbyField)
	}
	return int(v)
}

func (r *watchReader) dur() time.Duration {
	b := r.take(8)
	if b == nil {
		return 0
	}
	v := le.Uint64(b)
	if v > uint64(maxDropLimit) {
		// No round trip, wait or processing time of a live game is a day.
		r.fail(errLobbyField)
		return 0
	}
	return time.Duration(v)
}

func (r *watchReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// timing is a timing event's target: valid as an event (rungs.Valid).
func (r *watchReader) timing() rungs.Timing {
	t := rungs.Timing{SendPeriod: int(r.u16()), LookAhead: int(r.u16())}
	if r.err == nil && !t.Valid() {
		r.fail(errLobbyField)
	}
	return t
}

// inForce is a timing in force, which a staged decrease may hold past
// what an event may ask for (rungs.ValidInForce).
func (r *watchReader) inForce() rungs.Timing {
	t := rungs.Timing{SendPeriod: int(r.u16()), LookAhead: int(r.u16())}
	if r.err == nil && !t.ValidInForce() {
		r.fail(errLobbyField)
	}
	return t
}

func (r *watchReader) fps() int {
	v := int(r.u16())
	if v < minSpeed || v > maxSpeed {
		r.fail(errLobbyField)
	}
	return v
}

func (r *watchReader) report() (bool, rungs.Report) {
	f := r.u8()
	if f&^3 != 0 {
		r.fail(errLobbyField)
	}
	rep := rungs.Report{Frame: r.frame(), RTT: r.dur(), HasRTT: f&2 != 0}
	rep.Wait, rep.Process = r.dur(), r.dur()
	return f&1 != 0, rep
}

// watchFixed: kind, flags, version, frame, speed, fps, two timings, master,
// and the three counts at their smallest (no players is refused).
const watchFixed = 1 + 1 + 4 + 4 + 2 + 2 + 4 + 4 + 2

// players reads the snapshot's players into st: at least one, unique
// PeerIDs, valid names. seen holds their IDs.
func (r *watchReader) players(st *probe.WatchState) (seen map[netcore.PeerID]bool, err error) {
	n := int(r.u16())
	if r.err == nil && (n == 0 || n > maxMembers || n > len(r.p)/5) {
		return nil, errLobbyField
	}
	seen = make(map[netcore.PeerID]bool, n)
	for range n {
		wp := probe.WatchPlayer{ID: netcore.PeerID(r.u16())}
		pf := r.u8()
		name := string(r.take(int(r.u8())))
		if r.err != nil {
			return nil, r.err
		}
		if wp.ID == netcore.PeerUnassigned || seen[wp.ID] {
			return nil, errLobbyDup
		}
		seen[wp.ID] = true
		if pf&^3 != 0 {
			return nil, errLobbyField
		}
		if err := checkName(name); err != nil {
			return nil, err
		}
		wp.Name, wp.Observer, wp.Removed = name, pf&1 != 0, pf&2 != 0
		st.Players = append(st.Players, wp)
	}
	return seen, nil
}

// reports reads the report record (S7) into st: at most one a player, each
// of a player in the snapshot.
func (r *watchReader) reports(st *probe.WatchState, seen map[netcore.PeerID]bool) error {
	n := int(r.u16())
	if r.err == nil && n > len(st.Players) {
		return errLobbyField
	}
	for range n {
		wr := probe.WatchReport{Player: netcore.PeerID(r.u16())}
		wr.Reported, wr.Report = r.report()
		if r.err == nil && !seen[wr.Player] {
			return errLobbyField
		}
		st.Reports = append(st.Reports, wr)
	}
	return nil
}

// events reads the network events that follow the state, each naming only
// players of the snapshot.
func (r *watchReader) events(seen map[netcore.PeerID]bool) ([]probe.WatchEvent, error) {
	n := int(r.u16())
	if r.err == nil && (n > maxWatchEvents || n > len(r.p)/5) {
		return nil, errLobbyField
	}
	var out []probe.WatchEvent
	for range n {
		if r.err != nil {
			break
		}
		e := r.event()
		if r.err == nil && e.Player != 0 && !seen[e.Player] {
			r.fail(errLobbyField)
		}
		out = append(out, e)
	}
	return out, r.err
}

// event reads one network event: its kind decides its fields.
func (r *watchReader) event() probe.WatchEvent {
	e := probe.WatchEvent{Kind: probe.WatchEventKind(r.u8()), Frame: r.frame()}
	e.Game, e.GameKnown = r.game()
	switch e.Kind {
	case probe.WatchTiming:
		e.Decided = r.frame()
		e.Timing = r.timing()
		e.FPS = r.fps()
		e.Reason = rungs.Reason(r.u8())
		if e.Reason < rungs.Initial || e.Reason > rungs.Rate {
			r.fail(errLobbyField)
		}
	case probe.WatchActive:
		e.Timing = r.inForce()
		e.FPS = r.fps()
	case probe.WatchMaster, probe.WatchRemoved:
		e.Player = netcore.PeerID(r.u16())
	case probe.WatchReportK:
		e.Player = netcore.PeerID(r.u16())
		var ok bool
		ok, e.Report = r.report()
		if !ok {
			r.fail(errLobbyField)
		}
	case probe.WatchMessage:
		l := int(r.u16())
		if l > maxWatchText {
			r.fail(errLobbyField)
		}
		e.Text = string(r.take(l))
		if r.err == nil && !utf8.ValidString(e.Text) {
			r.fail(errLobbyField)
		}
	default:
		r.fail(errWatchEvent)
	}
	return e
}

func decodeWatch(p []byte) (watchMsg, error) {
	var w watchMsg
	if len(p) < watchFixed+2 {
		return w, errLobbyShort
	}
	if p[0] != kindWatch {
		return w, errLobbyKind
	}
	r := &watchReader{p: p[1:]}
	f := r.u8()
	if f&^(watchSnapshot|watchGame) != 0 {
		return w, errLobbyField
	}
	w.Snapshot = f&watchSnapshot != 0
	r.timed = f&watchGame != 0
	w.Version = r.u32()
	if w.Version == 0 {
		return w, errLobbyField
	}
	st := &w.State
	st.Frame = r.frame()
	st.Game, st.GameKnown = r.game()
	st.Speed = r.fps()
	st.FPS = r.fps()
	st.InForce = r.inForce()
	st.Target = r.timing()
	st.Master = netcore.PeerID(r.u16())
	seen, err := r.players(st)
	if err != nil {
		return watchMsg{}, err
	}
	if st.Master != 0 && !seen[st.Master] {
		return watchMsg{}, errLobbyField
	}
	if err := r.reports(st, seen); err != nil {
		return watchMsg{}, err
	}
	if w.Events, err = r.events(seen); err != nil {
		return watchMsg{}, err
	}
	if r.err != nil {
		return watchMsg{}, r.err
	}
	if len(r.p) != 0 {
		return watchMsg{}, errLobbyLong
	}
	return w, nil
}
