package ui

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// loadSpan is how long a load test lasts at most, as the confirmation
// says it: its phases take at most 25 s (docs/load-test.md).
const loadSpan = loadtest.Longest

// loadKeys is what the footer offers for load testing.
type loadKeys uint8

const (
	loadKeyNone    loadKeys = iota
	loadKeyOffer            // the Link view, where a test can start: L asks for one
	loadKeyStop             // this machine's test runs: L stops it
	loadKeyConfirm          // the confirmation is open: y starts, any other key does not
)

// loadPane is the load test's confirmation and the Link view's Load
// section (docs/load-test.md). The engine runs the test; the pane asks
// before one starts and draws its progress and its result, from the
// typed values of feed.LoadView alone.
type loadPane struct {
	*ctx
	confirm string // the peer the open confirmation asks about; "" when closed
	// flash is the footer note the load key set last, and flashedAt the
	// load testing it was set against: the note goes once that changes
	// (the test waits, runs or has ended), and the status says the rest.
	flash     string
	flashedAt string
}

// timedPhases are the phases a test grades, in the order it runs them:
// the rows of a running test, those not begun yet included.
var timedPhases = vocab.LoadTimed

// Widths of the Load section's columns.
const (
	loadKeyW   = 22 // a label, as the Link view's own
	loadNameW  = 10 // a phase or a direction
	loadBarMax = 40
	loadBarMin = 6
)

// loadKeyState is what the footer offers now.
func (m *tuiModel) loadKeyState() loadKeys {
	l := m.live.view.Load
	switch {
	case m.load.confirm != "":
		return loadKeyConfirm
	case l == nil:
		return loadKeyNone
	case l.Running != nil && l.Running.Tester:
		return loadKeyStop
	case screens[m.screen].name == linkName && m.loadRefusal(m.linkInFocus()) == "":
		return loadKeyOffer
	}
	return loadKeyNone
}

// loadKey is L. While this machine's test runs it stops the test.
// Otherwise it opens the Link view on the link in focus and asks there
// before a test toward it starts, or says in the footer why none can.
func (m *tuiModel) loadKey() tea.Cmd {
	if l := m.live.view.Load; l != nil && l.Running != nil && l.Running.Tester {
		m.loadFlash("stopping the load test to " + l.Running.Peer + "…")
		return m.control(feed.Control{LoadCancel: true})
	}
	peer := m.linkInFocus()
	if why := m.loadRefusal(peer); why != "" {
		m.flash = why
		return nil
	}
	cmd := m.setScreen(screenNamed(linkName))
	m.charts.focus, m.table.selected, m.load.confirm = peer, peer, peer
	return cmd
}

// confirmKey answers the open confirmation: y starts the test (when
// nothing has come in the way since it opened), ctrl+c quits, and any
// other key closes it without sending anything.
func (m *tuiModel) confirmKey(msg tea.KeyMsg) tea.Cmd {
	peer := m.load.confirm
	m.load.confirm = ""
	switch {
	case msg.Type == tea.KeyCtrlC:
		return m.quit()
	case !key.Matches(msg, m.keys.Yes):
		m.flash = "load test not started"
		return nil
	}
	if why := m.loadRefusal(peer); why != "" {
		m.flash = why
		return nil
	}
	m.loadFlash("load test to " + peer + " starting…")
	return m.control(feed.Control{LoadTest: peer})
}

// loadFlash puts a load key's note in the footer until the load testing
// it was set against changes (loadSettle), or the next key.
func (m *tuiModel) loadFlash(note string) {
	m.flash, m.load.flash, m.load.flashedAt = note, note, loadState(m.live.view.Load)
}

// loadSettle clears the load key's note once the engine's load testing
// has moved on from where it was when the note was set: a test started
// with L shows as waiting or running (the status line says so), or has
// ended (its result is in the Link view), however it ended.
func (m *tuiModel) loadSettle() {
	if m.load.flash == "" {
		return
	}
	if m.flash != m.load.flash {
		m.load.flash = ""
		return
	}
	if loadState(m.live.view.Load) != m.load.flashedAt {
		m.flash, m.load.flash = "", ""
		m.dirty = true
	}
}

