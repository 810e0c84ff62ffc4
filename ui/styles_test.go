package ui

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/themes"
	"github.com/muesli/termenv"
)

// The painted text is byte for byte what lipgloss draws for the same style
// (the shortcut makes the redraw cheaper, not different), in every theme and
// colour profile, for text the shortcut takes and text it hands back to
// lipgloss (tabs, line breaks), and after the profile changes under it.
func TestPaintIsLipgloss(t *testing.T) {
	texts := []string{"", " ", "x", "12.5", "—", "a b  c ", "Round trip · bob", "▁▂█ ✕•", "\xff bad utf8",
		"tab\there", "two\nlines", "cr\r\nlf", strings.Repeat("wide 漢字 ", 5)}
	for _, prof := range []termenv.Profile{termenv.Ascii, termenv.ANSI, termenv.ANSI256, termenv.TrueColor} {
		for _, name := range themes.Names() {
			th, _ := themes.ByName(name)
			r := lipgloss.NewRenderer(io.Discard)
			r.SetColorProfile(prof)
			st := newStyles(r, th)
			all := []paint{st.text, st.muted, st.title, st.border, st.accent, st.selected, st.worst,
				st.good, st.warn, st.err, st.srtt, st.rto, st.resend, st.in, st.out}
			all = append(all, st.tier[1:]...)
			for i, p := range all {
				if !p.fast {
					t.Errorf("%s/%v: style %d does not take the shortcut", name, prof, i)
				}
				for _, s := range texts {
					want := p.Style().Render(s)
					if got := p.Render(s); got != want {
						t.Errorf("%s/%v: style %d: Render(%q) = %q, lipgloss %q", name, prof, i, s, got, want)
					}
					var b strings.Builder
					p.put(&b, s)
					if b.String() != want {
						t.Errorf("%s/%v: style %d: put(%q) = %q, lipgloss %q", name, prof, i, s, b.String(), want)
					}
				}
			}
			// A profile changed after the styles were made is honoured.
			r.SetColorProfile(termenv.TrueColor - prof + termenv.Ascii)
			for _, s := range texts {
				if got, want := st.title.Render(s), st.title.Style().Render(s); got != want {
					t.Errorf("%s/%v: after a profile change Render(%q) = %q, lipgloss %q", name, prof, s, got, want)
				}
			}
		}
	}
}

// The layout helpers that stand in for lipgloss calls on the redraw path
// give lipgloss's bytes: side-by-side blocks (JoinHorizontal, top),
// cutting to a width (MaxWidth), and widths.
func TestLayoutIsLipgloss(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	red := r.NewStyle().Foreground(lipgloss.Color("#ff0000"))
	texts := []string{"", "a", "plain text", red.Render("red") + " and plain", "漢字 wide", "tab\tin", "x\ny",
		red.Render("a long coloured line that will be cut somewhere in its middle"), "cr\r\nlf", "é—·█"}
	for _, s := range texts {
		if got, want := width(s), lipgloss.Width(s); got != want {
			t.Errorf("width(%q) = %d, lipgloss %d", s, got, want)
		}
		for _, w := range []int{1, 3, 8, 20} {
			want := lipgloss.NewStyle().MaxWidth(w).Render(s)
			if lipgloss.Width(s) <= w {
				continue // fit pads; only the cut is lipgloss's
			}
			if got := cut(s, w); got != want {
				t.Errorf("cut(%q, %d) = %q, lipgloss %q", s, w, got, want)
			}
		}
	}
	blocks := [][]string{
		{"a\nbb\nccc", " ", "x\ny"},
		{red.Render("one") + "\n" + red.Render("three"), "|", "1\n22\n333\n4444"},
		{"", "z"},
		{"only"},
		{"wide 漢字\n-", " ", ""},
	}
	for _, bs := range blocks {
		if got, want := sideBySide(bs...), lipgloss.JoinHorizontal(lipgloss.Top, bs...); got != want {
			t.Errorf("sideBySide(%q) = %q, lipgloss %q", bs, got, want)
		}
	}
}
