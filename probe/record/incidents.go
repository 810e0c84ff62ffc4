package record

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/vocab"
)

// The session's story: the incidents of a recording, worst first, head the
// text and markdown reports, and `report --format json` lists them as
// `incidents`, each in the shape of its `incident` close line.

// incidentsProtocol is the first protocol whose machines tell incidents:
// a recording of an older one holds no incident lines because none were
// told, not because nothing happened.
const incidentsProtocol = 2

// reportIncidentRows is how many incidents the text and markdown reports
// list, worst first; the rest are counted in one line.
const reportIncidentRows = 5

// incidentAcc is one incident as the recording tells it so far: the latest
// line of it, and the machine whose lines those are.
type incidentAcc struct {
	from string
	inc  feed.Incident
}

// incidentKey names an incident on the machine that told it: ids are a
// machine's own.
type incidentKey struct {
	from string
	id   int
}

// incidentLine keeps the latest line of each incident. Every machine tells
// the same incidents (same subject, about the same time), so a recording of
// several machines' lines — a simulation whose narrating machine left, a
// demo that publishes every machine — would tell each one several times: a
// machine's first line of an incident whose subject another machine's line
// left open continues that incident instead of starting another.
func (s *summary) incidentLine(from string, inc feed.Incident) {
	k := incidentKey{from, inc.ID}
	if a := s.incidentOf[k]; a != nil {
		a.inc = inc
		return
	}
	for _, a := range s.incidents {
		if a.from != from && a.inc.Phase != vocab.IncidentClose && sameSubject(&a.inc, &inc) {
			delete(s.incidentOf, incidentKey{a.from, a.inc.ID})
			a.from, a.inc = from, inc
			s.incidentOf[k] = a
			return
		}
	}
	a := &incidentAcc{from: from, inc: inc}
	s.incidents = append(s.incidents, a)
	s.incidentOf[k] = a
}

// sameSubject says whether two incidents name the same player, the same
// path, or both no one.
func sameSubject(a, b *feed.Incident) bool {
	switch {
	case a.Player != nil || b.Player != nil:
		return a.Player != nil && b.Player != nil && *a.Player == *b.Player
	case a.Between != nil || b.Between != nil:
		return a.Between != nil && b.Between != nil && *a.Between == *b.Between
	}
	return true
}

// finishIncidents sets the report's incidents: the summary's when the
// recording has one (every incident of the run as its close line), else
// the latest line of each incident recorded, those still open at the end
// of the recording included. They are null for a recording made before
// machines told incidents, in the order they opened otherwise.
func (s *summary) finishIncidents(protocol int) {
	r := s.r
	switch {
	case s.endIncidents != nil:
		r.Incidents = slices.Clone(s.endIncidents)
	case len(s.incidents) > 0 || protocol >= incidentsProtocol:
		r.Incidents = make([]feed.Incident, 0, len(s.incidents))
		for _, a := range s.incidents {
			r.Incidents = append(r.Incidents, a.inc)
		}
	default:
		return
	}
	slices.SortStableFunc(r.Incidents, func(a, b feed.Incident) int {
		if a.OpenedMs != b.OpenedMs {
			if a.OpenedMs < b.OpenedMs {
				return -1
			}
			return 1
		}
		return a.ID - b.ID
	})
}

// worstFirst is the incidents by what they cost, most first; among equals
// the earlier first.
func worstFirst(incs []feed.Incident) []feed.Incident {
	out := slices.Clone(incs)
	slices.SortStableFunc(out, func(a, b feed.Incident) int {
		switch {
		case a.WaitMs > b.WaitMs:
			return -1
		case a.WaitMs < b.WaitMs:
			return 1
		}
		return 0
	})
	return out
}

// sessionLine is the report's headline: how many incidents, what they cost
// together, or why there are none to tell.
func (r *report) sessionLine() string {
	if r.Incidents == nil {
		return "no incidents recorded: this recording was made by a lagscope from before incidents."
	}
	n := len(r.Incidents)
	if n == 0 {
		return "no incidents: nothing held the match back long enough to open one."
	}
	total, open := 0.0, false
	for _, inc := range r.Incidents {
		total += inc.WaitMs
		open = open || inc.ClosedMs == nil
	}
	cost := seconds(total) + " of waiting"
	if open {
		cost = "at least " + cost
	}
	if n == 1 {
		return "1 incident, " + cost + ":"
	}
	return fmt.Sprintf("%d incidents, %s in all, the worst first:", n, cost)
}

