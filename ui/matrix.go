package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// The admin's matrix: every player to every player, each cell
// one direction of one link as the row's player measures it, coloured by
// the tier that link alone would need by the master's rule, headroom
// included (needs, S3, S9, S17) and marked when it is not measured (L3), provisional (T4) or bad
// (T11); under it each player's waits and whom it waited for, and the
// ranking of the players who make the others wait most. Rows other than
// this machine's come from the players' telemetry (probe/telemetry.go).

// staleAfter is how old a row's newest telemetry may be before the row is
// marked stale: updates come at least every send period (one second at
// 10/30), so a few seconds without one means they stopped.
const staleAfter = 3 * time.Second

// Widths of the matrix.
const (
	mxNameW    = 10 // the FROM column
	mxMinCell  = 5  // a cell: cursor gutter, "999" and a space
	mxMaxCell  = 13 // enough for "!1234 Normal"
	mxWideCell = 18 // on a very wide terminal
	mxCauseBar = 24 // the longest bar of the ranking
)

// Marks of a cell, besides its number (legend on screen).
const (
	markProvisional = "~"
	markBad         = "!"
	markNotKnown    = "?"
	markSelf        = "·"
	// markRelayed: the pair's datagrams go through the host.
	markRelayed = "⇄"
)

// matrixCursor is the cell under the cursor, by names: it stays on the
// same link when players come and go. Empty: the worst link.
type matrixCursor struct{ from, to string }

// matrixPane is the Matrix view; it owns the cursor's cell.
type matrixPane struct {
	*ctx
	cur matrixCursor
}

// view draws the Matrix view.
func (p *matrixPane) view(s *session, w, h int) string {
	return block(p.matrixLines(s, matrixOf(&s.view), w, h), w, h)
}

// matrixLines is the Matrix view's body for mv, exactly h lines at most.
func (p *matrixPane) matrixLines(s *session, mv *feed.MatrixView, w, h int) []string {
	st := &p.st
	fps := s.view.FPS
	about := st.muted.Render("  row → column: round trip ms")
	if fps > 0 {
		about += st.muted.Render(", tier it needs with headroom at " + strconv.Itoa(fps) + " fps")
	}
	if len(mv.Players) == 0 {
		// The matrix is built from the players' reports about their
		// links; in the lobby, or in a recording without them, there are
		// players but no reports yet.
		msg := "  no players yet"
		if n := len(s.view.Players); n > 0 {
			msg = "  " + strconv.Itoa(n) + " players in the session; no link reports yet"
			if !s.view.Started {
				msg += ": the matrix fills in once the game starts"
			}
		}
		out := []string{p.rule(st.title.Render("Matrix")+about, w)}
		for _, l := range wrap(msg, w-2) {
			out = append(out, st.muted.Render(l))
		}
		return out
	}
	from, to := p.matrixSelection(mv, fps)
	// The grid gets at most half the height: the ranking and the waits
	// below it are the other half of the answer.
	grid, part := p.matrixGrid(mv, fps, from, to, w, max(3, h/2-2))
	title := st.title.Render("Matrix")
	if part != "" {
		// First, so a narrow rule cuts the explanation rather than this.
		title += st.accent.Render(" · " + part)
	}
	out := append([]string{p.rule(title+about, w)}, grid...)
	out = append(out, p.matrixLegend(fps, anyRelayed(mv), w))
	out = append(out, p.matrixDetail(s, mv, fps, from, to, w)...)
	rest := h - len(out)
	if rest <= 0 {
		return out[:h]
	}
	n := len(mv.Players)
	if need := (n + 2) + (n + 1); rest < need && w >= wideLayout {
		// Too low to stack them whole, wide enough to put them side by
		// side.
		leftW := w / 2
		rightW := w - leftW - 1
		left := block(p.matrixWaits(mv, leftW, rest), leftW, rest)
		right := block(p.matrixCulprits(mv, rightW, rest), rightW, rest)
		return append(out, strings.Split(sideBySide(left, " ", right), "\n")...)
	}
	// Stacked: the ranking is the answer an admin looks for, so it keeps
	// its rows first; the waits table takes what is left.
	cu := min(n+1, max(2, rest/2))
	wt := rest - cu
	out = append(out, p.matrixWaits(mv, w, wt)...)
	return append(out, p.matrixCulprits(mv, w, cu)...)
}

