package live

import (
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// publisher is what a driver publishes, on whichever clock drives it: the
// session's events, stamped; the timeline's notes when they are due; a link
// line per known link and a path line per traced link whose line is due,
// every linkEvery; and the events gathered since the last update. The
// Runner drives one on the wall clock and the virtual demo one on simnet's,
// so both publish the same kinds of lines at the same times.
type publisher struct {
	timeline  []note // in time order
	linkEvery time.Duration
	nextLinks time.Duration
	pending   []feed.Event
}

func newPublisher(timeline []note, linkEvery time.Duration) publisher {
	return publisher{timeline: timeline, linkEvery: linkEvery, nextLinks: linkEvery}
}

// collect stamps e at now (s is nil while the session is being made) and
// keeps it for the next update.
func (p *publisher) collect(s *session.Session, now time.Duration, e feed.Event) {
	stamp(feed.Head(e), now, s)
	p.pending = append(p.pending, e)
}

// lines adds what is due at now besides the session's own events: the
// timeline's notes, then the link and path lines (the `link` and `path`
// lines of docs/live.md).
func (p *publisher) lines(s *session.Session, now time.Duration) {
	for len(p.timeline) > 0 && now >= p.timeline[0].At {
		n := p.timeline[0]
		p.timeline = p.timeline[1:]
		p.collect(s, now, &feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: s.Frame()}, Text: n.Text, Player: s.Name()})
	}
	if now < p.nextLinks {
		return
	}
	f := s.Frame()
	for _, ls := range s.KnownLinks(now) {
		p.collect(s, now, &feed.LinkEvent{Header: feed.Header{Type: vocab.EventLink, Frame: f}, LinkStat: ls})
	}
	for _, pv := range s.DuePaths(now) {
		p.collect(s, now, &feed.PathEvent{Header: feed.Header{Type: vocab.EventPath, Frame: f}, PathStat: pv.Stat(s.Name())})
	}
	for p.nextLinks <= now {
		p.nextLinks += p.linkEvery
	}
}

// nextLine is when lines next has something to add.
func (p *publisher) nextLine() time.Duration {
	if len(p.timeline) > 0 {
		return min(p.nextLinks, p.timeline[0].At)
	}
	return p.nextLinks
}

// take hands out the events gathered since the last update.
func (p *publisher) take() []feed.Event {
	e := p.pending
	p.pending = nil
	return e
}

// stamp sets an event's t_ms to now and, once s's game has started, its
// game_ms to the session time of its frame; an event that carries a
// session time already keeps it (a late watcher's from the host), and one
// from before the game started gets none.
func stamp(h *feed.Header, now time.Duration, s *session.Session) {
	t := units.Millis(now)
	h.TMs = &t
	if s == nil || h.GameMs != nil || h.Pregame {
		return
	}
	if g, ok := s.GameAt(h.Frame); ok {
		// To the microsecond: a watcher times frames from the host's
		// time of a later one, a nanosecond of rounding apart.
		ms := units.Millis(g.Round(time.Microsecond))
		h.GameMs = &ms
	}
}