// incidentLine is one incident in a line: when, who, why, where, what it
// cost, how far it moved the timing, and whether a load test explains it.
// An incident without its close ends at the cut: it is open there, and its
// cost is what its latest line counted.
func (r *report) incidentLine(inc *feed.Incident, esc func(string) string) string {
	var b strings.Builder
	b.WriteString(incidentClock(inc.OpenedMs) + "–")
	if inc.ClosedMs != nil {
		b.WriteString(incidentClock(*inc.ClosedMs))
		if r.endFrame != nil && *inc.ClosedFrame >= *r.endFrame {
			// Closed by the end of the run, not by calm.
			b.WriteString(" (until the end)")
		}
	} else {
		// The cut is the recording's end, as the title gives its length.
		b.WriteString(clock(r.LengthMs) + " (open at the cut)")
	}
	b.WriteString(", " + incidentWho(inc, esc) + ": " + incidentCause(inc, esc))
	b.WriteString("; where: ")
	if w := inc.Where; w != nil {
		fmt.Fprintf(&b, "hop %d (%s), +%.1f ms", w.TTL, esc(string(w.Link)), w.AddedMs)
	} else {
		b.WriteString("not known")
	}
	b.WriteString("; cost ")
	if inc.ClosedMs == nil {
		b.WriteString("at least ")
	}
	b.WriteString(seconds(inc.WaitMs) + " of waiting")
	switch inc.FramesWaited {
	case 0:
	case 1:
		b.WriteString(" on 1 frame")
	default:
		fmt.Fprintf(&b, " on %d frames", inc.FramesWaited)
	}
	if inc.RungPeak > inc.RungFrom {
		b.WriteString("; timing " + rungRise(inc.RungFrom, inc.RungPeak))
	}
	if l := inc.LoadTest; l != nil {
		fmt.Fprintf(&b, "; during %s's load test to %s: the test's price, not a fault", esc(l.From), esc(l.To))
	}
	return b.String()
}

// incidentClock is a time of an incident as its own sentences and the
// screens say it: the whole seconds gone, "since 00:10" from 10.4 s on.
func incidentClock(ms float64) string {
	return clock(float64(int64(max(ms, 0)/1000) * 1000))
}

// incidentWho names the player or the path, or says that no one was told.
func incidentWho(inc *feed.Incident, esc func(string) string) string {
	switch {
	case inc.Player != nil:
		return esc(*inc.Player)
	case inc.Between != nil:
		return "the path " + esc(inc.Between[0]) + " – " + esc(inc.Between[1])
	}
	return "no one told"
}

// incidentCause is the cause with how far it went: the largest rise of
// the round trips above their own normal, the largest loss.
func incidentCause(inc *feed.Incident, esc func(string) string) string {
	c := esc(string(inc.Cause))
	switch inc.Cause {
	case vocab.CauseLatency, vocab.CauseBufferbloat:
		if inc.AddedMs != nil {
			return fmt.Sprintf("%s (round trips up to %.0f ms above normal)", c, *inc.AddedMs)
		}
	case vocab.CauseLoss:
		if inc.Loss != nil {
			return fmt.Sprintf("%s (up to %.1f %% of packets)", c, *inc.Loss*100)
		}
	case vocab.CauseProcessing:
		return c + " (a machine slower than the frame rate)"
	case vocab.CauseUnknown:
		return "cause not known"
	}
	return c
}

// rungRise says how far the timing's target rose: "Fast (rung 1) →
// Normal (rung 4)", or "rung 1 → 2 (Fast)" within one tier.
func rungRise(from, peak int) string {
	a, b := rungs.RungTiming(from).Tier(), rungs.RungTiming(peak).Tier()
	if a == b {
		return fmt.Sprintf("rung %d → %d (%s)", from, peak, a)
	}
	return fmt.Sprintf("%s (rung %d) → %s (rung %d)", a, from, b, peak)
}

// seconds says milliseconds of waiting in seconds: "18.0 s".
func seconds(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) }

// moreIncidents counts the incidents left out of the list, "" when none is.
func moreIncidents(rest []feed.Incident) string {
	if len(rest) == 0 {
		return ""
	}
	total := 0.0
	for _, inc := range rest {
		total += inc.WaitMs
	}
	if len(rest) == 1 {
		return "1 more, " + seconds(total) + " of waiting"
	}
	return fmt.Sprintf("%d more, %s of waiting", len(rest), seconds(total))
}

// textIncidents is the text report's headline: the session line and one
// line per incident, worst first.
func (r *report) textIncidents(b *bytes.Buffer, esc func(string) string) {
	fmt.Fprintf(b, "\nSession: %s\n", r.sessionLine())
	list := worstFirst(r.Incidents)
	shown := list[:min(len(list), reportIncidentRows)]
	for i := range shown {
		fmt.Fprintf(b, "  %s\n", r.incidentLine(&shown[i], esc))
	}
	if m := moreIncidents(list[len(shown):]); m != "" {
		fmt.Fprintf(b, "  … %s\n", m)
	}
}

// markdownIncidents is the markdown report's headline, in the title's
// paragraph (after its hard line break), then the incidents as a list.
func (r *report) markdownIncidents(b *bytes.Buffer, prose func(string) string) {
	fmt.Fprintf(b, "**Session:** %s\n", r.sessionLine())
	list := worstFirst(r.Incidents)
	shown := list[:min(len(list), reportIncidentRows)]
	for i := range shown {
		fmt.Fprintf(b, "- %s\n", r.incidentLine(&shown[i], prose))
	}
	if m := moreIncidents(list[len(shown):]); m != "" {
		fmt.Fprintf(b, "- … %s\n", m)
	}
	b.WriteString("\n")
}
