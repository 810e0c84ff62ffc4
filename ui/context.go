package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/themes"
)

// ctx is what every pane shares (gh-dash's ProgramContext): the renderer,
// the theme's styles, the keys and the help renderer, and the map of where
// the last picture put clickable things. Each pane keeps a pointer to the
// one ctx the Model owns, so a theme change reaches every pane at once.
type ctx struct {
	r    *lipgloss.Renderer
	st   styles
	keys keyMap
	help help.Model
	hits hitMap
	w, h int
}

func (c *ctx) setTheme(t themes.Theme) {
	c.st = newStyles(c.r, t)
	c.help.Styles.ShortKey = c.st.accent.Style()
	c.help.Styles.FullKey = c.st.accent.Style()
	c.help.Styles.ShortDesc = c.st.muted.Style()
	c.help.Styles.FullDesc = c.st.muted.Style()
	c.help.Styles.ShortSeparator = c.st.border.Style()
	c.help.Styles.FullSeparator = c.st.border.Style()
	c.help.Styles.Ellipsis = c.st.border.Style()
}

// rule is a pane title on a horizontal line: "── Title ─────".
func (c *ctx) rule(title string, w int) string {
	st := &c.st
	head := st.border.Render("──") + " " + title + " "
	n := lipgloss.Width(head)
	if n >= w {
		return fit(head, w)
	}
	return head + st.border.Render(strings.Repeat("─", w-n))
}

// tierWord is a tier as a word in its ink.
func (c *ctx) tierWord(t rungs.Tier) string { return c.st.tierStyle(t).Render(t.String()) }