// matrixSelection is the cursor's cell, or the worst link when the cursor
// is unset or its link has gone.
func (p *matrixPane) matrixSelection(mv *feed.MatrixView, fps int) (string, string) {
	c := p.cur
	if c.from != "" && mv.Player(c.from) != nil && mv.Player(c.to) != nil && c.from != c.to {
		return c.from, c.to
	}
	return worstPair(mv, fps)
}

// worstPair is the link that would force the slowest timing on its own: a
// bad link first, then the longest measured round trip; "" when no row
// holds a measured link.
func worstPair(mv *feed.MatrixView, fps int) (string, string) {
	var bf, bt string
	var bad bool
	best := -1.0
	for _, p := range mv.Players {
		for _, l := range p.Links {
			if l.Observer {
				continue
			}
			v, ok := units.Millis(l.SRTT), l.RTTKnown
			if !ok {
				v = 0
			}
			isBad := l.Bad()
			if (isBad && !bad) || (isBad == bad && ok && v > best) {
				bf, bt, bad, best = l.From, l.To, isBad, v
			}
		}
	}
	return bf, bt
}

// cellWidth shares the width among n columns.
func cellWidth(w, n int) int {
	if n <= 0 {
		return mxMaxCell
	}
	top := mxMaxCell
	if w >= veryWide {
		top = mxWideCell // room for whole names in the heading
	}
	return min(top, max(mxMinCell, (w-2-mxNameW)/n))
}

// matrixGrid is the heading and one row per player, at most maxRows rows.
// A matrix larger than the screen scrolls so the cursor's cell stays in
// sight; part then says which columns and rows are shown.
func (p *matrixPane) matrixGrid(mv *feed.MatrixView, fps int, selFrom, selTo string, w, maxRows int) (lines []string, part string) {
	st := &p.st
	n := len(mv.Players)
	cw := cellWidth(w, n)
	cols := max(1, min(n, (w-2-mxNameW)/cw))
	rows := max(1, min(n, maxRows))
	index := func(name string) int {
		for i, p := range mv.Players {
			if p.Name == name {
				return i
			}
		}
		return 0
	}
	window := func(at, size int) int { return max(0, min(at-size+1, n-size)) }
	c0, r0 := window(index(selTo), cols), window(index(selFrom), rows)
	var hb strings.Builder
	hb.WriteString("  " + fit("FROM╲TO", mxNameW))
	for _, p := range mv.Players[c0 : c0+cols] {
		hb.WriteString(" " + fitName(p.Name, cw-2) + " ")
	}
	if cols < n || rows < n {
		part = "columns " + itoa(c0+1) + "–" + itoa(c0+cols) + " · rows " + itoa(r0+1) + "–" + itoa(r0+rows) + " of " + itoa(n)
	}
	out := []string{st.muted.Render(fit(hb.String(), w))}
	for i := r0; i < r0+rows; i++ {
		row := &mv.Players[i]
		var b strings.Builder
		mark := "  "
		if row.Name == selFrom {
			mark = "> "
		}
		b.WriteString(mark)
		name := st.text
		if row.Self {
			name = st.accent
		}
		// A space between the name and the first cell, so the cursor never
		// touches the name.
		b.WriteString(name.Render(fitName(row.Name, mxNameW-1) + " "))
		for _, col := range mv.Players[c0 : c0+cols] {
			b.WriteString(p.matrixCell(mv, row, col.Name, fps, cw, row.Name == selFrom && col.Name == selTo))
		}
		out = append(out, fit(b.String(), w))
	}
	return out, part
}

