package record

import (
	"sort"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// The admin's matrix in a replay: a recording carries what the matrix
// needs, so a replay shows it. A recording leaves View.Matrix out —
// at 64 players it is over a megabyte, more than a record may hold — but
// everything the matrix shows is recorded already, so the cursor rebuilds
// it without a format change:
//
//   - a simulation records every machine's Views: a player's row is its own
//     machine's latest View (its links first-hand, with who made it wait),
//     which is what the simulator fills each machine's matrix with;
//   - a live recording holds one machine's Views and, once a second, a link
//     line for every directed link that machine knows (its own and every
//     other player's from their telemetry): a player's row is its latest
//     batch of link lines.
//
// What neither carries stays unknown, as in a live matrix (L3): a player
// heard of through link lines alone has no waits per link.

// linkLine is one recorded link line, as its measuring player saw it.
type linkLine struct {
	at   time.Duration
	link feed.Link
}

// lineBatch is how far back from a player's newest link line the lines of
// the same batch may lie. A live machine writes a batch once a second, all
// at one instant; half a second keeps the previous batch out, so a pair
// missing from the newest batch is no longer known.
const lineBatch = 500 * time.Millisecond

// matrixSources are the records a matrix is rebuilt from: every machine's
// Views and every player's link lines, each by time.
type matrixSources struct {
	views map[string][]Record   // by the recording machine
	lines map[string][]linkLine // by the measuring player (From)
}

// newMatrixSources indexes rec's Views and the link lines among events
// (sorted by time).
func newMatrixSources(rec *Recording, events []Record) matrixSources {
	s := matrixSources{views: map[string][]Record{}, lines: map[string][]linkLine{}}
	for _, r := range rec.Records {
		if r.Kind == KindView && r.View != nil {
			s.views[r.From] = append(s.views[r.From], r)
		}
	}
	for _, vs := range s.views {
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].At < vs[j].At })
	}
	for _, r := range events {
		e, ok := r.Event.(*feed.LinkEvent)
		if !ok {
			continue
		}
		l, err := e.LinkStat.Link()
		if err != nil {
			continue
		}
		s.lines[l.From] = append(s.lines[l.From], linkLine{at: r.At, link: l})
	}
	return s
}

// viewAt is machine's latest View at or before t, or nil.
func (s *matrixSources) viewAt(machine string, t time.Duration) *Record {
	vs := s.views[machine]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].At > t })
	if i == 0 {
		return nil
	}
	return &vs[i-1]
}

// linesAt is player's latest batch of link lines at or before t, one per
// peer, and the batch's time; nil when it has none yet.
func (s *matrixSources) linesAt(player string, t time.Duration) ([]feed.Link, time.Duration) {
	ls := s.lines[player]
	i := sort.Search(len(ls), func(i int) bool { return ls[i].at > t })
	if i == 0 {
		return nil, 0
	}
	newest := ls[i-1].at
	var out []feed.Link
	seen := map[string]bool{}
	for j := i - 1; j >= 0 && ls[j].at > newest-lineBatch; j-- {
		if !seen[ls[j].link.To] {
			seen[ls[j].link.To] = true
			out = append(out, ls[j].link)
		}
	}
	return out, newest
}

// matrix rebuilds the matrix of v, the shown machine's View at t: a row for
// every seated player still in the session, in house order, as the live
// matrix has them; none before the game starts.
func (s *matrixSources) matrix(v *feed.View, t time.Duration) feed.MatrixView {
	var m feed.MatrixView
	if !v.Started {
		return m
	}
	m.Players = make([]feed.MatrixPlayer, 0, len(v.Players))
	// Peers removed here, or never heard of, have no column: a machine's
	// links to them are left out of every row.
	here := map[string]*feed.PlayerView{}
	for i := range v.Players {
		if p := &v.Players[i]; !p.Removed {
			here[p.Name] = p
		}
	}
	for i := range v.Players {
		pl := &v.Players[i]
		if pl.Observer || pl.Removed {
			continue
		}
		row := feed.MatrixPlayer{Name: pl.Name}
		switch src := s.viewAt(pl.Name, t); {
		case pl.Name == v.Self:
			row = rowOfView(v, here)
			row.Self = true
		case src != nil && src.View.Started:
			row = rowOfView(src.View, here)
			row.Age = max(t-src.At, 0)
		default:
			links, at := s.linesAt(pl.Name, t)
			if links == nil {
				break // not heard of yet: unknown (L3)
			}
			row.Known, row.Age = true, max(t-at, 0)
			for _, l := range links {
				if o := here[l.To]; o != nil {
					row.Links = append(row.Links, feed.MatrixLink{Link: l, Observer: o.Observer})
				}
			}
			sortByHouse(row.Links, v.Players)
		}
		// The waits of a player's last report, as the shown machine
		// executed it, when the row's own machine did not say.
		if row.Wait == nil && pl.Report != nil {
			w, pr := pl.Report.Wait, pl.Report.Process
			row.Wait, row.Process = &w, &pr
			if row.Frame == 0 {
				row.Frame = pl.Report.Frame
			}
		}
		m.Players = append(m.Players, row)
	}
	return m
}

// rowOfView is the row of v's own machine from v: its links first-hand,
// the total it waited as the sum of what each peer made it wait, and the
// waits of its own latest report.
func rowOfView(v *feed.View, here map[string]*feed.PlayerView) feed.MatrixPlayer {
	row := feed.MatrixPlayer{Name: v.Self, Known: true, Frame: v.Frame, Links: make([]feed.MatrixLink, 0, len(v.Links))}
	for _, l := range v.Links {
		if here[l.Peer] == nil {
			continue
		}
		row.Links = append(row.Links, feed.MatrixLink{Link: l.Link, Observer: l.Observer, Caused: l.Caused})
		row.Waited += l.Caused
	}
	for _, p := range v.Players {
		if p.Name == v.Self && p.Report != nil {
			w, pr := p.Report.Wait, p.Report.Process
			row.Wait, row.Process = &w, &pr
		}
	}
	return row
}

// sortByHouse puts links in the house order of their peers.
func sortByHouse(ls []feed.MatrixLink, players []feed.PlayerView) {
	order := make(map[string]int, len(players))
	for i, p := range players {
		order[p.Name] = i
	}
	sort.SliceStable(ls, func(i, j int) bool { return order[ls[i].To] < order[ls[j].To] })
}
