package ui

import (
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/vocab"
)

// Text from outside the program — players' names, message texts, the
// session id, an error from the far side — may hold escape sequences that
// would move the cursor, retitle the window or worse. It is made safe once,
// where it enters the UI (safeView, safeEvent), so no pane can draw it raw;
// the diagnosis, which the UI does not copy, passes through textOf where it
// is drawn. textsafe.Terminal costs nothing on clean text, and a picture
// is copied only when something in it was unsafe.

// safeView returns v with every outside string made safe; v itself (the
// engine's) is never written to.
func safeView(v feed.View) feed.View {
	if viewSafe(&v) {
		return v
	}
	v.Session, v.Self, v.Master, v.WaitedOn = textOf(v.Session), textOf(v.Self), textOf(v.Master), textOf(v.WaitedOn)
	links := make([]feed.LinkView, len(v.Links))
	for i, l := range v.Links {
		l.Peer, l.From, l.To = textOf(l.Peer), textOf(l.From), textOf(l.To)
		links[i] = l
	}
	v.Links = links
	players := make([]feed.PlayerView, len(v.Players))
	for i, p := range v.Players {
		p.Name = textOf(p.Name)
		players[i] = p
	}
	v.Players = players
	mx := make([]feed.MatrixPlayer, len(v.Matrix.Players))
	for i, p := range v.Matrix.Players {
		p.Name = textOf(p.Name)
		ls := make([]feed.MatrixLink, len(p.Links))
		for j, l := range p.Links {
			l.From, l.To = textOf(l.From), textOf(l.To)
			ls[j] = l
		}
		p.Links = ls
		mx[i] = p
	}
	v.Matrix.Players = mx
	v.Paths = safePaths(v.Paths)
	v.Load = safeLoad(v.Load)
	return v
}

// safePaths copies the hop traces with their outside strings made safe:
// the peer, why a trace is not available and the links' names.
func safePaths(ps []feed.PathView) []feed.PathView {
	out := make([]feed.PathView, len(ps))
	for i, p := range ps {
		p.Peer, p.Why = textOf(p.Peer), textOf(p.Why)
		hops := make([]feed.PathHop, len(p.Hops))
		for j, h := range p.Hops {
			h.Link = vocab.HopLink(textOf(string(h.Link)))
			hops[j] = h
		}
		p.Hops = hops
		p.DelayStarts, p.LossStarts = safeStart(p.DelayStarts), safeStart(p.LossStarts)
		out[i] = p
	}
	return out
}

// safeStart copies where delay or loss starts with its link's name made
// safe.
func safeStart(s *feed.PathStart) *feed.PathStart {
	if s == nil || textsafe.Safe(string(s.Link)) {
		return s
	}
	c := *s
	c.Link = vocab.HopLink(textOf(string(c.Link)))
	return &c
}

// viewSafe reports whether every outside string of v is already safe.
func viewSafe(v *feed.View) bool {
	ok := textsafe.Safe(v.Session) && textsafe.Safe(v.Self) && textsafe.Safe(v.Master) && textsafe.Safe(v.WaitedOn)
	for i := 0; ok && i < len(v.Links); i++ {
		l := &v.Links[i]
		ok = textsafe.Safe(l.Peer) && textsafe.Safe(l.From) && textsafe.Safe(l.To)
	}
	for i := 0; ok && i < len(v.Players); i++ {
		ok = textsafe.Safe(v.Players[i].Name)
	}
	for i := 0; ok && i < len(v.Matrix.Players); i++ {
		p := &v.Matrix.Players[i]
		ok = textsafe.Safe(p.Name)
		for j := 0; ok && j < len(p.Links); j++ {
			ok = textsafe.Safe(p.Links[j].From) && textsafe.Safe(p.Links[j].To)
		}
	}
	for i := 0; ok && i < len(v.Paths); i++ {
		ok = pathSafe(&v.Paths[i])
	}
	return ok && loadSafe(v.Load)
}

