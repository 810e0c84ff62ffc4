package record

import (
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// IncidentTimes is when each incident of the recording was first told:
// the times of its `open` lines, in order. A front end seeks there to land
// on an incident (the TUI's [ and ]): at that position the replay has
// handed out the line, so the incident is on screen. The cursor's events
// do not change once it is made, so this reads them without the lock.
func (p *Player) IncidentTimes() []time.Duration {
	var out []time.Duration
	for i := range p.cur.events {
		r := &p.cur.events[i]
		if e, ok := r.Event.(*feed.IncidentEvent); ok && e.Phase == vocab.IncidentOpen {
			out = append(out, r.At)
		}
	}
	return out
}
