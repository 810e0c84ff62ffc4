package record

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/units"
)

// The hop traces in a recording: `path` events (one a second per traced
// link) and the Views' Paths are checked like every other record, and the
// report prints each traced link's last path.

// maxTTL is the highest hop limit a probe carries (one byte).
const maxTTL = 255

// maxPathSent bounds a hop's outcomes: the tracer keeps its latest 100;
// anything far past that is no tracer's.
const maxPathSent = 1 << 20

func checkLabel(key string, l vocab.HopLink) error {
	if !l.Valid() {
		return fmt.Errorf("%s %q is not a link a trace names", key, l)
	}
	return nil
}

func checkLoss(key string, x float64) error {
	if !(x >= 0 && x <= 1) { // NaN fails too
		return fmt.Errorf("%s %v is outside 0..1", key, x)
	}
	return nil
}

// checkHopAddr: a router's or the peer's address, without a zone (which
// is text from outside, and no hop has one).
func checkHopAddr(a netip.Addr) error {
	if !a.IsValid() || a.Zone() != "" {
		return fmt.Errorf("hop address %q is not an address", a.String())
	}
	return nil
}

// checkHop is what every hop of a trace obeys: a hop limit after the one
// before it (prev), a known link, counts and a loss share in bounds.
func checkHop(prev, ttl int, link vocab.HopLink, sent int, loss float64) error {
	if ttl <= prev || ttl > maxTTL {
		return fmt.Errorf("hop ttl %d after %d is outside 1..%d or out of order", ttl, prev, maxTTL)
	}
	if sent < 0 || sent > maxPathSent {
		return fmt.Errorf("hop sent %d is outside 0..%d", sent, maxPathSent)
	}
	return errors.Join(checkLabel("hop link", link), checkLoss("hop loss", loss))
}

// checkPathStat: a `path` event's (or a report's) path: its ends are
// names, its hops in order and in bounds, its round trips plausible, and
// a machine that cannot trace has no hops.
func checkPathStat(p *feed.PathStat) error {
	err := errors.Join(checkName("path from", p.From), checkName("path to", p.To))
	if p.Why != nil {
		err = errors.Join(err, checkText("path why", *p.Why))
	}
	tooMany, hopsErr := checkHops(p.Available, p.Hops, func(prev int, h feed.PathHopStat) (int, error) {
		err := errors.Join(checkHop(prev, h.TTL, h.Link, h.Sent, h.Loss),
			checkOptMs("best_ms", h.BestMs), checkOptMs("rtt_ms", h.RTTMs), checkOptMs("worst_ms", h.WorstMs))
		if h.Addr != nil {
			err = errors.Join(err, checkHopAddr(*h.Addr))
		}
		return h.TTL, err
	})
	if err = errors.Join(err, hopsErr); tooMany {
		return err
	}
	if d := p.DelayStarts; d != nil {
		err = errors.Join(err, checkHop(0, d.TTL, d.Link, 0, 0), checkMs("added_ms", d.AddedMs))
	}
	if l := p.LossStarts; l != nil {
		err = errors.Join(err, checkHop(0, l.TTL, l.Link, 0, l.Loss))
	}
	return err
}

func checkDur(key string, d time.Duration) error {
	if d < 0 || d > maxAt {
		return fmt.Errorf("%s %v is outside 0..%v", key, d, maxAt)
	}
	return nil
}

// checkHops checks a path's hops: none on a path that cannot be traced,
// at most maxTTL of them (tooMany: past reading one by one), and each one
// by check, which gets the TTL of the hop before it and returns its own.
func checkHops[H any](available bool, hops []H, check func(prev int, h H) (ttl int, err error)) (tooMany bool, err error) {
	if !available && len(hops) > 0 {
		err = errors.New("hops on a path that cannot be traced")
	}
	if len(hops) > maxTTL {
		return true, errors.Join(err, fmt.Errorf("%d hops", len(hops)))
	}
	prev := 0
	for _, h := range hops {
		ttl, hopErr := check(prev, h)
		err = errors.Join(err, hopErr)
		prev = ttl
	}
	return false, err
}

// checkPathView: a View's path, by the same rules as the event's.
func checkPathView(p *feed.PathView) error {
	err := errors.Join(checkName("path peer", p.Peer), checkText("path why", p.Why))
	tooMany, hopsErr := checkHops(p.Available, p.Hops, func(prev int, h feed.PathHop) (int, error) {
		err := errors.Join(checkHop(prev, h.TTL, h.Link, h.Sent, h.Loss),
			checkDur("best", h.Best), checkDur("median", h.Median), checkDur("last", h.Last), checkDur("worst", h.Worst))
		if h.Addr.IsValid() {
			err = errors.Join(err, checkHopAddr(h.Addr))
		}
		return h.TTL, err
	})
	if err = errors.Join(err, hopsErr); tooMany {
		return err
	}
	for _, s := range []*feed.PathStart{p.DelayStarts, p.LossStarts} {
		if s != nil {
			err = errors.Join(err, checkHop(0, s.TTL, s.Link, 0, s.Loss), checkDur("added", s.Added))
		}
	}
	return err
}

