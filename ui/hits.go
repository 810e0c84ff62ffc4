package ui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// span is a half-open range of columns or rows.
type span struct{ from, to int }

func (s span) has(x int) bool { return x >= s.from && x < s.to }

// hitMap records where the last picture put the things a click can reach.
type hitMap struct {
	tabs     []span // header tabs by screen, columns on row 0
	tableY   int    // row of the table's heading; -1: no table
	rows     []string
	cols     []span // heading columns, by position in colKeys
	colKeys  []sortKey
	hasTable bool
}

// mouse answers the wheel (move through links or messages) and clicks
// (a tab, a heading to sort by, a row to focus). The command it returns
// tells the engine when the Path view opens, changes link or closes.
func (m *tuiModel) mouse(msg tea.MouseMsg) tea.Cmd {
	if msg.Action != tea.MouseActionPress {
		return nil
	}
	if m.load.confirm != "" {
		// As any key but y: the confirmation closes, nothing starts.
		m.load.confirm, m.flash = "", "load test not started"
		return nil
	}
	switch msg.Button {
	case tea.MouseButtonWheelUp:
		return m.move(-1)
	case tea.MouseButtonWheelDown:
		return m.move(+1)
	case tea.MouseButtonLeft:
	default:
		return nil
	}
	if m.dialog != nil || m.showHelp {
		return nil
	}
	if msg.Y == 0 {
		for i, t := range m.hits.tabs {
			if t.has(msg.X) {
				return m.setScreen(i)
			}
		}
		return nil
	}
	if !m.hits.hasTable {
		return nil
	}
	if msg.Y == m.hits.tableY {
		for i, c := range m.hits.cols {
			if c.has(msg.X) {
				m.table.sortOn(m.hits.colKeys[i])
				return nil
			}
		}
		return nil
	}
	if r := msg.Y - m.hits.tableY - 1; r >= 0 && r < len(m.hits.rows) {
		m.table.selected = m.hits.rows[r]
		m.charts.focus = m.table.selected
	}
	return nil
}
