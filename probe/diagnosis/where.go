package diagnosis

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
	"net/netip"
	"slices"
	"strconv"
)

// The links a hop trace names, from the tracing machine outward
// (docs/path.md): into its home router (lan), out of the home (uplink),
// the ISP's hops (isp), past them (beyond), into the peer (peer).
const (
	linkLAN    = vocab.HopLAN
	linkUplink = vocab.HopUplink
	linkISP    = vocab.HopISP
	linkBeyond = vocab.HopBeyond
	linkPeer   = vocab.HopPeer
)

// Trace is one machine's summary of a hop trace it ran toward another
// player: where the delay that persists to the peer starts (the `path`
// event's delay_starts), and the hops' addresses in ttl order (the zero
// Addr for a hop that never answered). From and To index Input.Players.
type Trace struct {
	From, To int
	// Delay is nil when no delay stands out on the path.
	Delay *TraceStart
	Hops  []netip.Addr
	// Complete: the peer answered, so the trace covers the whole path and
	// a nil Delay means none stands out on it.
	Complete bool
}

// TraceStart is the hop a trace's delay starts at: its ttl, the link into
// it and the delay it adds.
type TraceStart struct {
	TTL     int
	Link    vocab.HopLink
	AddedMs float64
}

// Where is the part of a player's own path its delay starts on, as the
// player's own traces see it first-hand.
type Where struct {
	Link    vocab.HopLink
	TTL     int
	AddedMs float64
	// Confirmed counts the other players' traces toward this player whose
	// delay starts on their last link, into this player's home.
	Confirmed int

	contradicted bool // a whole path toward the player shows no delay
}

// SharedHop is a hop past the players' homes where the delay of several
// players' paths starts: what no player can change at home.
type SharedHop struct {
	Addr    netip.Addr
	Players []string // the tracing players whose paths share it, house order
	AddedMs float64  // the median of what it adds on their paths
}

// ownSide reports whether a trace's delay starting on link lies on the
// tracing player's own side: its home network, its line out, its ISP.
func ownSide(link vocab.HopLink) bool {
	return link == linkLAN || link == linkUplink || link == linkISP
}

// wheres gives each player the start of the delay on its own side from
// the traces it ran itself: of those that start there, the one that adds
// most. Other players' traces toward it, whose delay starts on their last
// link (into this player's home), confirm it. Traces from outside the
// players, or naming a ttl past their hops, are ignored.
func wheres(players []PlayerDiagnosis, traces []Trace) {
	n := len(players)
	for _, tr := range traces {
		if tr.Delay == nil || tr.From < 0 || tr.From >= n || tr.To < 0 || tr.To >= n || tr.From == tr.To {
			continue
		}
		d := tr.Delay
		if !ownSide(d.Link) || d.TTL < 1 || !finite(d.AddedMs) || d.AddedMs <= 0 {
			continue
		}
		p := &players[tr.From]
		if p.Where == nil || d.AddedMs > p.Where.AddedMs {
			p.Where = &Where{Link: d.Link, TTL: d.TTL, AddedMs: d.AddedMs}
		}
	}
	for _, tr := range traces {
		if tr.To < 0 || tr.To >= n || tr.From < 0 || tr.From >= n || tr.From == tr.To {
			continue
		}
		w := players[tr.To].Where
		switch {
		case w == nil:
		case tr.Delay != nil && tr.Delay.Link == linkPeer:
			w.Confirmed++
		case tr.Delay == nil && tr.Complete:
			w.contradicted = true
		}
	}
	// A delay on a player's own side shows on every whole path toward it
	// (the peer's answer crosses its line out, the probe its line in):
	// another player's complete trace toward it with no delay at all says
	// the player's own trace saw something else — a delay on the way back
	// of its probes' answers, which crossed a queue the game's datagrams
	// to it do not. Such a where is dropped.
	for i := range players {
		if w := players[i].Where; w != nil && w.contradicted {
			players[i].Where = nil
		}
	}
}

// sharedHop finds the hop past the homes (an ISP's or beyond) where the
// delay of traces from at least two different players starts: the one
// most players share, then the one that adds most. nil when there is none.
func sharedHop(names []string, traces []Trace) *SharedHop {
	type seen struct {
		from  []int
		added []float64
	}
	by := map[netip.Addr]*seen{}
	for _, tr := range traces {
		d := tr.Delay
		if d == nil || (d.Link != linkISP && d.Link != linkBeyond) || tr.From < 0 || tr.From >= len(names) {
			continue
		}
		if d.TTL < 1 || d.TTL > len(tr.Hops) || !tr.Hops[d.TTL-1].IsValid() || !finite(d.AddedMs) {
			continue
		}
		a := tr.Hops[d.TTL-1].Unmap()
		s := by[a]
		if s == nil {
			s = &seen{}
			by[a] = s
		}
		if !slices.Contains(s.from, tr.From) {
			s.from = append(s.from, tr.From)
		}
		s.added = append(s.added, d.AddedMs)
	}
	var best *SharedHop
	for a, s := range by {
		if len(s.from) < 2 {
			continue
		}
		slices.Sort(s.from)
		slices.Sort(s.added)
		h := &SharedHop{Addr: a, AddedMs: median(s.added)}
		for _, i := range s.from {
			h.Players = append(h.Players, names[i])
		}
		switch {
		case best == nil, len(h.Players) > len(best.Players),
			len(h.Players) == len(best.Players) && (h.AddedMs > best.AddedMs || h.AddedMs == best.AddedMs && h.Addr.Less(best.Addr)):
			best = h
		}
	}
	return best
}

