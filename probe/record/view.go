package record

import (
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// viewRecord is a View as a recording stores it. The layout is the
// recording format's (Format 1), not the View's: the View is typed for
// front ends (durations, a state enum, known flags) while a record keeps
// the Go field names and, for links, the NDJSON link object it always had,
// so that recordings written before and after the View changed are the
// same bytes. A field added to the View reaches recordings only when it is
// added here (and the format says so).
type viewRecord struct {
	At      time.Duration
	Session string
	Self    string
	Master  string
	Frame   int
	Started bool
	// Game is the session time at Frame; recordings made before it was
	// kept have none (0), and a reader estimates it from the frames.
	Game     time.Duration `json:",omitempty"`
	FPS      int
	Speed    int
	InForce  rungs.Timing
	Target   rungs.Timing
	Staged   bool
	Needed   rungs.Timing `json:",omitzero"` // zero before any report carries a round trip
	Stalled  bool
	WaitedOn string
	Lobby    *feed.LobbyView
	Links    []linkRecord
	Players  []feed.PlayerView
	Totals   feed.LossTotals
	Relay    []feed.RelayStat `json:",omitempty"` // a host's relayed pairs
	// Paths are the hop traces of the links the machine traced, as the
	// View holds them (netip addresses as text, durations in ns).
	Paths []feed.PathView `json:",omitempty"`
	// Load is the machine's load testing: the test running, the latest
	// results (each as its `load` event's object), the cap.
	Load *feed.LoadView `json:",omitempty"`
}

// linkRecord is one LinkView: the NDJSON link object, then the rest.
type linkRecord struct {
	feed.LinkStat
	Peer     string
	Observer bool
	Bad      bool
	Caused   time.Duration
	Through  int
}

// recordOf is what the writer stores for v (its Matrix is left out, see
// feed.View).
func recordOf(v *feed.View) *viewRecord {
	r := &viewRecord{At: v.At, Session: v.Session, Self: v.Self, Master: v.Master, Frame: v.Frame, Started: v.Started, Game: v.Game,
		FPS: v.FPS, Speed: v.Speed, InForce: v.InForce, Target: v.Target, Staged: v.Staged, Needed: v.Needed, Stalled: v.Stalled,
		WaitedOn: v.WaitedOn, Lobby: v.Lobby, Players: v.Players, Totals: v.Totals, Relay: v.Relay, Paths: v.Paths, Load: v.Load}
	if v.Links != nil {
		r.Links = make([]linkRecord, len(v.Links))
		for i, l := range v.Links {
			r.Links[i] = linkRecord{LinkStat: l.Stat(), Peer: l.Peer, Observer: l.Observer, Bad: l.Bad, Caused: l.Caused, Through: l.Through}
		}
	}
	return r
}

// view reads the record back; a link object no peer writes is an error.
func (r *viewRecord) view() (*feed.View, error) {
	v := &feed.View{At: r.At, Session: r.Session, Self: r.Self, Master: r.Master, Frame: r.Frame, Started: r.Started, Game: r.Game,
		FPS: r.FPS, Speed: r.Speed, InForce: r.InForce, Target: r.Target, Staged: r.Staged, Needed: r.Needed, Stalled: r.Stalled,
		WaitedOn: r.WaitedOn, Lobby: r.Lobby, Players: r.Players, Totals: r.Totals, Relay: r.Relay, Paths: r.Paths, Load: r.Load}
	if r.Links != nil {
		v.Links = make([]feed.LinkView, len(r.Links))
		for i, l := range r.Links {
			link, err := l.LinkStat.Link()
			if err != nil {
				return nil, err
			}
			v.Links[i] = feed.LinkView{Link: link, Peer: l.Peer, Observer: l.Observer, Bad: l.Bad, Caused: l.Caused, Through: l.Through}
		}
	}
	return v, nil
}