// loadState is what a load key's note waits to see change: the test this
// machine runs or waits for, the test it knows of, its results.
func loadState(l *feed.LoadView) string {
	if l == nil {
		return ""
	}
	var b strings.Builder
	if r := l.Running; r != nil {
		b.WriteString("run " + r.Peer + " " + strconv.FormatBool(r.Tester) + " " + strconv.FormatBool(r.Waiting) + "\n")
	}
	if v := l.Seen; v != nil {
		b.WriteString("seen " + v.From + " " + v.To + " " + strconv.FormatInt(int64(v.Began), 10) + "\n")
	}
	b.WriteString(strconv.Itoa(len(l.Results)))
	if n := len(l.Results); n > 0 && l.Results[n-1].TMs != nil {
		b.WriteString(" " + strconv.FormatFloat(*l.Results[n-1].TMs, 'g', -1, 64))
	}
	return b.String()
}

// loadStatus is the footer's word on the load test running in the
// session, "" when none runs: this machine's own (how far it is of the
// longest it takes, or that it waits for the session's turn), the one
// loading the line to this machine, or one between two others.
func loadStatus(v *feed.View) string {
	l := v.Load
	if l == nil {
		return ""
	}
	r, seen := l.Running, l.Seen
	switch {
	case r != nil && r.Tester && r.Waiting:
		return "load test to " + r.Peer + ": waiting for the session's turn"
	case seen == nil && r != nil && r.Tester:
		return "load-testing the line to " + r.Peer
	case seen == nil:
		return ""
	}
	of := " — " + seenProgress(v.At, seen)
	switch {
	case seen.From == v.Self:
		return "load-testing the line to " + seen.To + of
	case seen.To == v.Self:
		return seen.From + " is load-testing the line to you" + of
	}
	return seen.From + " is load-testing the line to " + seen.To + of
}

// seenProgress is how far a test is of the longest it takes: "12 s of 25".
func seenProgress(at time.Duration, seen *feed.LoadSeen) string {
	total := int64((seen.For + time.Second - 1) / time.Second)
	n := min(max(int64((at-seen.Began)/time.Second), 0), total)
	return strconv.FormatInt(n, 10) + " s of " + strconv.FormatInt(total, 10)
}

// loadRefusal is why no test toward peer can start now, "" when one
// can: it reads the engine's newest picture, not a paused one.
func (m *tuiModel) loadRefusal(peer string) string {
	v := &m.live.view
	l := v.Load
	switch {
	case l == nil:
		return "no load test here: only a live session runs one"
	case peer == "":
		return "no link to test yet"
	case l.Running != nil && !l.Running.Tester:
		return l.Running.Peer + " is load-testing the line to you: one test at a time"
	case l.Running != nil:
		return "a load test to " + l.Running.Peer + " is running"
	case l.Seen != nil:
		return l.Seen.From + " is load-testing the line to " + l.Seen.To + ": one test at a time"
	case l.NextAt > v.At:
		return "next test possible in " + wholeSeconds(l.NextAt-v.At)
	case linkRelayed(v, peer):
		return "the link to " + peer + " goes through the host: a test would load the host's line"
	}
	return ""
}

// linkRelayed reports whether the link to peer goes through the host.
func linkRelayed(v *feed.View, peer string) bool {
	for i := range v.Links {
		if v.Links[i].Peer == peer {
			return v.Links[i].Relayed
		}
	}
	return false
}

// wholeSeconds is a wait in seconds, rounded up: "42 s".
func wholeSeconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) + " s"
}