// matrixCell is one cell: a gutter for the cursor, the content, a space.
func (p *matrixPane) matrixCell(mv *feed.MatrixView, row *feed.MatrixPlayer, to string, fps, cw int, selected bool) string {
	st := &p.st
	cw2 := cw - 2 // content width
	// paint lays out (text, style) pairs in the content width; the
	// selected cell is drawn plain and reversed as a whole, so inner
	// colours cannot break the highlight.
	paint := func(parts ...string) string {
		var plain, styled strings.Builder
		last := "text"
		for i := 0; i+1 < len(parts); i += 2 {
			plain.WriteString(parts[i])
			styled.WriteString(styleNamed(st, parts[i+1]).Render(parts[i]))
			last = parts[i+1]
		}
		text, cell := plain.String(), styled.String()
		if lipgloss.Width(text) > cw2 {
			text = fit(text, cw2)
			cell = styleNamed(st, last).Render(text)
		}
		pad := strings.Repeat(" ", cw2-lipgloss.Width(text))
		if selected {
			return st.accent.Render(">") + st.selected.Render(text+pad) + " "
		}
		return " " + cell + pad + " "
	}
	switch {
	case row.Name == to:
		return paint(markSelf, "border")
	case !row.Known:
		return paint(markNotKnown, "muted")
	}
	l, ok := mv.Link(row.Name, to)
	if !ok {
		return paint(markNotKnown, "muted")
	}
	if !l.RTTKnown {
		if l.Bad() {
			return paint(markBad, "err", unknown, "muted")
		}
		return paint(unknown, "muted")
	}
	mark, markStyle := "", "text"
	switch {
	case l.Bad():
		mark, markStyle = markBad, "err"
	case l.State == feed.LinkProvisional:
		mark, markStyle = markProvisional, "warn"
	}
	if l.Relayed {
		mark += markRelayed
	}
	num := fmtMs(l.SRTT, true)
	tier := rungs.Tier(0)
	if fps > 0 {
		tier = needs(l.SRTT, fps).Tier()
	}
	word := ""
	if tier != 0 {
		tw := tier.String()
		switch room := cw2 - lipgloss.Width(mark) - len(num); {
		case room >= len(tw)+1:
			word = " " + tw
		case room >= 2:
			word = " " + tw[:1]
		}
	}
	tierName := "tier" + strconv.Itoa(int(tier))
	return paint(mark, markStyle, num+word, tierName)
}

// styleNamed maps the cell painter's style names to styles.
func styleNamed(st *styles, name string) paint {
	switch name {
	case "border":
		return st.border
	case "muted":
		return st.muted
	case "err":
		return st.err
	case "warn":
		return st.warn
	case "tier1", "tier2", "tier3", "tier4":
		return st.tierStyle(rungs.Tier(name[4] - '0'))
	}
	return st.text
}

// matrixLegend explains the colours and marks.
func (p *matrixPane) matrixLegend(fps int, relayed bool, w int) string {
	st := &p.st
	var b strings.Builder
	b.WriteString("  ")
	for t := rungs.Fast; t <= rungs.Bad; t++ {
		b.WriteString(p.tierWord(t) + " ")
	}
	b.WriteString(st.muted.Render("· " + unknown + " unmeasured · " + markProvisional + " provisional · " + markBad + " bad · " + markNotKnown + " not known here"))
	// The relayed mark, when a link has it, is explained where there is
	// room; `?` always has it.
	if r := st.muted.Render(" · " + markRelayed + " relayed"); relayed && lipgloss.Width(b.String()+r) <= w {
		b.WriteString(r)
	}
	return fit(b.String(), w)
}

// matrixDetail describes the cell under the cursor: every value the row's
// player sent, and loss shares differenced over the last ten seconds (L5).
func (p *matrixPane) matrixDetail(s *session, mv *feed.MatrixView, fps int, from, to string, w int) []string {
	st := &p.st
	if from == "" {
		return []string{st.muted.Render(fit("  no link measured yet · ←/→/↑/↓ choose a link", w))}
	}
	head := st.accent.Render("  "+from+" → "+to) + "  "
	l, ok := mv.Link(from, to)
	if !ok {
		return []string{fit(head+st.muted.Render("not known here: no telemetry from "+from+" about "+to+" yet"), w)}
	}
	kv := func(k, v string) string { return st.muted.Render(k+" ") + st.text.Render(v) }
	parts := []string{
		st.text.Render(l.State.String()),
		kv("round trip", fmtMs(l.SRTT, l.RTTKnown)+" ± "+fmtMs(l.RTTVAR, l.RTTKnown)+" ms"),
		kv("resend after", fmtMs(l.RTO, true)+" ms"),
		kv("timeout", fmtSec(l.ConnTimeout)),
	}
	if l.RTTKnown && fps > 0 {
		parts = append(parts, kv("needs", needs(l.SRTT, fps).Label()+" with headroom"))
	}
	if l.Relayed {
		parts = append(parts, st.warn.Render(markRelayed+" relayed")+st.muted.Render(": the round trip is the path through the host"))
		if r := relayOf(s, from, to); r != nil {
			parts = append(parts, kv("host forwarded", relayText(r)))
		}
	}
	sh := shares{}
	if h := s.mx.hist(from, to); h != nil {
		sh = h.windowShares()
	}
	more := []string{
		kv("resent", "") + st.resend.Render(fmtShare(sh.resend)),
		kv("lost in", "") + st.in.Render(fmtShare(sh.in)),
		kv("lost out", "") + st.out.Render(fmtShare(sh.out)),
		kv(from+" waited for "+to, fmtWait(l.Caused)),
	}
	if w >= wideLayout {
		more = append(more, kv("sent/resent", fmtCount(l.Sent, l.LossKnown)+"/"+fmtCount(l.Retransmitted, l.LossKnown)),
			kv("in: due/lost", fmtCount(l.Expected, l.LossKnown)+"/"+fmtCount(l.Missing, l.LossKnown)),
			kv("out: due/lost", fmtCount(l.PeerExpected, l.PeerKnown)+"/"+fmtCount(l.PeerMissing, l.PeerKnown)))
	}
	// The parts flow onto as many lines as the width needs, never cut.
	out := flow(head, parts, "  ", "    ", w)
	return append(out, flow("  ", more, "  ", "    ", w)...)
}