// pathReport is one traced link's last path in a recording.
type pathReport struct {
	AtMs float64 `json:"at_ms"`
	feed.PathStat
}

// path keeps the latest path event of each traced link.
func (s *summary) path(at time.Duration, e *feed.PathEvent) {
	if s.paths == nil {
		s.paths = map[[2]string]pathReport{}
	}
	s.paths[[2]string{e.From, e.To}] = pathReport{AtMs: units.Millis(at), PathStat: e.PathStat}
}

// finishPaths puts the last paths in the report, in name order.
func (s *summary) finishPaths() {
	for _, p := range s.paths {
		s.r.Paths = append(s.r.Paths, p)
	}
	sort.Slice(s.r.Paths, func(i, j int) bool {
		a, b := s.r.Paths[i], s.r.Paths[j]
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
}

// pathNote is what a path says in words: whether it reached the peer and
// where delay and loss start; esc escapes the link labels.
func (p *pathReport) pathNote(esc func(string) string) string {
	parts := []string{"reached the peer"}
	if !p.Complete {
		parts[0] = "the peer has not answered yet"
	}
	if d := p.DelayStarts; d != nil {
		parts = append(parts, fmt.Sprintf("delay starts at hop %d (%s), +%.1f ms", d.TTL, esc(string(d.Link)), d.AddedMs))
	} else {
		parts = append(parts, "no added delay")
	}
	if l := p.LossStarts; l != nil {
		parts = append(parts, fmt.Sprintf("loss starts at hop %d (%s), %.1f%%", l.TTL, esc(string(l.Link)), l.Loss*100))
	} else {
		parts = append(parts, "no loss")
	}
	return strings.Join(parts, "; ")
}

// hopCells are one hop's cells: hop, address, link, sent, loss, best,
// median, worst, note.
func hopCells(h feed.PathHopStat, esc func(string) string) []string {
	addr := "—" // never answered
	if h.Addr != nil {
		addr = esc(h.Addr.String())
	}
	note := ""
	if h.RateLimited {
		note = "rate-limited"
	}
	loss := math.Round(h.Loss*1000) / 10
	return []string{fmt.Sprint(h.TTL), addr, esc(string(h.Link)), fmt.Sprint(h.Sent), fmt.Sprintf("%.1f%%", loss),
		num(h.BestMs, 1), num(h.RTTMs, 1), num(h.WorstMs, 1), note}
}

// textPaths prints each traced link's last path as a table.
func (r *report) textPaths(b *bytes.Buffer) {
	if len(r.Paths) == 0 {
		return
	}
	esc := textsafe.Terminal
	fmt.Fprintf(b, "\nPaths (the last trace of each traced link; round trips in ms)\n")
	for i := range r.Paths {
		p := &r.Paths[i]
		if !p.Available {
			fmt.Fprintf(b, "  %s → %s at %s: not traced: %s\n", esc(p.From), esc(p.To), clock(p.AtMs), esc(why(p.Why)))
			continue
		}
		fmt.Fprintf(b, "  %s → %s at %s: %s\n", esc(p.From), esc(p.To), clock(p.AtMs), p.pathNote(esc))
		var t bytes.Buffer
		tw := tabwriter.NewWriter(&t, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    hop\taddress\tlink\tsent\tloss\tbest\tmedian\tworst\t\n")
		for _, h := range p.Hops {
			fmt.Fprintf(tw, "    %s\n", strings.Join(hopCells(h, esc), "\t"))
		}
		tw.Flush()
		for line := range strings.Lines(t.String()) { // no padding after the last cell
			b.WriteString(strings.TrimRight(line, " \n"))
			b.WriteByte('\n')
		}
	}
}

// markdownPaths prints each traced link's last path as a table.
func (r *report) markdownPaths(b *bytes.Buffer) {
	cell, prose := textsafe.MarkdownCell, textsafe.MarkdownText
	for i := range r.Paths {
		p := &r.Paths[i]
		if !p.Available {
			fmt.Fprintf(b, "\n**Path %s → %s** at %s: not traced: %s.\n", prose(p.From), prose(p.To), clock(p.AtMs), prose(why(p.Why)))
			continue
		}
		fmt.Fprintf(b, "\n**Path %s → %s** at %s: %s.\n\n", prose(p.From), prose(p.To), clock(p.AtMs), p.pathNote(prose))
		fmt.Fprintf(b, "| hop | address | link | sent | loss | best ms | median ms | worst ms | |\n")
		fmt.Fprintf(b, "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
		for _, h := range p.Hops {
			fmt.Fprintf(b, "| %s |\n", strings.Join(hopCells(h, cell), " | "))
		}
	}
}

func why(p *string) string {
	if p == nil || *p == "" {
		return "no reason given"
	}
	return *p
}
