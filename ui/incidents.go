package ui

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/themes"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// Incidents in the UI: the session keeps every incident the feed told,
// each as its latest line (incidentLog); the Session view draws them on
// one line over the last minutes (strip.go) and the Diagnosis view lists
// them, newest first, with the focused one's text in full (incidentsPane).
// `[` and `]` move the list's focus to the older or newer incident; in a
// replay they seek to the incident before or after the position.

// incidentCap bounds the incidents a session keeps: past it the oldest
// closed ones are dropped.
const incidentCap = 500

// incidentRow is one incident: its latest line, and the session time its
// first line arrived at (a replay seeks there, where the list first shows
// it).
type incidentRow struct {
	feed.Incident
	toldAt time.Duration
	// openedS and closedS are when it opened and closed in session time,
	// as its sentences and every screen say it (sessionS: known).
	openedS, closedS time.Duration
	sessionS         bool
}

// open reports whether no close line has come for it.
func (r *incidentRow) open() bool { return r.Phase != vocab.IncidentClose && r.ClosedMs == nil }

// opened is when it opened, on the session's clock.
func (r *incidentRow) opened() time.Duration { return msDur(r.OpenedMs) }

// closed is when it closed; ok is false while it is open.
func (r *incidentRow) closed() (time.Duration, bool) {
	if r.ClosedMs == nil {
		return 0, false
	}
	return msDur(*r.ClosedMs), true
}

// openedShown is when it opened as the screens say it: the session time
// of its first frame, this machine's time without one.
func (r *incidentRow) openedShown() time.Duration {
	if r.sessionS {
		return r.openedS
	}
	return r.opened()
}

// closedShown is when it closed as the screens say it.
func (r *incidentRow) closedShown() (time.Duration, bool) {
	cl, ok := r.closed()
	if ok && r.sessionS && r.ClosedFrame != nil {
		return r.closedS, true
	}
	return cl, ok
}

// msDur is a time in milliseconds from an event as a duration, bounded so
// that no value a recording can hold overflows.
func msDur(ms float64) time.Duration {
	switch {
	case math.IsNaN(ms) || ms < 0:
		return 0
	case ms > 1e12:
		ms = 1e12
	}
	return units.FromMillis(ms)
}

// incidentLog is every incident the feed has told, in the order their
// first lines came.
type incidentLog struct {
	rows []incidentRow
	n    uint64 // lines taken: what the drawn strip and list depend on
}

// incidentEvent takes e into the log when it is an incident line; the
// update's time stands in for a line without a time of its own.
func (s *session) incidentEvent(v *feed.View, e feed.Event) {
	ie, ok := e.(*feed.IncidentEvent)
	if !ok {
		return
	}
	at := v.At
	h := feed.Head(e)
	if h.TMs != nil {
		at = msDur(*h.TMs)
	}
	row := incidentRow{Incident: safeIncident(ie.Incident), toldAt: at}
	row.openedS, row.sessionS = s.frameTime(v, h, ie.OpenedFrame)
	if f := ie.ClosedFrame; f != nil {
		row.closedS, _ = s.frameTime(v, h, *f)
	}
	s.incidents.take(row)
}

func (l *incidentLog) take(row incidentRow) {
	l.n++
	for i := len(l.rows) - 1; i >= 0; i-- {
		if l.rows[i].ID == row.ID {
			row.toldAt = l.rows[i].toldAt
			l.rows[i] = row
			return
		}
	}
	l.rows = append(l.rows, row)
	if len(l.rows) > incidentCap {
		// The oldest closed incident goes; when every one is open (no
		// engine keeps that many), the oldest.
		drop := 0
		for i := range l.rows {
			if !l.rows[i].open() {
				drop = i
				break
			}
		}
		l.rows = slices.Delete(l.rows, drop, drop+1)
	}
}

// clone copies the log for the paused display.
func (l incidentLog) clone() incidentLog {
	l.rows = slices.Clone(l.rows)
	return l
}

