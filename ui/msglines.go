package ui

import (
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// The message list tells each event once, on one line, stamped with the
// session time (the game's time since it started, the same on every
// machine and watcher):
//
//   - An alert is not a line of its own where its event has one: a link
//     gone bad is the "Connection to bob has gone bad" line, a worse tier
//     the "Connection quality target: Poor" line, a loss alert the loss
//     line the engine writes with it. Whichever of the two comes first
//     makes the line; the alert marks it ALERT, the message gives it its
//     words. An alert with no such line (a feed that sends none) is a line
//     of its own.
//   - An incident has a line when it opens and one when it closes; an
//     update adds none: it gives the open line its newest sentence (the
//     opening one may not know why yet), keeping the time it opened. A
//     loss alert about the incident's player or
//     path while it is open marks the incident's open line instead of
//     adding the loss line: it is the same episode.

// lineKind says which event a keyed line is: an alert and its message
// share one.
type lineKind uint8

const (
	lineNone lineKind = iota
	lineBad
	lineLoss
	lineTier
	lineIncident
)

// lineKey is what pairs an alert with its message line: the kind and the
// peer (empty for a tier).
type lineKey struct {
	kind lineKind
	peer string
}

// pairWindow is how far apart in session time an alert and its message
// may come and still be one line: the engine writes them in one step, so
// they share an update; a second is plenty.
const pairWindow = time.Second

// pairLook is how many of the newest lines an alert or a message looks
// back over for its partner.
const pairLook = 12

// openIncident is an incident whose open line is in the list.
type openIncident struct {
	id      int
	player  string
	between [2]string
	line    uint64 // the open line's number (message.n)
}

// sessionTime is the View's session time at its frame: the View's own,
// or, for a recording made before Views carried it, frames at the rate in
// force.
func sessionTime(v *feed.View) (time.Duration, bool) {
	if !v.Started {
		return 0, false
	}
	if v.Game > 0 || v.Frame == 0 {
		return v.Game, true
	}
	return time.Duration(v.Frame) * time.Second / time.Duration(max(v.FPS, 1)), true
}

// sessionClock is the header's clock: "t" and the session time; in the
// lobby, where the game has no time yet, "lobby" and how long this machine
// has been there.
func sessionClock(v *feed.View) string {
	if at, ok := sessionTime(v); ok {
		return "t " + fmtClock(at)
	}
	return "lobby " + fmtClock(v.At)
}

// eventTime is the session time an event happened at: the one it carries
// (a live line's game_ms); none for a line from before the game started;
// else its frame's, counted from the View it came with at the rate in
// force (the simulator's lines, recordings made before lines carried
// it).
func (s *session) eventTime(v *feed.View, h *feed.Header) (time.Duration, bool) {
	switch {
	case h.GameMs != nil:
		s.gameStamped = true
		return units.FromMillis(*h.GameMs), true
	case h.Pregame, h.TMs != nil && s.gameStamped:
		// A live line without a session time came before the game.
		return 0, false
	}
	now, ok := sessionTime(v)
	if !ok {
		return 0, false
	}
	by := time.Duration(h.Frame-v.Frame) * time.Second / time.Duration(max(v.FPS, 1))
	return max(now+by, 0), true
}

// frameTime is the session time of frame f, from an event h about it that
// came with the View v: the event's own session time moved by the frames
// between, at the rate in force; false where the event has none.
func (s *session) frameTime(v *feed.View, h *feed.Header, f int) (time.Duration, bool) {
	at, ok := s.eventTime(v, h)
	if !ok {
		return 0, false
	}
	by := time.Duration(f-h.Frame) * time.Second / time.Duration(max(v.FPS, 1))
	return max(at+by, 0), true
}

// messageKey is the key of a message line an alert may pair with; lineNone for
// every other line.
func messageKey(e *feed.MessageEvent) lineKey {
	switch e.Kind {
	case feed.MessageLinkBad:
		return lineKey{lineBad, textOf(e.Subject)}
	case feed.MessageLinkLoss:
		return lineKey{lineLoss, textOf(e.Subject)}
	case feed.MessageTier:
		return lineKey{kind: lineTier}
	}
	return lineKey{}
}

// alertKey is the key of the line an alert belongs to.
func alertKey(e *feed.AlertEvent) lineKey {
	peer := ""
	if to := safePtr(e.To); to != nil {
		peer = *to
	}
	switch e.Kind {
	case feed.AlertBad:
		return lineKey{lineBad, peer}
	case feed.AlertLoss:
		return lineKey{lineLoss, peer}
	case feed.AlertTier:
		return lineKey{kind: lineTier}
	}
	return lineKey{}
}

// partner finds the newest line of key k within pairWindow of at that
// lacks what the caller brings: an alert (alert true) or its message.
func (s *session) partner(k lineKey, at time.Duration, alert bool) *message {
	for i := len(s.msgs) - 1; i >= 0 && i >= len(s.msgs)-pairLook; i-- {
		m := &s.msgs[i]
		if m.key != k || (at-m.at).Abs() > pairWindow {
			continue
		}
		if alert && m.fromMsg && !m.alert {
			return m
		}
		if !alert && m.alert && !m.fromMsg {
			return m
		}
	}
	return nil
}

// keyedMessage takes a message line an alert may pair with; false when it
// is not one (the caller adds it as usual).
func (s *session) keyedMessage(m message, e *feed.MessageEvent) bool {
	k := messageKey(e)
	if k.kind == lineNone {
		return false
	}
	if k.kind == lineLoss {
		if i := s.absorbing(k.peer, m.at); i >= 0 {
			// Its alert marked the open incident's line: this loss line
			// is that same episode.
			s.absorb = append(s.absorb[:i], s.absorb[i+1:]...)
			return true
		}
	}
	if p := s.partner(k, m.at, false); p != nil {
		// The alert came first: its line takes the message's words.
		p.text, p.kind, p.tier, p.fromMsg = m.text, m.kind, m.tier, true
		s.msgN++
		return true
	}
	m.key, m.fromMsg = k, true
	s.add(m)
	return true
}

// alertLine takes an alert: it marks its message's line, or the open
// incident's line it belongs to, or is a line of its own.
func (s *session) alertLine(m message, e *feed.AlertEvent) {
	k := alertKey(e)
	if p := s.partner(k, m.at, true); p != nil && k.kind != lineNone {
		p.alert = true
		s.msgN++
		return
	}
	if k.kind == lineLoss {
		if l := s.incidentLineOf(e); l != nil {
			l.alert = true
			s.absorb = append(s.absorb, absorbing{peer: k.peer, at: m.at})
			s.msgN++
			return
		}
	}
	m.key, m.alert = k, true
	s.add(m)
}

// absorbing is a loss line still to come whose alert marked an incident's
// line.
type absorbing struct {
	peer string
	at   time.Duration
}

// absorbing finds a pending loss line to peer near at; -1 for none. Old
// ones are dropped.
func (s *session) absorbing(peer string, at time.Duration) int {
	s.absorb = dropOld(s.absorb, at)
	for i, a := range s.absorb {
		if a.peer == peer {
			return i
		}
	}
	return -1
}

func dropOld(as []absorbing, at time.Duration) []absorbing {
	out := as[:0]
	for _, a := range as {
		if (at - a.at).Abs() <= pairWindow {
			out = append(out, a)
		}
	}
	return out
}

// incidentLineOf is the open line of an open incident that a loss alert
// on the link From → To belongs to: one about To (or From), or about the
// path between the two.
func (s *session) incidentLineOf(e *feed.AlertEvent) *message {
	from, to := safePtr(e.From), safePtr(e.To)
	if from == nil || to == nil {
		return nil
	}
	for i := len(s.open) - 1; i >= 0; i-- {
		o := &s.open[i]
		match := o.player != "" && (o.player == *to || o.player == *from)
		match = match || o.player == "" && (o.between == [2]string{*from, *to} || o.between == [2]string{*to, *from})
		if !match {
			continue
		}
		if l := s.lineNumbered(o.line); l != nil {
			return l
		}
	}
	return nil
}

// lineNumbered is the line numbered n, nil when it has left the list.
func (s *session) lineNumbered(n uint64) *message {
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if s.msgs[i].n == n {
			return &s.msgs[i]
		}
		if s.msgs[i].n < n {
			break
		}
	}
	return nil
}

