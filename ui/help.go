package ui

import "strings"

// helpPane is the `?` screen: every key, then what the mouse and the
// marks on screen mean.
type helpPane struct{ *ctx }

func (p *helpPane) view(w, h int, matrixColumnKeys string) string {
	p.help.Width = w
	lines := []string{p.rule(p.st.title.Render("Keys"), w), ""}
	lines = append(lines, strings.Split(p.help.FullHelpView(p.keys.FullHelp()), "\n")...)
	lines = append(lines, "",
		p.st.muted.Render("Mouse: the wheel moves through links; click a row to focus it,"),
		p.st.muted.Render("       a heading to sort by it, a tab to open it."),
		p.st.muted.Render("Matrix view: ↑/↓ choose who measures (the row), "+matrixColumnKeys+" to whom (the column)."),
		p.st.muted.Render("Unknown values show as "+unknown+", never 0. Loss and resend shares are"),
		p.st.muted.Render("per interval, differenced from the cumulative totals (L5)."))
	return block(lines, w, h)
}
