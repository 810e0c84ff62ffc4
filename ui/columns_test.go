package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/muesli/termenv"
)

// Every column of the link table is whole: a heading in both forms that
// leaves room for the sort arrow, both widths, a sort key of its own and a
// cell. A half-added column fails here.
func TestTableColumnsComplete(t *testing.T) {
	seen := map[sortKey]bool{}
	for i, c := range tableCols {
		if c.head == "" || c.short == "" {
			t.Errorf("column %d (%q): a heading is missing", i, c.head)
		}
		if c.w <= 0 || c.nw <= 0 {
			t.Errorf("column %d (%q): widths %d, %d", i, c.head, c.w, c.nw)
		}
		if width(c.head)+1 > c.w || width(c.short)+1 > c.nw {
			t.Errorf("column %d (%q): no room for the sort arrow in %d / %d", i, c.head, c.w, c.nw)
		}
		if c.cell == nil {
			t.Errorf("column %d (%q): no cell", i, c.head)
		}
		if c.key == sortHouse || seen[c.key] {
			t.Errorf("column %d (%q): sort key %d is the house order's or another column's", i, c.head, c.key)
		}
		seen[c.key] = true
	}
	// `s` cycles through the house order and every column once.
	k, n := nextSort(sortHouse), 0
	for ; k != sortHouse && n <= len(tableCols); k, n = nextSort(k), n+1 {
		if columnOf(k) == nil {
			t.Fatalf("sort key %d cycled to has no column", k)
		}
	}
	if n != len(tableCols) {
		t.Errorf("the sort cycle visits %d columns, the table has %d", n, len(tableCols))
	}
}

// The heading and a data row have a cell for every column, of the same
// widths at the same places, in the narrow and the wide table, plain and
// in colour, for a link with every value known and one with none.
func TestTableRowsMatchHeading(t *testing.T) {
	for _, colour := range []bool{false, true} {
		m := model(t, newStaticFeed(), 120, 40, fixtureUpdates())
		if colour {
			m.r.SetColorProfile(termenv.TrueColor)
			m.setTheme(benchTheme(termenv.TrueColor))
		}
		links := m.table.sorted(m.live)
		if len(links) == 0 {
			t.Fatal("the fixture has no links")
		}
		blank := *links[0]
		blank.last = feed.LinkView{Peer: "zed", Observer: true}
		blank.last.Relayed = true
		blank.peer, blank.samples = "zed", nil
		links = append(links, &blank)
		for _, w := range []int{minWidth, wideTable - 1, wideTable, 160} {
			widths, sparkW := tableWidths(w)
			head := m.table.drawHeading(widths, sparkW, w >= wideTable, w)
			if len(head.cols) != len(tableCols) || len(head.keys) != len(tableCols) {
				t.Fatalf("at %d the heading has %d cells (%d keys), the table %d columns", w, len(head.cols), len(head.keys), len(tableCols))
			}
			if got := width(head.line); got != w {
				t.Errorf("at %d the heading is %d wide", w, got)
			}
			for _, h := range links {
				for _, selected := range []bool{false, true} {
					checkRowCells(t, m, h, widths, head, w, selected)
				}
			}
		}
	}
}

// checkRowCells draws h's row cell by cell, as linkRow does, and checks
// each cell against the heading's, then the whole row against linkRow's.
func checkRowCells(t *testing.T, m *tuiModel, h *linkHist, widths []int, head tableHeading, w int, selected bool) {
	t.Helper()
	r := &rowWriter{st: &m.st, sh: h.windowShares(), fps: m.live.view.FPS, wide: w >= wideTable, selected: selected}
	writeGutter(&r.b, &m.st, selected, false)
	x := width(r.b.String())
	for i, c := range tableCols {
		c.cell(r, h, widths[i])
		end := width(r.b.String())
		if got := (span{x, end - 1}); got != head.cols[i] || head.keys[i] != c.key {
			t.Errorf("at %d, %s (selected %v): the %q cell is %v, its heading %v", w, h.peer, selected, c.head, got, head.cols[i])
		}
		x = end
	}
	cells := ansi.Strip(r.b.String())
	_, sparkW := tableWidths(w)
	row := ansi.Strip(m.table.linkRow(h, widths, sparkW, sparkFloor, m.live.view.FPS, w >= wideTable, selected, false, w))
	if width(row) != w || !strings.HasPrefix(row, strings.TrimRight(cells, " ")) {
		t.Errorf("at %d, %s (selected %v): the row is not its cells:\n%q\n%q", w, h.peer, selected, row, cells)
	}
}
