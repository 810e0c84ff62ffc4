package ui

import (
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/textsafe"
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
func safeView(v probe.View) probe.View {
	if viewSafe(&v) {
		return v
	}
	v.Session, v.Self, v.Master, v.WaitedOn = textOf(v.Session), textOf(v.Self), textOf(v.Master), textOf(v.WaitedOn)
	links := make([]probe.LinkView, len(v.Links))
	for i, l := range v.Links {
		l.Peer, l.From, l.To = textOf(l.Peer), textOf(l.From), textOf(l.To)
		links[i] = l
	}
	v.Links = links
	players := make([]probe.PlayerView, len(v.Players))
	for i, p := range v.Players {
		p.Name = textOf(p.Name)
		players[i] = p
	}
	v.Players = players
	mx := make([]probe.MatrixPlayer, len(v.Matrix.Players))
	for i, p := range v.Matrix.Players {
		p.Name = textOf(p.Name)
		ls := make([]probe.MatrixLink, len(p.Links))
		for j, l := range p.Links {
			l.From, l.To = textOf(l.From), textOf(l.To)
			ls[j] = l
		}
		p.Links = ls
		mx[i] = p
	}
	v.Matrix.Players = mx
	return v
}

// viewSafe reports whether every outside string of v is already safe.
func viewSafe(v *probe.View) bool {
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
