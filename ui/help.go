package ui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// helpPane is the `?` screen: every key, then a glossary of every short
// form and mark on screen. It scrolls with ↑/↓ when the terminal
// is too low to show it whole.
type helpPane struct {
	*ctx
	top int // first line shown
}

// glossary explains every abbreviation and mark the views use, in the
// order a player meets them. A label means one thing in every view: a
// link's round trip is RTT wherever it is shown, a player's own part of
// the round trips is OWN RTT, the worst round trip a report gives is
// WORST RTT.
var glossary = [][2]string{
	{"t 00:35", "session time: the game's time since it started, the same on every machine (it stands still while the game waits); lobby 00:05 before the start"},
	{"RTT", "a link's round trip: the smoothed time a packet takes there and back (SRTT), as this machine measures it, in ms; the Link and Matrix views' round trip too"},
	{"JIT, JITTER", "how much a link's round trip varies (RTTVAR), in ms; the ± after a round trip"},
	{"RETRY", "how long an unanswered packet waits before it is sent again, in ms"},
	{"T/O, TIMEOUT", "how long without an answer before the connection counts as lost"},
	{"RSND, RESENT", "share of our packets sent again, over the last 10 s"},
	{"IN, LOST IN", "share of the player's packets that never reached us, last 10 s"},
	{"OUT, LOST OUT", "share of ours the player reports lost, last 10 s"},
	{"WAIT, WAITED", "time this machine spent waiting for that player's commands"},
	{"needs", "the tier and rung a round trip alone needs by the master's rule: the round trip plus a quarter of headroom, as lagscope rung --rtt says with headroom; a round trip's colour and a Matrix cell's tier are this one"},
	{"meas, prov", "link states: measured; provisional (the estimate is not settled yet)"},
	{"unmeas, BAD", "not measured yet; a bad connection (nothing heard for too long)"},
	{"(obs), °", "an observer: watches the game and sends no commands"},
	{"⇄, relayed", "no direct path: the link goes through the host, and its round trip is the path through the host"},
	{"!  >", "the worst link; the cursor"},
	{unknown, "not known (never written as 0)"},
	{"5/15", "a timing: commands go out every 5 frames and run 15 frames later"},
	{"▶ ◆ ○", "rungs: the timing in force, the target, the rung the worst reported round trip needs now, with headroom"},
	{"╭ ┌", "chart: the round trip, the retry time"},
	{"• ✕", "chart: a second with resends, a second with a bad connection"},
	{"rsnd in out", "loss lanes: resent, lost in, lost out; · is none, a taller block more"},
	{"~ ! ? ·", "matrix: provisional, bad, not known here, the player itself"},
	{"ALERT", "marks the message an alert belongs to; the bell rings with it when the bell is on (b)"},
	{"REPORT", "players: the frame a player's latest report was made on; STATUS whether it is still fresh"},
	{"WORST RTT", "players: the worst round trip a player's latest report gave (its slowest link's), what the master's rule reads"},
	{"WORST WAIT", "players: the longest wait a player's latest report gave"},
	{"PROCESS", "time a player's machine needs per frame, in ms, as its latest report says"},
	{"TOTAL, LONGEST", "matrix waits: the time a player has waited in all, its longest recent wait (from its telemetry now)"},
	{"OWN RTT", "diagnosis: a player's own part of every round trip it is on, in ms"},
	{"OWN LOSS", "diagnosis: the loss on a player's own side, out and in together"},
	{"OWN JIT", "diagnosis: a player's own part of the round trips' variation, in ms (not a link's JITTER)"},
	{"CAUSED", "diagnosis: time the others waited for that player's commands"},
	{"WITHOUT", "diagnosis: the rung the others would need without that player"},
	{"MEAN RTT", "diagnosis: a pair's round trip, the mean of both ways' RTT at the match's last timing check"},
	{"EXPECTED", "diagnosis: what a pair's two players' OWN RTT add up to"},
	{"EXCESS", "diagnosis: how far a pair's MEAN RTT exceeds its EXPECTED: the path between them"},
	{"!", "diagnosis: the player or the path that holds the match back"},
	{"HOP", "path (p): a router on the way to the player, 1 the nearest; the last is the player's machine"},
	{"lan … peer", "path: the link into a hop: lan your machine to your router, uplink your router to your internet provider, isp inside the provider, beyond past it, peer the last link, into the player's machine"},
	{"LOSS", "a share lost, of the row's own traffic: diagnosis links, the pair's packets; incidents, the most it lost over 5 s; path, the probes to a hop that got no answer; load test, the load that did not arrive"},
	{"BEST, WORST", "path: a hop's fastest and slowest answer, MEDIAN the middle one, in ms"},
	{"rate-limited", "path: a router that answers only some probes while the hops after it lose nothing: not loss"},
	{"ADDED, P90", "load test (L): the round trip the load added, its median and 90th percentile, in ms"},
	{"A+ A B C D F", "load test grades by the added round trip: under 5, 30, 60, 200 and 400 ms, F above"},
	{"Mbit/s", "load test: what arrived while the line was held full"},
	{"capped", "load test: the cap, not the line, ended the ramp; the line is faster, and the grade holds up to the cap"},
}

// key scrolls the help; it reports whether it used the key.
func (p *helpPane) key(msg tea.KeyMsg) bool {
	k := &p.keys
	switch {
	case key.Matches(msg, k.Up):
		p.top--
	case key.Matches(msg, k.Down):
		p.top++
	case key.Matches(msg, k.PageUp):
		p.top -= 10
	case key.Matches(msg, k.PageDown):
		p.top += 10
	default:
		return false
	}
	p.top = max(0, p.top)
	return true
}

func (p *helpPane) view(w, h int, matrixColumnKeys string) string {
	p.help.Width = w
	st := &p.st
	lines := []string{p.rule(st.title.Render("Keys"), w), ""}
	lines = append(lines, strings.Split(p.help.FullHelpView(p.keys.FullHelp()), "\n")...)
	lines = append(lines, "",
		st.muted.Render("Mouse: the wheel moves through links; click a row to focus it,"),
		st.muted.Render("       a heading to sort by it, a tab to open it."),
		st.muted.Render("Matrix view: ↑/↓ choose who measures (the row), "+matrixColumnKeys+" to whom (the column)."),
		st.muted.Render("Path view (p): the hops to a player; ↑/↓ other links, pgdn more, esc back."))
	if !p.keys.replay {
		// A replay runs no load test.
		lines = append(lines,
			st.muted.Render("Load test (L): fills the line to the player in focus for about 25 s, once you"),
			st.muted.Render("       say y; L again stops it. The Link view shows it and its result."))
	}
	lines = append(lines, "", p.rule(st.title.Render("Words and marks"), w))
	const termW = 14
	for _, g := range slices.Concat(glossary, incidentGlossary) {
		for i, l := range wrap(g[1], w-termW-2) {
			term := ""
			if i == 0 {
				term = g[0]
			}
			lines = append(lines, "  "+st.accent.Render(fit(term, termW))+st.muted.Render(l))
		}
	}
	lines = append(lines, "",
		st.muted.Render("Loss and resend shares are per interval, differenced from the running totals."))
	// Scroll: keep the last page full, and say when there is more.
	p.top = min(p.top, max(0, len(lines)-h))
	lines = lines[p.top:]
	if len(lines) > h && h > 0 {
		lines = append(lines[:h-1:h-1], st.accent.Render("  ↓ more (↑/↓ scroll)"))
	}
	return block(lines, w, h)
}
