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
// one ctx the model owns, so a theme change reaches every pane at once.
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
	lead := st.border.Render("──")
	if strings.Contains(title, "\n") {
		// Not a title for one line; measured as lipgloss measures it.
		head := lead + " " + title + " "
		if n := width(head); n < w {
			return head + st.border.Render(strings.Repeat("─", w-n))
		}
		return fit(head, w)
	}
	n := width(lead) + 2 + width(title)
	if n >= w {
		return fit(lead+" "+title+" ", w)
	}
	var b strings.Builder
	b.Grow(len(lead) + len(title) + 2 + 3*(w-n) + 32)
	b.WriteString(lead)
	b.WriteByte(' ')
	b.WriteString(title)
	b.WriteByte(' ')
	if st.border.plainRun() {
		b.WriteString(st.border.pre)
		for i := n; i < w; i++ {
			b.WriteString("─")
		}
		b.WriteString(st.border.suf)
	} else {
		st.border.put(&b, strings.Repeat("─", w-n))
	}
	return b.String()
}

// tierWord is a tier as a word in its ink.
func (c *ctx) tierWord(t rungs.Tier) string { return c.st.tierStyle(t).Render(t.String()) }