// newestFirst is the incidents sorted newest first: by the time they
// opened, then by id.
func (l *incidentLog) newestFirst() []*incidentRow {
	out := make([]*incidentRow, len(l.rows))
	for i := range l.rows {
		out[i] = &l.rows[i]
	}
	slices.SortStableFunc(out, func(a, b *incidentRow) int {
		if c := cmp.Compare(b.OpenedMs, a.OpenedMs); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// safeIncident copies inc with its outside strings made safe: names,
// the hop link's name and the text.
func safeIncident(inc feed.Incident) feed.Incident {
	if inc.Player != nil {
		p := textOf(*inc.Player)
		inc.Player = &p
	}
	if inc.Between != nil {
		b := [2]string{textOf(inc.Between[0]), textOf(inc.Between[1])}
		inc.Between = &b
	}
	if inc.Where != nil {
		w := *inc.Where
		w.Link = vocab.HopLink(textOf(string(w.Link)))
		inc.Where = &w
	}
	if inc.LoadTest != nil {
		lt := feed.LoadPair{From: textOf(inc.LoadTest.From), To: textOf(inc.LoadTest.To)}
		inc.LoadTest = &lt
	}
	inc.Cause = vocab.Cause(textOf(string(inc.Cause)))
	inc.Text = textOf(inc.Text)
	return inc
}

// who is whom an incident names: a player, a path "ada–bob", or unknown.
func (r *incidentRow) who() string {
	switch {
	case r.Player != nil:
		return *r.Player
	case r.Between != nil:
		return r.Between[0] + "–" + r.Between[1]
	}
	return unknown
}

// causeIndex is c's place in vocab.IncidentCauses; a cause that is not
// one of them counts as unknown.
func causeIndex(c vocab.Cause) int {
	for i, x := range vocab.IncidentCauses {
		if c == x {
			return i
		}
	}
	return slices.Index(vocab.IncidentCauses[:], vocab.CauseUnknown)
}

// causeInk is a theme's ink for an incident cause.
func causeInk(t themes.Theme, c vocab.Cause) themes.Ink {
	ci := &t.Causes
	switch c {
	case vocab.CauseLatency:
		return ci.Latency
	case vocab.CauseLoss:
		return ci.Loss
	case vocab.CauseJitter:
		return ci.Jitter
	case vocab.CauseProcessing:
		return ci.Processing
	case vocab.CauseBufferbloat:
		return ci.Bufferbloat
	}
	return ci.Unknown
}

// causeLetter marks an incident's start on the strip: the cause's letter,
// so the strip reads without colour (NO_COLOR) too.
func causeLetter(c vocab.Cause) string {
	switch c {
	case vocab.CauseLatency:
		return "L"
	case vocab.CauseLoss:
		return "X"
	case vocab.CauseJitter:
		return "J"
	case vocab.CauseProcessing:
		return "P"
	case vocab.CauseBufferbloat:
		return "B"
	}
	return "?"
}

// incidentGlossary adds the incidents' words and marks to `?`.
var incidentGlossary = [][2]string{
	{"incidents", "strip (Session view): the last minutes, newest at the right; a letter where an incident opened, ━ while it lasted, ▶ still open (drawn reversed)"},
	{"L X J P B ?", "incident causes: long round trips (latency), lost packets, round trips that vary (jitter), a slow machine, a router queue that fills under load (bufferbloat), not told yet"},
	{"WHEN, WHERE", "incidents: when it opened, in session time; where its delay starts once a hop trace has judged it (uplink h2: the link into hop 2)"},
	{"PEAK", "incidents: the most its round trips rose above normal, in ms"},
	{"COST", "incidents: the waiting it cost the match, every seated machine's waits in it summed (not this machine's WAITED); the strip's cost too"},
	{"RUNGS", "incidents: the rung when it opened → the highest during it"},
}

// incidentsPane is the Diagnosis view's Incidents list and its focus,
// which `[` and `]` move.
type incidentsPane struct {
	*ctx
	// focus is the id of the incident in focus; 0 follows the newest.
	focus int
}

// focused is the incident in focus among rows (newest first): the one
// chosen, else the newest; -1 when there are none.
func (p *incidentsPane) focused(rows []*incidentRow) int {
	if len(rows) == 0 {
		return -1
	}
	for i, r := range rows {
		if r.ID == p.focus {
			return i
		}
	}
	return 0
}

// move moves the focus d incidents older (d > 0) or newer (d < 0); it
// returns the incident now in focus, nil when there is none. Reaching the
// newest follows the newest again.
func (p *incidentsPane) move(s *session, d int) *incidentRow {
	rows := s.incidents.newestFirst()
	i := p.focused(rows)
	if i < 0 {
		return nil
	}
	i = min(max(i+d, 0), len(rows)-1)
	p.focus = rows[i].ID
	if i == 0 {
		p.focus = 0
	}
	return rows[i]
}

// Columns of the Incidents list.
type incidentCols struct {
	when, who, cause, peak, loss, where, cost, rungs, state int
}

func incidentColumns(w int) incidentCols {
	if w >= wideLayout {
		return incidentCols{when: 7, who: 18, cause: 13, peak: 9, loss: 8, where: 20, cost: 9, rungs: 9, state: 14}
	}
	return incidentCols{when: 6, who: 11, cause: 12, peak: 6, loss: 6, where: 11, cost: 7, rungs: 7, state: 7}
}

// incidentRowsShown is how many incidents the list shows at a time; the
// rest are a line saying how many more, and the list follows the focus.
const incidentRowsShown = 5

// lines draws the Incidents list, w wide: a rule, the headings, the
// incidents newest first (a window of them around the focus) and the
// focused one's text in full. Without incidents it is one line saying so.
func (p *incidentsPane) lines(s *session, w int) []string {
	st := &p.st
	keys := "[/] older/newer"
	if p.keys.replay {
		keys = "[/] seek to the incident before/after"
	}
	out := []string{p.rule(st.title.Render("Incidents")+st.muted.Render("  newest first · "+keys), w)}
	rows := s.incidents.newestFirst()
	if len(rows) == 0 {
		return append(out, st.muted.Render(fitWords("  none so far: one opens when the match waits for someone, or a link leaves its own normal", w)))
	}
	c := incidentColumns(w)
	peakHead, costHead := "PEAK", "COST"
	if w >= wideLayout {
		peakHead = "PEAK ms"
	}
	head := "  " + fit("WHEN", c.when) + fit("WHO", c.who) + fit("CAUSE", c.cause) + padLeft(peakHead, c.peak) + padLeft("LOSS", c.loss) +
		"  " + fit("WHERE", c.where) + padLeft(costHead, c.cost) + padLeft("RUNGS", c.rungs) + "  " + "STATE"
	out = append(out, st.muted.Render(fit(head, w)))
	f := p.focused(rows)
	from := 0
	if f >= incidentRowsShown {
		from = f - incidentRowsShown + 1
	}
	to := min(len(rows), from+incidentRowsShown)
	for i := from; i < to; i++ {
		out = append(out, p.row(rows[i], i == f, c, w))
	}
	if more := len(rows) - (to - from); more > 0 {
		out = append(out, st.muted.Render("  "+strconv.Itoa(more)+" more ([/] to move)"))
	}
	return append(out, p.detail(rows[f], w)...)
}

// row is one incident's line of the list: the focused one reversed as a
// whole, the others with the cause in its ink and the state open or not.
func (p *incidentsPane) row(r *incidentRow, focused bool, c incidentCols, w int) string {
	st := &p.st
	state := "closed"
	if r.open() {
		state = "open"
	}
	if cl, ok := r.closedShown(); ok && w >= wideLayout {
		state += " " + fmtClock(cl)
	}
	lead := "  "
	if focused {
		lead = "▶ "
	}
	head := lead + fit(fmtClock(r.openedShown()), c.when) + fitName(r.who(), c.who)
	cause := fit(string(r.Cause), c.cause)
	rest := padLeft(peakOf(r.AddedMs), c.peak) + padLeft(lossOf(r.Loss), c.loss) + "  " + fit(whereShort(r.Where, c.where >= 20), c.where) +
		padLeft(fmtWait(msDur(r.WaitMs)), c.cost) + padLeft(rungsOf(r), c.rungs) + "  "
	if focused {
		return st.selected.Render(fit(head+cause+rest+state, w))
	}
	stateInk := st.muted
	if r.open() {
		stateInk = st.warn
	}
	return fit(st.text.Render(head)+st.cause[causeIndex(r.Cause)].Render(cause)+st.text.Render(rest)+stateInk.Render(state), w)
}

// detail is the focused incident in full: its span, cost and where, then
// its text, wrapped.
func (p *incidentsPane) detail(r *incidentRow, w int) []string {
	st := &p.st
	span := "open since " + fmtClock(r.openedShown())
	if cl, ok := r.closedShown(); ok {
		span = fmtClock(r.openedShown()) + " to " + fmtClock(cl)
	}
	parts := []string{r.who(), string(r.Cause) + " (" + r.Cause.Words() + ")", span,
		"cost " + fmtWait(msDur(r.WaitMs)) + " of waiting over " + strconv.Itoa(r.FramesWaited) + " frames", "rungs " + rungsOf(r)}
	if r.Where != nil {
		parts = append(parts, "starts "+r.Where.Link.Words()+", hop "+strconv.Itoa(r.Where.TTL))
	}
	if r.LoadTest != nil {
		parts = append(parts, "during the load test "+r.LoadTest.From+" → "+r.LoadTest.To)
	}
	var out []string
	for _, l := range wrap(strings.Join(parts, " · "), w-4) {
		out = append(out, "  "+st.accent.Render(l))
	}
	for _, l := range wrap(r.Text, w-4) {
		out = append(out, "  "+st.text.Render(l))
	}
	return out
}

// peakOf is an incident's peak added round trip: "+391", unknown when
// not measured.
func peakOf(ms *float64) string {
	if ms == nil {
		return unknown
	}
	return "+" + fmtMsNaN(*ms)
}

// lossOf is an incident's peak loss share.
func lossOf(v *float64) string {
	if v == nil {
		return unknown
	}
	return fmtPctNaN(*v)
}

// rungsOf is the rung an incident opened at and the highest during it:
// "1→4", or one rung when it stayed.
func rungsOf(r *incidentRow) string {
	if r.RungPeak == r.RungFrom {
		return strconv.Itoa(r.RungFrom)
	}
	return strconv.Itoa(r.RungFrom) + "→" + strconv.Itoa(r.RungPeak)
}

// whereShort is where an incident's delay starts: the link into the hop
// and its ttl ("uplink h2", or "uplink, hop 2" when long is set).
func whereShort(w *feed.IncidentWhere, long bool) string {
	if w == nil {
		return unknown
	}
	if long {
		return string(w.Link) + ", hop " + strconv.Itoa(w.TTL)
	}
	return string(w.Link) + " h" + strconv.Itoa(w.TTL)
}

// incidentNote is an incident in a few words, for the footer after `[`
// or `]` off the Diagnosis view: "00:10 ada: latency, open".
func incidentNote(r *incidentRow) string {
	state := "closed"
	if r.open() {
		state = "open"
	}
	return "incident " + fmtClock(r.openedShown()) + " " + r.who() + ": " + string(r.Cause) + ", " + state + " (Diagnosis view lists it)"
}

// incidentKey handles `[` and `]`; it reports whether it used the key.
// Live they move the Incidents list's focus (and say which incident off
// the Diagnosis view); in a replay they seek to an incident.
func (m *tuiModel) incidentKey(msg tea.KeyMsg) bool {
	d := 0
	switch {
	case key.Matches(msg, m.keys.OlderIncident):
		d = +1
	case key.Matches(msg, m.keys.NewerIncident):
		d = -1
	default:
		return false
	}
	if m.playback != nil {
		m.seekIncident(d)
		return true
	}
	r := m.incs.move(m.display(), d)
	switch {
	case r == nil:
		m.flash = "no incident yet"
	case screens[m.screen].name != diagnosisName:
		m.flash = incidentNote(r)
	}
	return true
}

// IncidentTimes is what a replay may offer besides Playback: when each
// incident of the whole recording was first told, in order
// (record.Player has it). Without it a replay seeks among the incidents
// the UI has seen so far.
type IncidentTimes interface {
	IncidentTimes() []time.Duration
}

// seekBackSlack is how far past an incident's start `[` still counts as
// being at it: pressed then, it goes to the incident before.
const seekBackSlack = time.Second

// seekIncident seeks the replay to the incident after its position
// (d < 0, `]`) or before it (d > 0, `[`), where that incident's first line
// was told, and focuses it.
func (m *tuiModel) seekIncident(d int) {
	at, _, _, _ := m.playback.Position()
	var times []time.Duration
	if it, ok := m.playback.(IncidentTimes); ok {
		times = it.IncidentTimes()
	} else {
		for i := range m.live.incidents.rows {
			times = append(times, m.live.incidents.rows[i].toldAt)
		}
		slices.Sort(times)
	}
	to, found := time.Duration(0), false
	if d < 0 {
		for _, t := range times {
			if t > at {
				to, found = t, true
				break
			}
		}
	} else {
		for i := len(times) - 1; i >= 0; i-- {
			if times[i] < at-seekBackSlack {
				to, found = times[i], true
				break
			}
		}
	}
	if !found {
		where := "after"
		if d > 0 {
			where = "before"
		}
		m.flash = "no incident " + where + " " + fmtClock(at)
		return
	}
	m.playback.Seek(to)
	// At the new position the incident sought is the newest told.
	m.incs.focus = 0
	m.flash = "incident at " + fmtClock(to)
}