// loadSafe reports whether every outside string of the load testing
// state is already safe: the peers' names, the phases' names, and each
// result's grades, stop reason and the link a trace puts the delay at.
func loadSafe(l *feed.LoadView) bool {
	if l == nil {
		return true
	}
	ok := true
	if r := l.Running; r != nil {
		ok = textsafe.Safe(r.Peer) && textsafe.Safe(string(r.Progress.Phase)) && (r.Where == nil || textsafe.Safe(string(r.Where.Link)))
		for i := 0; ok && i < len(r.Progress.Phases); i++ {
			ok = textsafe.Safe(string(r.Progress.Phases[i].Name))
		}
	}
	if v := l.Seen; ok && v != nil {
		ok = textsafe.Safe(v.From) && textsafe.Safe(v.To)
	}
	for i := 0; ok && i < len(l.Results); i++ {
		e := &l.Results[i]
		ok = textsafe.Safe(e.From) && textsafe.Safe(e.To) && resultSafe(&e.Result)
	}
	return ok
}

// resultSafe reports whether a load test result's words are already safe.
func resultSafe(r *loadtest.Result) bool {
	ok := r.Stopped == nil || textsafe.Safe(*r.Stopped)
	for _, d := range []*loadtest.DirResult{r.Upload, r.Download} {
		ok = ok && (d == nil || d.Grade == nil || textsafe.Safe(*d.Grade))
	}
	return ok && (r.Where == nil || textsafe.Safe(string(r.Where.Link)))
}

// safeLoad copies the load testing state with its outside strings made
// safe; l itself (the engine's) is never written to.
func safeLoad(l *feed.LoadView) *feed.LoadView {
	if loadSafe(l) {
		return l
	}
	c := *l
	if r := l.Running; r != nil {
		rc := *r
		rc.Peer, rc.Progress.Phase = textOf(rc.Peer), vocab.LoadPhase(textOf(string(rc.Progress.Phase)))
		rc.Progress.Phases = make([]loadtest.PhaseProgress, len(r.Progress.Phases))
		for i, ph := range r.Progress.Phases {
			ph.Name = vocab.LoadPhase(textOf(string(ph.Name)))
			rc.Progress.Phases[i] = ph
		}
		if rc.Where != nil {
			wc := *rc.Where
			wc.Link = vocab.HopLink(textOf(string(wc.Link)))
			rc.Where = &wc
		}
		c.Running = &rc
	}
	if v := l.Seen; v != nil {
		vc := *v
		vc.From, vc.To = textOf(vc.From), textOf(vc.To)
		c.Seen = &vc
	}
	c.Results = make([]feed.LoadEvent, len(l.Results))
	for i, e := range l.Results {
		e.From, e.To = textOf(e.From), textOf(e.To)
		r := &e.Result
		r.Stopped = safePtr(r.Stopped)
		for _, d := range []**loadtest.DirResult{&r.Upload, &r.Download} {
			if *d != nil {
				dc := **d
				dc.Grade = safePtr(dc.Grade)
				*d = &dc
			}
		}
		if r.Where != nil {
			wc := *r.Where
			wc.Link = vocab.HopLink(textOf(string(wc.Link)))
			r.Where = &wc
		}
		c.Results[i] = e
	}
	return &c
}

// pathSafe reports whether every outside string of a hop trace is already
// safe. Addresses are typed; the one text in them, an IPv6 zone, is made
// safe where it is drawn.
func pathSafe(p *feed.PathView) bool {
	ok := textsafe.Safe(p.Peer) && textsafe.Safe(p.Why)
	for j := 0; ok && j < len(p.Hops); j++ {
		ok = textsafe.Safe(string(p.Hops[j].Link))
	}
	for _, s := range []*feed.PathStart{p.DelayStarts, p.LossStarts} {
		ok = ok && (s == nil || textsafe.Safe(string(s.Link)))
	}
	return ok
}

// safePtr makes an optional outside string safe.
func safePtr(s *string) *string {
	if s == nil || textsafe.Safe(*s) {
		return s
	}
	t := textOf(*s)
	return &t
}
