package ui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/themes"
)

// styles are a theme's inks made into lipgloss styles on the program's
// renderer, built once per theme change rather than per frame.
type styles struct {
	theme themes.Theme

	text, muted, title, border, accent lipgloss.Style
	selected, worst                    lipgloss.Style
	good, warn, err                    lipgloss.Style
	tier                               [5]lipgloss.Style // by rungs.Tier; 0 unused
	badge                              [5]lipgloss.Style // the header's tier badge
	srtt, rto                          lipgloss.Style
	resend, in, out                    lipgloss.Style
	tabOn, tabOff                      lipgloss.Style
	dialog                             lipgloss.Style
}

func ink(r *lipgloss.Renderer, i themes.Ink) lipgloss.Style {
	s := r.NewStyle()
	if i.Fg != nil {
		if _, none := i.Fg.(lipgloss.NoColor); !none {
			s = s.Foreground(i.Fg)
		}
	}
	if i.Attr&themes.Bold != 0 {
		s = s.Bold(true)
	}
	if i.Attr&themes.Underline != 0 {
		s = s.Underline(true)
	}
	if i.Attr&themes.Reverse != 0 {
		s = s.Reverse(true)
	}
	if i.Attr&themes.Faint != 0 {
		s = s.Faint(true)
	}
	if i.Attr&themes.Italic != 0 {
		s = s.Italic(true)
	}
	return s
}

func newStyles(r *lipgloss.Renderer, t themes.Theme) styles {
	s := styles{theme: t,
		text: ink(r, t.Text), muted: ink(r, t.Muted), title: ink(r, t.Title), border: ink(r, t.Border),
		accent: ink(r, t.Accent), selected: ink(r, t.Selected), worst: ink(r, t.Worst),
		good: ink(r, t.Good), warn: ink(r, t.Warn), err: ink(r, t.Err),
		srtt: ink(r, t.SRTT), rto: ink(r, t.RTO),
		resend: ink(r, t.Resend), in: ink(r, t.Inbound), out: ink(r, t.Outbound),
	}
	tiers := [5]themes.Ink{{}, t.Fast, t.Normal, t.Poor, t.Bad}
	for i := 1; i < 5; i++ {
		s.tier[i] = ink(r, tiers[i])
		// The badge is the tier ink reversed (a coloured block with the
		// word in it); where the ink is already reversed, it is plain bold.
		b := ink(r, tiers[i]).Bold(true).Padding(0, 1)
		if tiers[i].Attr&themes.Reverse == 0 {
			b = b.Reverse(true)
		} else {
			b = b.Reverse(false)
		}
		s.badge[i] = b
	}
	s.tabOn = ink(r, t.Accent).Reverse(true).Padding(0, 1)
	s.tabOff = ink(r, t.Muted).Padding(0, 1)
	s.dialog = r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(borderColour(t)).Padding(0, 1)
	return s
}

func borderColour(t themes.Theme) lipgloss.TerminalColor {
	if t.Accent.Fg == nil {
		return lipgloss.NoColor{}
	}
	return t.Accent.Fg
}

// tierStyle is the style of a tier; an out-of-range tier is plain text.
func (s *styles) tierStyle(t rungs.Tier) lipgloss.Style {
	if t >= rungs.Fast && t <= rungs.Bad {
		return s.tier[t]
	}
	return s.text
}

func (s *styles) badgeStyle(t rungs.Tier) lipgloss.Style {
	if t >= rungs.Fast && t <= rungs.Bad {
		return s.badge[t]
	}
	return s.text
}

// tierByName maps a tier word from an event back to the tier.
func tierByName(name string) rungs.Tier {
	for t := rungs.Fast; t <= rungs.Bad; t++ {
		if t.String() == name {
			return t
		}
	}
	return 0
}