// reasonSharedHop is the Reason when a shared hop, not the player the
// round trips point at, explains the delay.
const reasonSharedHop = "shared_hop"

// locate fills in where each player's delay starts and the shared hop,
// from the traces. A shared hop past the homes withdraws a culprit whose
// own traces show nothing on its own side, or whose delay starts at its
// ISP on a path that crosses that hop: the round trips and the waits point
// at it only because its paths cross that hop.
func locate(d *Diagnosis, in Input) {
	if len(in.Traces) == 0 {
		return
	}
	wheres(d.Players, in.Traces)
	names := make([]string, len(in.Players))
	for i, p := range in.Players {
		names[i] = p.Name
	}
	d.SharedHop = sharedHop(names, in.Traces)
	if h := d.SharedHop; h != nil && d.Culprit != "" {
		// Withdrawn too: a culprit whose own delay starts at its ISP, on a
		// path that crosses the shared hop — that hop, not its home.
		if w := d.player(d.Culprit).Where; w == nil || slices.Contains(h.Players, d.Culprit) && sharedWhere(d, w) {
			d.Culprit, d.Reason = "", reasonSharedHop
		}
	}
}

// median of sorted values; NaN for none.
func median(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// advice is the verdict's sentences about where the delay starts and
// what to try, from the hop traces and the load tests, two at most: the
// culprit's own (playerAdvice: a bloated line's fix before where the
// traces put its delay, unless they put it in the home network or at the
// ISP), else the shared hop (with nobody named); then the first sentence
// of any other player whose own traces show a delay on its side of at
// least whereShown — two slow homes may tie, or one be named, and each
// still needs its own advice. When none of that says anything, the player
// other than the culprit whose line a load test found most bloated: its
// line is fine now but not when busy.
func advice(d *Diagnosis) []string {
	var out []string
	if d.Culprit != "" {
		p := d.player(d.Culprit)
		out = append(out, playerAdvice(&p)...)
	} else if h := d.SharedHop; h != nil {
		out = append(out, "The delay starts past the players' ISPs, at "+h.Addr.String()+", which "+listNames(h.Players)+
			" paths share ("+msText(h.AddedMs)+"): nothing any player can change at home.")
	}
	for i := range d.Players {
		p := &d.Players[i]
		if w := p.Where; w != nil && p.Player != d.Culprit && w.AddedMs >= whereShown && len(out) < 2 && !sharedWhere(d, w) {
			out = append(out, playerAdvice(p)[0])
		}
	}
	if p := mostBloated(d); len(out) == 0 && p != nil {
		out = append(out, bloatAdvice(p.Player, p.Bufferbloat))
	}
	return out
}

// sharedWhere: w starts at the ISP, and a shared hop explains the delay
// there already (its own sentence says so).
func sharedWhere(d *Diagnosis, w *Where) bool { return d.SharedHop != nil && w.Link == linkISP }

// whereShown is the least delay on a player's own side that the verdict
// gives advice for when nobody is named: one frame each way at 30 fps,
// below which no rung moves (the bar of a slow path too).
const whereShown = slowPathMs

// whereAdvice is the advice for where a player's delay starts; b is its
// line's load test, nil when none ran: a delay on the line out that the
// test found no deep queue for is the line's own.
func whereAdvice(name string, w *Where, b *Bufferbloat) string {
	if w.Link == linkUplink && !bloated(b) {
		if s := lineNotQueue(name, w, b); s != "" {
			return s
		}
	}
	head := name + "'s delay (" + msText(w.AddedMs) + ") starts "
	switch w.Link {
	case linkLAN:
		return head + "between " + name + "'s machine and the home router (Wi-Fi or cable): a cable, or being closer to the router, should help."
	case linkUplink:
		return head + "on " + name + "'s line out of the house, often the router's upload queue: a latency-under-load test will tell."
	case linkISP:
		return head + "at " + name + "'s ISP (hop " + strconv.Itoa(w.TTL) + "): nothing at home will fix it; the ISP or another time of day may."
	}
	return ""
}

// listNames is "bob's", "bob's and cyd's", "ada's, bob's and cyd's".
func listNames(names []string) string {
	out := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			out += " and "
		default:
			out += ", "
		}
		out += n + "'s"
	}
	return out
}