// fmtMbit is a rate in bit/s as Mbit/s, unknown when not positive.
func fmtMbit(bits int64) string {
	if bits <= 0 {
		return unknown
	}
	v := float64(bits) / 1e6
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// section is the Link view's Load section for peer, nil when there is
// nothing to show: the confirmation, the test running toward peer, or
// peer's latest result, with a note of a test that runs toward another.
func (p *loadPane) section(s *session, peer string, w int) []string {
	l := s.view.Load
	if p.confirm != "" && p.confirm == peer {
		return p.confirmLines(l, peer, w)
	}
	if l == nil || peer == "" {
		return nil
	}
	if r := l.Running; r != nil && r.Peer == peer {
		return p.runLines(s, r, w)
	}
	if v := l.Seen; v != nil && l.Running == nil && (v.From == peer || v.To == peer) {
		out := []string{p.rule(p.st.title.Render("Load test · "+v.From+" → "+v.To)+p.st.muted.Render("  "+seenProgress(s.view.At, v)), w)}
		out = p.para(out, loadStatus(&s.view), w)
		return p.para(out, "the game keeps running and may slow meanwhile: its waits are the test's price, not a fault", w)
	}
	var out []string
	for i := range l.Results {
		if l.Results[i].To == peer {
			out = p.resultLines(s, &l.Results[i], w)
		}
	}
	if r := l.Running; r != nil {
		if out == nil {
			out = []string{p.rule(p.st.title.Render("Load test"), w)}
		}
		note := "a load test to " + r.Peer + " is running: L stops it"
		if !r.Tester {
			note = r.Peer + " is load-testing the line to you"
		}
		out = p.para(out, note, w)
	}
	return out
}

// para adds plain text to out, wrapped between words and indented.
func (p *loadPane) para(out []string, text string, w int) []string {
	for _, l := range wrap(text, w-2) {
		out = append(out, "  "+p.st.muted.Render(l))
	}
	return out
}

// kv is a labelled line, the value wrapped under itself when it is long.
func (p *loadPane) kv(out []string, k, v string, w int) []string {
	st := &p.st
	for i, l := range wrap(v, max(1, w-loadKeyW)) {
		label := ""
		if i == 0 {
			label = k
		}
		out = append(out, st.muted.Render(fit(label, loadKeyW))+st.text.Render(l))
	}
	return out
}

// confirmLines ask before a test toward peer starts, saying what it does:
// how long it loads the line, how hard, and what the game feels.
func (p *loadPane) confirmLines(l *feed.LoadView, peer string, w int) []string {
	st := &p.st
	capBits := int64(0)
	if l != nil {
		capBits = l.Cap
	}
	q := "Load your upload and download to " + peer + " for about " + wholeSeconds(loadSpan) + "? It sends and receives up to " +
		fmtMB(loadtest.MaxBytes(capBits)) + " each way, at most " + fmtMbit(capBits) + " Mbit/s. The game keeps running and will slow while the line is full."
	out := []string{p.rule(st.title.Render("Load test · "+peer), w)}
	for _, line := range wrap(q, w-2) {
		out = append(out, "  "+st.accent.Render(line))
	}
	return append(out, "  "+st.accent.Render("y")+st.muted.Render(" start · ")+st.accent.Render("n")+st.muted.Render(" cancel"))
}

// runLines draw a test in progress toward the focused peer: this
// machine's, phase by phase with each timed phase's median round trip so
// far as a bar; or the peer's, which this machine only answers.
func (p *loadPane) runLines(s *session, r *feed.LoadRun, w int) []string {
	st := &p.st
	if !r.Tester {
		out := []string{p.rule(st.title.Render("Load test · "+r.Peer), w)}
		note := r.Peer + " is load-testing the line to you"
		if v := s.view.Load.Seen; v != nil && v.From == r.Peer {
			note += " — " + seenProgress(s.view.At, v)
		}
		out = p.para(out, note, w)
		return p.para(out, "its load runs for about "+wholeSeconds(loadSpan)+"; the game keeps running and may slow meanwhile", w)
	}
	pr := &r.Progress
	state := "phase " + string(pr.Phase)
	if r.Waiting {
		state = "waiting for the session's turn"
	}
	if at := s.view.At; at >= pr.Began && pr.Began > 0 {
		state += " · " + wholeSeconds(at-pr.Began) + " of about " + wholeSeconds(loadSpan)
	}
	out := []string{p.rule(st.title.Render("Load test · "+r.Peer)+st.muted.Render("  "+state), w)}
	out = append(out, st.muted.Render(fit("  "+fit("PHASE", loadNameW)+padLeft("MEDIAN", 10)+padLeft("PROBES", 8)+"  round trip", w)))
	var top float64
	for _, ph := range pr.Phases {
		if ph.Samples > 0 {
			top = max(top, units.Millis(ph.Median))
		}
	}
	barW := min(loadBarMax, w-(2+loadNameW+10+8+2))
	for i, name := range timedPhases {
		if i >= len(pr.Phases) {
			out = append(out, st.muted.Render(fit("  "+fit(string(name), loadNameW)+padLeft(unknown, 7)+"   "+padLeft(unknown, 8)+"  to come", w)))
			continue
		}
		ph := &pr.Phases[i]
		known := ph.Samples > 0
		row := "  " + st.text.Render(fit(string(ph.Name), loadNameW)+padLeft(fmtMs(ph.Median, known), 7)+" ms"+padLeft(strconv.Itoa(ph.Samples), 8))
		if known && barW >= loadBarMin {
			row += "  " + p.bar(units.Millis(ph.Median), units.Millis(ph.Median), top, barW, s.view.FPS)
		}
		out = append(out, fit(row, w))
	}
	where := "not read yet: the trace reads each loaded hold on its own"
	if r.Where != nil {
		where = whereText(r.Where)
	}
	out = p.kv(out, "where the delay is", where, w)
	return p.para(out, "L stops it; the game keeps running and slows while the line is full", w)
}

// bar is v on the scale of top, barW cells at most, in the ink of the
// tier a round trip of rtt ms needs, as the link table colours round
// trips.
func (p *loadPane) bar(v, rtt, top float64, barW, fps int) string {
	if top <= 0 {
		return ""
	}
	n := max(1, min(barW, int(math.Round(float64(barW)*v/top))))
	ink := p.st.srtt
	if fps > 0 {
		ink = p.st.tierStyle(rungs.Need(units.FromMillis(rtt), fps).Tier())
	}
	return ink.Render(strings.Repeat("█", n))
}

// resultLines draw the latest finished test toward the focused peer:
// the idle round trip, what the load added in each direction and in
// both (with grade, throughput, loss and whether the cap ended the
// ramp), where a trace puts the delay, what the test cost the game, and
// why it stopped early.
func (p *loadPane) resultLines(s *session, e *feed.LoadEvent, w int) []string {
	st := &p.st
	r := &e.Result
	when := ""
	if g := e.GameMs; g != nil {
		when = "  finished " + fmtClock(units.FromMillis(*g)) // the session time
	} else if e.TMs != nil {
		when = "  finished " + fmtClock(units.FromMillis(*e.TMs))
	}
	out := []string{p.rule(st.title.Render("Load test · "+e.To)+st.muted.Render(when), w)}
	if r.Stopped != nil {
		out = p.kv(out, "stopped", *r.Stopped, w)
	}
	if r.IdleRTTMS == nil && r.Upload == nil && r.Download == nil && r.Both == nil {
		return p.para(out, "nothing measured: the test stopped before its phases", w)
	}
	out = p.kv(out, "idle round trip", optMs(r.IdleRTTMS)+" ms", w)
	out = append(out, p.resultRows(s, r, w)...)
	if lossy(r) {
		out = p.para(out, "loss: mostly the test's own overdrive (it sends 10 % over the line)", w)
	}
	if c := cappedText(r, s.view.Load.Cap); c != "" {
		out = p.para(out, c, w)
	}
	out = p.kv(out, "where the delay is", whereText(r.Where), w)
	return p.kv(out, "cost to the game", costText(r.Cost), w)
}

// resultRows are the result's table: a heading, then upload, download
// and both, each with its added round trip as a bar.
func (p *loadPane) resultRows(s *session, r *loadtest.Result, w int) []string {
	st := &p.st
	type row struct {
		name              string
		added, p90        *float64
		grade             *string
		mbps, loss        *float64
		capped, direction bool
	}
	rows := []row{{name: string(vocab.LoadUpload), direction: true}, {name: string(vocab.LoadDownload), direction: true}, {name: string(vocab.LoadBoth)}}
	for i, d := range []*loadtest.DirResult{r.Upload, r.Download} {
		if d != nil {
			rows[i] = row{rows[i].name, d.AddedMS, d.P90AddedMS, d.Grade, d.Mbps, d.Loss, d.Capped, true}
		}
	}
	if b := r.Both; b != nil {
		rows[2].added, rows[2].p90, rows[2].loss = b.AddedMS, b.P90AddedMS, b.Loss
	}
	lead := func(name, added, p90, grade, mbps, loss, capped string) string {
		return "  " + fit(name, loadNameW) + padLeft(added, 9) + padLeft(p90, 7) + "  " + fit(grade, 5) +
			padLeft(mbps, 8) + padLeft(loss, 7) + "  " + fit(capped, 6)
	}
	out := []string{st.muted.Render(fit(lead("", "ADDED ms", "P90", "GRADE", "Mbit/s", "LOSS", ""), w))}
	var top float64
	for _, x := range rows {
		if x.added != nil {
			top = max(top, *x.added)
		}
	}
	idle := 0.0
	if r.IdleRTTMS != nil {
		idle = *r.IdleRTTMS
	}
	barW := min(loadBarMax, w-width(lead("", "", "", "", "", "", ""))-2)
	for _, x := range rows {
		grade, mbps, capped := "", "", ""
		if x.direction {
			grade, mbps = optText(x.grade), optMbps(x.mbps)
			if x.capped {
				capped = "capped"
			}
		}
		line := st.text.Render(lead(x.name, optAdded(x.added), optAdded(x.p90), grade, mbps, optLoss(x.loss), capped))
		if x.added != nil && barW >= loadBarMin {
			line += "  " + p.bar(*x.added, idle+*x.added, top, barW, s.view.FPS)
		}
		out = append(out, fit(line, w))
	}
	return out
}

// lossy reports whether the result lost any of its load: the overdrive's
// note is for a loss there was.
func lossy(r *loadtest.Result) bool {
	var shares []*float64
	for _, d := range []*loadtest.DirResult{r.Upload, r.Download} {
		if d != nil {
			shares = append(shares, d.Loss)
		}
	}
	if r.Both != nil {
		shares = append(shares, r.Both.Loss)
	}
	for _, x := range shares {
		if x != nil && *x > 0 {
			return true
		}
	}
	return false
}

// cappedText says in words what capped means for the directions the cap
// ended, "" when it ended none: the cap, not the line, ended the ramp —
// this machine's cap when the test ran at it (own), else the lower one
// its peer granted.
func cappedText(r *loadtest.Result, own int64) string {
	var dirs []string
	for i, d := range []*loadtest.DirResult{r.Upload, r.Download} {
		if d != nil && d.Capped {
			dirs = append(dirs, string(vocab.LoadHolds[i]))
		}
	}
	if len(dirs) == 0 {
		return ""
	}
	whose := "the cap"
	switch {
	case r.Cap > 0 && r.Cap == own:
		whose = "your cap of " + fmtMbit(r.Cap) + " Mbit/s"
	case r.Cap > 0:
		whose = "the peer's cap of " + fmtMbit(r.Cap) + " Mbit/s"
	}
	return strings.Join(dirs, " and ") + " capped: " + whose + " ended the ramp before the line did"
}

// fmtMB is a size in bytes as MB: whole from 10 MB, with a tenth below.
func fmtMB(bytes float64) string {
	mb := bytes / 1e6
	if mb >= 10 {
		return strconv.FormatFloat(math.Round(mb), 'f', 0, 64) + " MB"
	}
	return strconv.FormatFloat(mb, 'f', 1, 64) + " MB"
}

// optMs is an optional figure in ms, unknown when nil.
func optMs(v *float64) string {
	if v == nil {
		return unknown
	}
	return fmtMsVal(*v)
}

// optAdded is an optional added round trip in ms, with its sign.
func optAdded(v *float64) string {
	if v == nil {
		return unknown
	}
	return "+" + fmtMsVal(*v)
}

// optMbps is an optional rate in Mbit/s.
func optMbps(v *float64) string {
	if v == nil {
		return unknown
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

// optLoss is an optional loss share.
func optLoss(v *float64) string {
	if v == nil {
		return unknown
	}
	return fmtShare(share{v: *v, ok: true})
}

// optText is optional text, unknown when nil.
func optText(v *string) string {
	if v == nil {
		return unknown
	}
	return *v
}

// whereText is the hop a trace puts the added delay at.
func whereText(w *loadtest.WhereAt) string {
	if w == nil {
		return unknown
	}
	return "hop " + strconv.Itoa(w.TTL) + " · " + linkText(w.Link) + " · +" + fmtMsVal(w.AddedMS) + " ms"
}

// costText is what the test cost the game: frames late, the longest
// wait, and the rung it moved from and to, for how long.
func costText(c *loadtest.GameCost) string {
	if c == nil {
		return unknown
	}
	out := strconv.Itoa(c.FramesLate) + " frames late · longest wait " + fmtWait(units.FromMillis(c.MaxWaitMS))
	if c.RungFrom == c.RungTo {
		return out + " · stayed at rung " + strconv.Itoa(c.RungFrom)
	}
	return out + " · rung " + strconv.Itoa(c.RungFrom) + " → " + strconv.Itoa(c.RungTo) + " for " + fmtWait(units.FromMillis(c.ForMS))
}