// matrixWaits is each player's waits and whom it waited for most.
func (p *matrixPane) matrixWaits(mv *feed.MatrixView, w, h int) []string {
	st := &p.st
	if h <= 0 {
		return nil
	}
	out := []string{p.rule(st.title.Render("Waits")+st.muted.Render("  each player's own, and whom it waited for"), w)}
	head := "  " + fit("PLAYER", mxNameW) + padLeft("FRAME", 7) + padLeft("TOTAL", 8) + padLeft("LONGEST", 8) + padLeft("PROCESS", 8) + "  MOSTLY FOR"
	out = append(out, st.muted.Render(fit(head, w)))
	for i := range mv.Players {
		if len(out) >= h {
			break
		}
		p := &mv.Players[i]
		name := st.text.Render(fitName(p.Name, mxNameW))
		if p.Self {
			name = st.accent.Render(fitName(p.Name, mxNameW))
		}
		if !p.Known {
			out = append(out, fit("  "+name+st.muted.Render(padLeft(unknown, 7)+padLeft(unknown, 8)+padLeft(unknown, 8)+padLeft(unknown, 8)+"  no reports yet"), w))
			continue
		}
		opt := func(d *time.Duration) string {
			if d == nil {
				return unknown
			}
			return fmtWait(*d)
		}
		most := ""
		if !p.Self && p.Age >= staleAfter {
			most = st.warn.Render("stale "+fmtWait(p.Age)) + st.muted.Render(" · ")
		}
		if len(p.WaitedFor(mv)) == 0 {
			most += st.muted.Render("nobody")
		}
		if ws := p.WaitedFor(mv); len(ws) > 0 {
			most += st.text.Render(ws[0].Player + " " + fmtWait(ws[0].Time))
			if p.Waited > 0 {
				most += st.muted.Render(" (" + strconv.Itoa(int(min(100, 100*ws[0].Time/p.Waited))) + "%)")
			}
			if len(ws) > 1 {
				most += st.muted.Render(", " + ws[1].Player + " " + fmtWait(ws[1].Time))
			}
		}
		line := "  " + name + st.text.Render(padLeft(strconv.Itoa(p.Frame), 7)+padLeft(fmtWait(p.Waited), 8)+padLeft(opt(p.Wait), 8)+padLeft(opt(p.Process), 8)) + "  " + most
		out = append(out, fit(line, w))
	}
	return out
}

// matrixCulprits ranks the players by how long the others waited for
// their commands.
func (p *matrixPane) matrixCulprits(mv *feed.MatrixView, w, h int) []string {
	st := &p.st
	if h <= 0 {
		return nil
	}
	out := []string{p.rule(st.title.Render("Who causes lag")+st.muted.Render("  time the others waited for each player"), w)}
	// Only players someone actually waited for are ranked: a list of
	// players at 0 ms would name culprits where there are none.
	cs := mv.Culprits()
	for len(cs) > 0 && cs[len(cs)-1].Caused <= 0 {
		cs = cs[:len(cs)-1] // sorted longest first: the zeros are last
	}
	if len(cs) == 0 && h > 1 {
		out = append(out, st.muted.Render(fit("  nobody has made the others wait", w)))
	}
	top := time.Duration(0)
	if len(cs) > 0 {
		top = cs[0].Caused
	}
	barW := min(mxCauseBar, max(6, w/5))
	for i, c := range cs {
		if len(out) >= h {
			break
		}
		n := 0
		if top > 0 {
			n = int(float64(barW) * float64(c.Caused) / float64(top))
		}
		bar := st.worst.Render(strings.Repeat("█", n)) + st.border.Render(strings.Repeat("·", barW-n))
		var of []string
		for _, x := range c.Of {
			of = append(of, x.Player+" "+fmtWait(x.Time))
		}
		line := "  " + st.muted.Render(padLeft(strconv.Itoa(i+1), 2)+" ") + st.text.Render(fitName(c.Name, mxNameW)) +
			st.text.Render(padLeft(fmtWait(c.Caused), 7)) + "  " + bar + "  " + st.muted.Render(strings.Join(of, " · "))
		out = append(out, fit(line, w))
	}
	return out
}

