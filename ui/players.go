package ui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// playersPane is the Players view; it keeps nothing of its own.
type playersPane struct{ *ctx }

// view lists every machine of the session with its latest report
// (S5–S8), the host's relayed pairs, and ranks whom this machine has
// waited for.
func (p *playersPane) view(s *session, w, h int) string {
	out := p.playerLines(s, w)
	out = p.relayLines(out, s, w)
	out = p.waitLines(out, s, w)
	return block(out, w, h)
}

// playerLines are the Players table: its title, heading and a row per
// machine.
func (p *playersPane) playerLines(s *session, w int) []string {
	st := &p.st
	out := []string{p.rule(st.title.Render("Players")+st.muted.Render("  latest reports: worst round trip, worst wait, processing time"), w)}
	// A report's round trip is the player's worst link's (S6), its wait
	// the longest of the interval: labelled so, apart from the link
	// table's RTT (one link's smoothed round trip) and the Matrix's
	// LONGEST (the telemetry's wait now).
	head := fit("  "+fit("PLAYER", 12)+fit("ROLE", 16)+padLeft("REPORT", 8)+padLeft("WORST RTT", 11)+padLeft("WORST WAIT", 12)+padLeft("PROCESS", 9)+"  STATUS", w)
	out = append(out, st.muted.Render(head))
	for i := range s.view.Players {
		pv := &s.view.Players[i]
		rep, rtt, wait, proc, fresh := unknown, unknown, unknown, unknown, unknown
		if r := pv.Report; r != nil {
			rep = strconv.Itoa(r.Frame)
			if r.RTT != nil {
				rtt = fmtMs(*r.RTT, true)
			} else {
				rtt = unknown
			}
			wait, proc = fmtWait(r.Wait), fmtWait(r.Process)
			fresh = "expired"
			if r.Fresh {
				fresh = "fresh"
			}
		}
		line := "  " + st.text.Render(fitName(pv.Name, 12)) + st.muted.Render(fit(roleOf(pv), 16)) +
			st.text.Render(padLeft(rep, 8)+padLeft(rtt, 11)+padLeft(wait, 12)+padLeft(proc, 9)) + "  " + st.text.Render(fresh)
		out = append(out, fit(line, w))
	}
	if len(s.view.Players) == 0 {
		out = append(out, st.muted.Render("  no players yet"))
	}
	return out
}

// roleOf is a machine's roles in the session, in words.
func roleOf(p *feed.PlayerView) string {
	var role []string
	if p.Self {
		role = append(role, "you")
	}
	if p.Master {
		role = append(role, "master")
	}
	if p.Observer {
		role = append(role, "observer")
	}
	if p.Removed {
		role = append(role, "left")
	}
	if len(role) == 0 {
		role = append(role, "player")
	}
	return strings.Join(role, ", ")
}

// relayLines add the host's relay to out, when it relays: what it
// forwarded for each pair that found no direct path, and what it refused
// over the pair's budget.
func (p *playersPane) relayLines(out []string, s *session, w int) []string {
	if len(s.view.Relay) == 0 {
		return out
	}
	st := &p.st
	out = append(out, "", p.rule(st.title.Render("Relayed through this machine")+st.muted.Render("  pairs with no direct path"), w))
	out = append(out, st.muted.Render(fit("  "+fit("PAIR", 22)+padLeft("FORWARDED", 11)+padLeft("BYTES", 10)+padLeft("REFUSED", 10)+padLeft("BYTES", 10), w)))
	for i := range s.view.Relay {
		r := &s.view.Relay[i]
		refused := st.text
		if r.RefusedDatagrams > 0 {
			refused = st.warn
		}
		line := "  " + st.text.Render(fit(textOf(r.Between[0])+" "+markRelayed+" "+textOf(r.Between[1]), 22)) +
			st.text.Render(padLeft(fmtCount(r.Datagrams, true), 11)+padLeft(fmtBytes(r.Bytes), 10)) +
			refused.Render(padLeft(fmtCount(r.RefusedDatagrams, true), 10)+padLeft(fmtBytes(r.RefusedBytes), 10))
		out = append(out, fit(line, w))
	}
	return out
}

// waitLines add to out the peers this machine has waited for, longest
// first, each with a bar on one scale.
func (p *playersPane) waitLines(out []string, s *session, w int) []string {
	st := &p.st
	out = append(out, "", p.rule(st.title.Render("Who made us wait")+st.muted.Render("  time this machine spent waiting for each peer's commands"), w))
	links := s.current()
	// Peers we never waited for are not ranked.
	kept := links[:0]
	for _, l := range links {
		if l.last.Caused > 0 {
			kept = append(kept, l)
		}
	}
	links = kept
	if len(links) == 0 {
		out = append(out, st.muted.Render("  nobody has made us wait"))
	}
	sort.SliceStable(links, func(i, j int) bool { return links[i].last.Caused > links[j].last.Caused })
	var top time.Duration
	for _, l := range links {
		top = max(top, l.last.Caused)
	}
	barW := max(10, w-40)
	for _, l := range links {
		n := 0
		if top > 0 {
			n = int(float64(barW) * float64(l.last.Caused) / float64(top))
		}
		bar := st.worst.Render(strings.Repeat("█", n)) + st.border.Render(strings.Repeat("·", barW-n))
		out = append(out, fit("  "+st.text.Render(fit(l.peer, 14))+padLeft(fmtWait(l.last.Caused), 8)+"  "+bar, w))
	}
	return out
}