// incidentLine takes an incident's line: one when it opens, one when it
// closes; an update rewords the open line.
func (s *session) incidentLine(m message, e *feed.IncidentEvent) {
	switch e.Phase {
	case vocab.IncidentOpen:
		m.text, m.kind, m.key = textOf(e.Text), msgIncident, lineKey{kind: lineIncident}
		o := openIncident{id: e.ID}
		if p := safePtr(e.Player); p != nil {
			o.player = *p
		} else if b := e.Between; b != nil {
			o.between = [2]string{textOf(b[0]), textOf(b[1])}
		}
		s.add(m)
		o.line = s.msgs[len(s.msgs)-1].n
		s.open = append(s.open, o)
	case vocab.IncidentUpdate:
		for _, o := range s.open {
			if l := s.lineNumbered(o.line); o.id == e.ID && l != nil && l.text != textOf(e.Text) {
				l.text = textOf(e.Text)
				s.msgN++
			}
		}
	case vocab.IncidentClose:
		for i := range s.open {
			if s.open[i].id == e.ID {
				s.open = append(s.open[:i], s.open[i+1:]...)
				break
			}
		}
		m.text, m.kind, m.key = textOf(e.Text), msgIncidentClosed, lineKey{kind: lineIncident}
		s.add(m)
	}
}

// add appends a line to the list, numbered, and bounds the list.
func (s *session) add(m message) {
	s.lineN++
	m.n = s.lineN
	s.msgs = append(s.msgs, m)
	s.msgN++
	if len(s.msgs) > 2*maxMessages {
		s.msgs = append(s.msgs[:0], s.msgs[len(s.msgs)-maxMessages:]...)
	}
}
