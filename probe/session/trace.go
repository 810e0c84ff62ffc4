package session

import (
	"slices"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

// Which links this machine traces (docs/path.md). Every link whose path
// has more than one hop is traced at a low rate all the time (the
// baseline: the tracer finds out a path's length by tracing it, and a
// one-hop path is not probed again). Some are looked at closely, a round
// of probes a second (netcore.Endpoint.PinTrace): the link the Path view
// shows (feed.Control.Path, until Control.PathClosed), the link --trace
// names (Config.Trace, for the whole session) and, while the latest
// diagnosis blames them, the links to its culprit and, when this machine is
// one end of its culprit path, the link to the other end. A culprit
// machine looks closely at its link to the first other player in house
// order: its own home and line are what it sees first-hand, and the
// diagnosis needs that trace to say where its delay starts
// (docs/diagnosis.md). With no culprit named, a machine that looks at
// nothing else looks at one link when some player's share of the round
// trip stands out (cause latency): its own path when it is that player,
// else the link to the first of them — a hop their paths share may be the
// reason. Never more than maxTraced links are pinned so; the incident
// engine bursts the links of an open incident for a while on its own
// (probe/incidents.go), and the tracer a link that leaves its baseline.
//
// With Config.NoTrace nothing is traced and no probe is sent; a link the
// Path view shows says so.
//
// A relayed link is never traced: its datagrams leave toward the host, so
// a probe would measure the path to the host, not to the peer. Its
// PathView says so.

// relayedWhy is why a relayed link shows no trace.
const relayedWhy = "this link is relayed through the host: its datagrams have no path of their own to trace"

// noTraceWhy is why a machine run with --no-trace shows no trace.
const noTraceWhy = "tracing is off on this machine (--no-trace, or trace = false in the config file): it sends no probes"

// maxTraced bounds the names the policy pins: the viewed link, the
// --trace link, the culprit (or, on the culprit's machine, its first
// other player) and the other end of the culprit path.
const maxTraced = 4

// pathEvery is how often a link traced at the baseline's pace prints its
// `path` line when its judgement holds; a bursting link prints one a
// second.
const pathEvery = 10 * time.Second

// traceState is what the session keeps of the policy.
type traceState struct {
	viewed string                  // the link the Path view shows; "" while it is closed
	on     map[netcore.PeerID]bool // links Endpoint.SetTraced turned on
	pinned map[netcore.PeerID]bool // links Endpoint.PinTrace pins
	names  [maxTraced + 1]string   // wantedNames's: tracedNames's, and the load test's peer
	// tracedNames's answer for the latest diagnosis d and viewed link:
	// a diagnosis is never changed once made (a new one is a new
	// value), so the same pointer names the same links.
	policy       [maxTraced]string
	policyN      int
	policyD      *diagnosis.Diagnosis
	policyViewed string
	policyOK     bool
	// printed is, by link, when its last `path` line went out and the
	// judgement it said.
	printed map[netcore.PeerID]printedPath
	// What syncTrace's last look at the members went by: the policy's
	// names, whether the endpoint traces, this machine's ID. stale says
	// a member joined, left or changed since (membersChanged), or one the
	// policy traces was still waiting for its endpoint link.
	synced     [maxTraced + 1]string
	syncedN    int
	syncedCan  bool
	syncedSelf netcore.PeerID
	stale      bool
}

// printedPath is a link's last `path` line: when, and what it judged.
type printedPath struct {
	at  time.Duration
	key pathKey
}

// pathKey is what a path line judges: where delay and loss start, which
// hops are rate-limited, whether loss waits for probes, and what the path
// is.
type pathKey struct {
	delay, loss       feed.PathStart
	hasDelay, hasLoss bool
	limited           uint64
	pending           bool
	complete, oneHop  bool
	available, burst  bool
	hops              int
}

func judgementOf(pv *feed.PathView) pathKey {
	k := pathKey{pending: pv.LossPending != nil, complete: pv.Complete, oneHop: pv.OneHop, available: pv.Available, burst: pv.Bursting, hops: len(pv.Hops)}
	if d := pv.DelayStarts; d != nil {
		k.delay, k.hasDelay = feed.PathStart{TTL: d.TTL, Link: d.Link}, true
	}
	if l := pv.LossStarts; l != nil {
		k.loss, k.hasLoss = feed.PathStart{TTL: l.TTL, Link: l.Link}, true
	}
	for _, h := range pv.Hops {
		if h.RateLimited && h.TTL < 64 {
			k.limited |= 1 << h.TTL
		}
	}
	return k
}

// tracedNames appends to dst the peers machine self traces, at most
// maxTraced, each once, never self: pinned (--trace), viewed (the Path
// view) and, from the latest diagnosis d (nil before the first), its
// culprit (the first other player when self is the culprit) and, when self
// is one end of the culprit path, the other end.
func tracedNames(dst []string, self, pinned, viewed string, d *diagnosis.Diagnosis) []string {
	add := func(n string) {
		if n != "" && n != self && !slices.Contains(dst, n) && len(dst) < maxTraced {
			dst = append(dst, n)
		}
	}
	firstOther := func() {
		for _, p := range d.Players {
			if p.Player != self {
				add(p.Player)
				return
			}
		}
	}
	add(pinned)
	add(viewed)
	if d != nil {
		add(d.Culprit)
		if d.Culprit == self {
			firstOther()
		}
		if d.Culprit == "" && len(dst) == 0 {
			// Nobody named, but players whose share of the round trip
			// stands out: a hop their paths share may be why (a shared
			// hop names nobody). A machine that traces nothing else
			// traces one link: its own path when it is one of them, else
			// the link to the first of them.
			for _, p := range d.Players {
				if !slices.Contains(p.Causes, diagnosis.CauseLatency) {
					continue
				}
				if p.Player == self {
					firstOther()
				} else {
					add(p.Player)
				}
				break
			}
		}
		if l := d.CulpritLink; l != nil {
			switch self {
			case l[0]:
				add(l[1])
			case l[1]:
				add(l[0])
			}
		}
	}
	return dst
}

// ShowPath says which link the Path view shows ("": the view closed). Its
// trace starts now and stops when the view closes, unless something else
// keeps the link traced.
func (s *Session) ShowPath(name string) {
	s.trace.viewed = name
	s.syncTrace()
}

// wantedNames is the policy's names now.
func (s *Session) wantedNames() []string {
	var d *diagnosis.Diagnosis
	if s.peer != nil {
		d = s.peer.LastDiagnosis()
	}
	t := &s.trace
	if !t.policyOK || t.policyD != d || t.policyViewed != t.viewed {
		t.policyN = len(tracedNames(t.policy[:0], s.cfg.Name, s.cfg.Trace, t.viewed, d))
		t.policyD, t.policyViewed, t.policyOK = d, t.viewed, true
	}
	names := append(t.names[:0], t.policy[:t.policyN]...)
	// A load test's tester traces the pair's link while the test runs:
	// the result's where (load.go).
	if r := s.load.run; r != nil && r.tester && !slices.Contains(names, r.m.Name) {
		names = append(names, r.m.Name)
	}
	return names
}

// traceable: m has a link this machine may trace. A watcher's link is
// traced only when the policy names it (the Path view shows it): watchers
// play no part in the game's timing, up to 64 of them would share the
// probe caps with the players' links, and every byte sent toward them is
// the watchers' budget's.
func (s *Session) traceable(m *member, names []string) bool {
	if m.Observer && !slices.Contains(names, m.Name) {
		return false
	}
	return m.ID != s.self && m.linked && !m.removed && m.Name != "" && !isRelayed(m.Addr) && !s.cfg.NoTrace
}

// traceWanted: the policy names m and m has a link to trace.
func (s *Session) traceWanted(m *member, names []string) bool {
	return m.ID != s.self && m.linked && !m.removed && m.Name != "" && slices.Contains(names, m.Name)
}

// syncTrace turns tracing on and off, and pins links, where the policy
// changed its mind: Endpoint.SetTraced and PinTrace are called on changes
// only. A link that has no endpoint link yet (a peer still joining) is
// turned on once it has one. It runs on every Tick, and looks at the
// members only when something it reads changed since it last did: the
// policy's names, whether the endpoint traces, or a member
// (membersChanged); until a link the policy traces has its endpoint link,
// it looks every time.
func (s *Session) syncTrace() {
	names := s.wantedNames()
	can, _ := s.ep.TraceAvailable()
	if s.traceSynced(names, can) {
		return
	}
	s.trace.syncedN = copy(s.trace.synced[:], names)
	s.trace.syncedCan, s.trace.syncedSelf = can, s.self
	_, s.trace.stale = s.scanTrace(names, can, true)
}

// traceSynced: nothing syncTrace reads changed since its last look at the
// members, the policy naming names and the endpoint tracing when can.
func (s *Session) traceSynced(names []string, can bool) bool {
	return !s.trace.stale && can == s.trace.syncedCan && s.self == s.trace.syncedSelf && slices.Equal(names, s.trace.synced[:s.trace.syncedN])
}

// membersChanged says a member joined or left, or its link, name, address
// or role changed: syncTrace looks at the members again.
func (s *Session) membersChanged() { s.trace.stale = true }

// scanTrace is syncTrace's look at every member, the policy naming names
// and the endpoint tracing when can: with apply, it makes the changes;
// without, it only counts them. waiting: a link the policy traces has no
// endpoint link yet.
func (s *Session) scanTrace(names []string, can, apply bool) (changes int, waiting bool) {
	for _, m := range s.members {
		want := can && s.traceable(m, names)
		if want && !s.trace.on[m.ID] {
			if _, ok := s.ep.Stats(m.ID); !ok {
				waiting = true
				continue
			}
		}
		pin := want && s.traceWanted(m, names)
		if !apply {
			if want != s.trace.on[m.ID] || pin != s.trace.pinned[m.ID] {
				changes++
			}
			continue
		}
		if setMark(&s.trace.on, m.ID, want) {
			s.ep.SetTraced(m.ID, want)
			changes++
		}
		if setMark(&s.trace.pinned, m.ID, pin) {
			s.ep.PinTrace(m.ID, pin)
			changes++
		}
	}
	for id := range s.trace.on {
		if s.byID[id] == nil { // forgotten: its link and its trace went with it
			changes++
			if apply {
				delete(s.trace.on, id)
				delete(s.trace.pinned, id)
				delete(s.trace.printed, id)
			}
		}
	}
	return changes, waiting
}

// setMark marks id in *set when on and unmarks it when not (the map is
// made at the first mark); it reports whether id's mark changed.
func setMark(set *map[netcore.PeerID]bool, id netcore.PeerID, on bool) bool {
	if on == (*set)[id] {
		return false
	}
	if !on {
		delete(*set, id)
		return true
	}
	if *set == nil {
		*set = map[netcore.PeerID]bool{}
	}
	(*set)[id] = true
	return true
}

// Paths are the hop traces this machine shows, house order (View.Paths):
// every link the policy pins, every traced link whose path has more than
// one hop, and every link looked at closely; a relayed link the policy
// names says it cannot be traced, and so does every link it names on a
// machine that does not trace.
func (s *Session) Paths() []feed.PathView {
	var out []feed.PathView
	if len(s.trace.on) == 0 && len(s.wantedNames()) == 0 {
		return nil
	}
	names := s.wantedNames()
	for _, m := range s.members {
		named := s.traceWanted(m, names)
		switch {
		case named && s.cfg.NoTrace:
			out = append(out, feed.PathView{Peer: m.Name, Why: noTraceWhy})
		case named && isRelayed(m.Addr):
			out = append(out, feed.PathView{Peer: m.Name, Why: relayedWhy})
		case named:
			out = append(out, probe.TracedPath(s.ep, m.ID, m.Name))
		case s.trace.on[m.ID]:
			pv := probe.TracedPath(s.ep, m.ID, m.Name)
			if pv.Available && !pv.OneHop && (len(pv.Hops) > 1 || pv.Bursting) {
				out = append(out, pv)
			}
		}
	}
	return out
}

// DuePaths are the hop traces whose `path` line is due at now, house
// order: a bursting link's every call (once a second), a baseline one's
// at most every pathEvery and whenever its judgement changes (where delay
// or loss starts, which hops are rate-limited, the path's length and
// whether the peer answered).
func (s *Session) DuePaths(now time.Duration) []feed.PathView { return s.due(now, s.Paths()) }

// due keeps of ps the views whose line is due at now (DuePaths).
func (s *Session) due(now time.Duration, ps []feed.PathView) []feed.PathView {
	out := ps[:0]
	for i := range ps {
		pv := &ps[i]
		id := s.memberID(pv.Peer)
		k := judgementOf(pv)
		last, seen := s.trace.printed[id]
		if seen && !pv.Bursting && k == last.key && now-last.at < pathEvery {
			continue
		}
		if s.trace.printed == nil {
			s.trace.printed = map[netcore.PeerID]printedPath{}
		}
		s.trace.printed[id] = printedPath{at: now, key: k}
		out = append(out, *pv)
	}
	return out
}

// memberID is the ID of the member named name, 0 for none.
func (s *Session) memberID(name string) netcore.PeerID {
	for _, m := range s.members {
		if m.Name == name {
			return m.ID
		}
	}
	return 0
}