// matrixKey moves the matrix's cursor: ↑/↓ the row (who measures), ←/→
// the column (to whom). It reports whether it used the key.
func (p *matrixPane) key(s *session, msg tea.KeyMsg) bool {
	k := &p.keys
	mv := matrixOf(&s.view)
	if len(mv.Players) < 2 {
		return false
	}
	dr, dc := 0, 0
	switch {
	case key.Matches(msg, k.Up):
		dr = -1
	case key.Matches(msg, k.Down):
		dr = +1
	case key.Matches(msg, k.Left):
		dc = -1
	case key.Matches(msg, k.Right):
		dc = +1
	default:
		return false
	}
	from, to := p.matrixSelection(mv, s.view.FPS)
	idx := func(name string) int {
		for i, p := range mv.Players {
			if p.Name == name {
				return i
			}
		}
		return 0
	}
	n := len(mv.Players)
	r, c := idx(from), idx(to)
	if from == "" {
		r, c = 0, 1
	}
	r = max(0, min(n-1, r+dr))
	c = max(0, min(n-1, c+dc))
	if r == c {
		// The diagonal is no link: a move along the row steps over it
		// (or stays put at an edge); a move along the column lands beside
		// it, to the right where there is room.
		switch {
		case dc != 0 && c+dc >= 0 && c+dc < n:
			c += dc
		case dc != 0:
			c -= dc
		case c+1 < n:
			c++
		default:
			c--
		}
	}
	p.cur = matrixCursor{from: mv.Players[r].Name, to: mv.Players[c].Name}
	return true
}

// matrixHist keeps a short history of every directed link of the matrix,
// so the detail line can show loss shares differenced per interval from
// the cumulative totals (L5), like the link table does for own links.
type matrixHist struct {
	pairs map[[2]string]*linkHist
}

func (x *matrixHist) hist(from, to string) *linkHist {
	if x == nil {
		return nil
	}
	return x.pairs[[2]string{from, to}]
}

// observe takes in the matrix of a new picture taken at at.
func (x *matrixHist) observe(at time.Duration, mv *feed.MatrixView) {
	if x.pairs == nil {
		x.pairs = map[[2]string]*linkHist{}
	}
	for _, h := range x.pairs {
		h.present = false
	}
	for _, p := range mv.Players {
		for _, l := range p.Links {
			k := [2]string{l.From, l.To}
			h := x.pairs[k]
			if h == nil {
				h = &linkHist{peer: l.To}
				x.pairs[k] = h
			}
			h.present = true
			h.observe(at, feed.LinkView{Link: l.Link, Peer: l.To, Observer: l.Observer, Bad: l.Bad(), Caused: l.Caused})
		}
	}
	// Links gone from every row are forgotten: a player who left and one
	// who joins under the same name share nothing.
	for k, h := range x.pairs {
		if !h.present {
			delete(x.pairs, k)
		}
	}
}

// clone copies the history for the paused display.
func (x *matrixHist) clone() *matrixHist {
	if x == nil {
		return nil
	}
	c := &matrixHist{pairs: make(map[[2]string]*linkHist, len(x.pairs))}
	for k, h := range x.pairs {
		hc := *h
		hc.samples = append([]sample(nil), h.samples...)
		c.pairs[k] = &hc
	}
	return c
}

// matrixOf is the matrix of a picture.
func matrixOf(v *feed.View) *feed.MatrixView { return &v.Matrix }

// anyRelayed reports whether a link of the matrix goes through the host.
func anyRelayed(mv *feed.MatrixView) bool {
	for i := range mv.Players {
		for j := range mv.Players[i].Links {
			if mv.Players[i].Links[j].Relayed {
				return true
			}
		}
	}
	return false
}
