package session

import (
	"slices"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

// Which links this machine traces (docs/path.md): the link the Path view
// shows (feed.Control.Path, until Control.PathClosed), the link --trace
// names (Config.Trace, for the whole session) and, while the latest
// diagnosis blames them, the links to its culprit and, when this machine is
// one end of its culprit path, the link to the other end. A culprit
// machine traces its link to the first other player in house order: its
// own home and line are what it sees first-hand, and the diagnosis needs
// that trace to say where its delay starts (docs/diagnosis.md). With no
// culprit named, a machine that traces nothing else traces one link when
// some player's share of the round trip stands out (cause latency): its
// own path when it is that player, else the link to the first of them — a
// hop their paths share may be the reason. The tracer is a guest on
// routers it does not own, so nothing else is traced, and never more than
// maxTraced links.
//
// A relayed link is never traced: its datagrams leave toward the host, so
// a probe would measure the path to the host, not to the peer. Its
// PathView says so.

// relayedWhy is why a relayed link shows no trace.
const relayedWhy = "this link is relayed through the host: its datagrams have no path of their own to trace"

// maxTraced bounds the names the policy picks: the viewed link, the
// --trace link, the culprit (or, on the culprit's machine, its first
// other player) and the other end of the culprit path.
const maxTraced = 4

// traceState is what the session keeps of the policy.
type traceState struct {
	viewed string                  // the link the Path view shows; "" while it is closed
	on     map[netcore.PeerID]bool // links Endpoint.SetTraced turned on
	names  [maxTraced + 1]string   // tracedNames's scratch, and the load test's peer
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
	names := tracedNames(s.trace.names[:0], s.cfg.Name, s.cfg.Trace, s.trace.viewed, d)
	// A load test's tester traces the pair's link while the test runs:
	// the result's where (load.go).
	if r := s.load.run; r != nil && r.tester && !slices.Contains(names, r.m.Name) {
		names = append(names, r.m.Name)
	}
	return names
}

// traceWanted: the policy names m and m has a link to trace.
func (s *Session) traceWanted(m *member, names []string) bool {
	return m.ID != s.self && m.linked && !m.removed && m.Name != "" && slices.Contains(names, m.Name)
}

// syncTrace turns tracing on and off where the policy changed its mind:
// Endpoint.SetTraced is called on changes only. A wanted link that has no
// endpoint link yet (a peer still joining) is turned on once it has one.
func (s *Session) syncTrace() {
	names := s.wantedNames()
	for _, m := range s.members {
		want := s.traceWanted(m, names) && !isRelayed(m.Addr)
		if want == s.trace.on[m.ID] {
			continue
		}
		if want {
			if _, ok := s.ep.Stats(m.ID); !ok {
				continue
			}
			if s.trace.on == nil {
				s.trace.on = map[netcore.PeerID]bool{}
			}
			s.trace.on[m.ID] = true
		} else {
			delete(s.trace.on, m.ID)
		}
		s.ep.SetTraced(m.ID, want)
	}
	for id := range s.trace.on {
		if s.byID[id] == nil { // forgotten: its link and its trace went with it
			delete(s.trace.on, id)
		}
	}
}

// Paths are the hop traces of the links the policy traces, house order
// (View.Paths, the `path` events): a relayed link's says it cannot be
// traced.
func (s *Session) Paths() []feed.PathView {
	names := s.wantedNames()
	if len(names) == 0 {
		return nil
	}
	var out []feed.PathView
	for _, m := range s.members {
		if !s.traceWanted(m, names) {
			continue
		}
		if isRelayed(m.Addr) {
			out = append(out, feed.PathView{Peer: m.Name, Why: relayedWhy})
			continue
		}
		out = append(out, probe.TracedPath(s.ep, m.ID, m.Name))
	}
	return out
}
