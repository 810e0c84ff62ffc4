package record

import (
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// The text and markdown reports tell their times on the session's clock,
// as the screens do: the game's time since it started, the same on every
// machine (docs/ui.md, "Clocks"). A recording's records are on the
// recording machine's own clock; the session time comes from what the
// recording holds of it — each View's session time, each event's game_ms
// — and a time between two of those is placed between their session
// times. The JSON keeps its times on the recording's clock (at_ms), as it
// always has. A recording made before Views and lines carried a session
// time has none, and its reports keep the recording's clock.

// sessionClock maps a recording's times to session times: pairs of a
// record's time and its session time, in order; and the frames those
// session times are of, for what names a frame (an incident).
type sessionClock struct {
	at, game []time.Duration
	frame    []int
}

// sessionClockOf reads the pairs of one machine: the recording's own
// (Header.Self), else the first that recorded a View.
func sessionClockOf(rec *Recording) sessionClock {
	who := rec.Header.Self
	var c sessionClock
	add := func(at, game time.Duration, frame int) {
		if n := len(c.at); n > 0 && (at < c.at[n-1] || game < c.game[n-1] || frame < c.frame[n-1]) {
			return // out of order: keep the clock monotonic
		}
		c.at, c.game, c.frame = append(c.at, at), append(c.game, game), append(c.frame, frame)
	}
	for i := range rec.Records {
		r := &rec.Records[i]
		switch {
		case r.Kind == KindView && r.View != nil:
			if who == "" {
				who = r.From
			}
			if r.From == who && r.View.Started && (r.View.Game > 0 || r.View.Frame == 0) {
				add(r.At, r.View.Game, r.View.Frame)
			}
		case r.Kind == KindEvent && r.Event != nil && (who == "" || r.From == who):
			if h := feed.Head(r.Event); h.GameMs != nil {
				add(r.At, units.FromMillis(*h.GameMs), h.Frame)
			}
		}
	}
	return c
}

// known reports whether the recording holds the session's clock.
func (c sessionClock) known() bool { return len(c.at) > 0 }

// ms is the session time of a time of the recording, both in
// milliseconds: between two pairs it moves from one's session time to the
// next's; after the last it runs on with the recording's clock. False
// before the game started (the first pair).
func (c sessionClock) ms(atMs float64) (float64, bool) {
	if !c.known() {
		return atMs, false
	}
	t := units.FromMillis(atMs)
	i, _ := slices.BinarySearch(c.at, t+1) // the first pair after t
	if i == 0 {
		return atMs, false
	}
	a, g := c.at[i-1], c.game[i-1]
	if i == len(c.at) {
		return units.Millis(g + (t - a)), true
	}
	span, rise := c.at[i]-a, c.game[i]-g
	if span <= 0 {
		return units.Millis(g), true
	}
	return units.Millis(g + time.Duration(float64(rise)*float64(t-a)/float64(span))), true
}

// frameMs is the session time of frame f in milliseconds: from the pair
// of the nearest frame at or before it (the first pair for an earlier
// one), moved by the frames between at fps.
func (c sessionClock) frameMs(f, fps int) (float64, bool) {
	if !c.known() {
		return 0, false
	}
	i, _ := slices.BinarySearch(c.frame, f+1)
	i = max(i-1, 0)
	return units.Millis(max(c.game[i]+time.Duration(f-c.frame[i])*time.Second/time.Duration(max(fps, 1)), 0)), true
}

// onSessionClock is the report with its times on the session clock, for
// the text and markdown reports: a copy, the JSON's report unchanged. A
// time before the game started keeps the recording's clock.
func (r *report) onSessionClock() *report {
	c := r.clock
	if !c.known() {
		return r
	}
	conv := func(ms *float64) {
		if v, ok := c.ms(*ms); ok {
			*ms = v
		}
	}
	s := *r
	conv(&s.LengthMs)
	s.Timing = convAll(r.Timing, conv, func(x *timingRow) *float64 { return &x.AtMs })
	s.Waits = convAll(r.Waits, conv, func(x *waitRow) *float64 { return &x.AtMs })
	s.Removed = convAll(r.Removed, conv, func(x *removedRow) *float64 { return &x.AtMs })
	s.Paths = convAll(r.Paths, conv, func(x *pathReport) *float64 { return &x.AtMs })
	s.Loads = convAll(r.Loads, conv, func(x *loadReport) *float64 { return &x.AtMs })
	if r.Diagnosis != nil {
		d := *r.Diagnosis
		conv(&d.AtMs)
		s.Diagnosis = &d
	}
	s.Links = slices.Clone(r.Links)
	for i := range s.Links {
		s.Links[i].Bad = slices.Clone(r.Links[i].Bad)
		for j := range s.Links[i].Bad {
			conv(&s.Links[i].Bad[j].FromMs)
			conv(&s.Links[i].Bad[j].ToMs)
		}
	}
	if r.Incidents != nil {
		// An incident names its frames: their session times, as its own
		// sentences say them.
		s.Incidents = slices.Clone(r.Incidents)
		for i := range s.Incidents {
			in := &s.Incidents[i]
			if v, ok := c.frameMs(in.OpenedFrame, r.fps); ok {
				in.OpenedMs = v
			}
			if in.ClosedMs != nil && in.ClosedFrame != nil {
				if v, ok := c.frameMs(*in.ClosedFrame, r.fps); ok {
					in.ClosedMs = &v
				}
			}
		}
	}
	return &s
}

// convAll is a copy of xs with each one's time (at) passed through conv.
func convAll[T any](xs []T, conv func(*float64), at func(*T) *float64) []T {
	xs = slices.Clone(xs)
	for i := range xs {
		conv(at(&xs[i]))
	}
	return xs
}
