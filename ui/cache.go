package ui

import (
	"github.com/lagscope/lagscope/rungs"
)

// Redrawing only what changed: each part of a picture is kept
// with the inputs it was drawn from, and drawn again only when one of them
// differs. A session's gen counts the updates it has taken, msgN the
// messages; together with the size, the theme and a pane's own state they
// are everything a part depends on.

// memo is one cached part of the picture.
type memo[K comparable, V any] struct {
	key K
	ok  bool
	out V
}

// get is the part for key k, drawn by draw when k is new.
func (c *memo[K, V]) get(k K, draw func() V) V {
	if !c.ok || c.key != k {
		c.out, c.key, c.ok = draw(), k, true
	}
	return c.out
}

type tableKey struct {
	s             *session
	gen           uint64
	w, rows, y    int
	sel           string
	by            sortKey
	desc          bool
	top           int
	theme         string
	hasRowsToDraw bool
}

type tablePart struct {
	lines []string
	hits  hitMap // the table's part of the hit map, restored with the lines
}

type chartKey struct {
	s     *session
	gen   uint64
	focus string
	w, h  int
	theme string
}

type ladderKey struct {
	inForce, target, need rungs.Timing
	staged                bool
	fps, w, h             int
	theme                 string
}

type msgsKey struct {
	s     *session
	msgN  uint64
	w, h  int
	theme string
}

type headerKey struct {
	s     *session
	in    headerInputs
	hs    headerStatus
	w     int
	theme string
}

// headerInputs are the parts of a session the header shows. A new picture
// mostly leaves them as they were (the status is calmed to one change a
// second), so the header is drawn again only when one of them changes, not
// with every picture. The lobby's pending pairs are a list: while
// they are shown, every update counts as a change.
type headerInputs struct {
	self, master, session string
	fps, speed            int
	inForce, target       rungs.Timing
	have, started         bool
	status                status
	done                  bool
	errText               string
	verdict               string
	lobbyGen              uint64
}

func headerInputsOf(s *session) headerInputs {
	v := &s.view
	in := headerInputs{self: v.Self, master: v.Master, session: v.Session, fps: v.FPS, speed: v.Speed,
		inForce: v.InForce, target: v.Target, have: s.have, started: v.Started, status: s.status, done: s.done}
	if s.err != nil {
		in.errText = s.err.Error()
	}
	if v.Diagnosis != nil {
		in.verdict = v.Diagnosis.Verdict
	}
	if !v.Started && v.Lobby != nil {
		in.lobbyGen = s.gen
	}
	return in
}

type footerKey struct {
	flash  string
	w      int
	dialog bool
	theme  string
}

// caches are the Model's cached parts.
type caches struct {
	table  memo[tableKey, tablePart]
	chart  memo[chartKey, string]
	ladder memo[ladderKey, []string]
	msgs   memo[msgsKey, []string]
	header memo[headerKey, []string]
	footer memo[footerKey, string]
}

// cachedTable is the link table, drawn again only when its inputs change;
// its hit map comes back with it.
func (m *Model) cachedTable(s *session, w, rows, y int) []string {
	t := &m.table
	k := tableKey{s, s.gen, w, rows, y, t.selected, t.sortBy, t.sortDesc, t.top, m.st.theme.Name, len(s.view.Links) > 0}
	part := m.parts.table.get(k, func() tablePart {
		lines := t.linkTable(s, w, rows, y)
		h := m.hits
		return tablePart{lines: lines, hits: hitMap{tableY: h.tableY, hasTable: h.hasTable,
			rows: append([]string(nil), h.rows...), cols: append([]span(nil), h.cols...), colKeys: append([]sortKey(nil), h.colKeys...)}}
	})
	m.hits.tableY, m.hits.hasTable = part.hits.tableY, part.hits.hasTable
	m.hits.rows, m.hits.cols, m.hits.colKeys = part.hits.rows, part.hits.cols, part.hits.colKeys
	return part.lines[:len(part.lines):len(part.lines)]
}

// cachedChart is the focused link's chart column.
func (m *Model) cachedChart(s *session, focus *linkHist, w, h int) string {
	peer := ""
	if focus != nil {
		peer = focus.peer
	}
	return m.parts.chart.get(chartKey{s, s.gen, peer, w, h, m.st.theme.Name}, func() string {
		return m.charts.column(focus, w, h)
	})
}

// cachedLadder is the rung ladder: it changes only with the timings.
func (m *Model) cachedLadder(s *session, w, h int) []string {
	v := &s.view
	need := rungs.Timing{}
	if rtt, ok := worstRTT(s); ok && v.FPS > 0 {
		need = rungs.Need(rtt, v.FPS)
	}
	out := m.parts.ladder.get(ladderKey{v.InForce, v.Target, need, v.Staged, v.FPS, w, h, m.st.theme.Name}, func() []string {
		return m.ladder.ladder(s, w, h)
	})
	return out[:len(out):len(out)]
}

// cachedMessages is the overview's message list: it changes only with a
// new message.
func (m *Model) cachedMessages(s *session, w, h int) []string {
	out := m.parts.msgs.get(msgsKey{s, s.msgN, w, h, m.st.theme.Name}, func() []string {
		return m.msgs.pane(s, w, h)
	})
	return out[:len(out):len(out)]
}
