package ui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/themes"
	"github.com/lagscope/lagscope/vocab"
	"github.com/muesli/termenv"
)

// styles are a theme's inks made into lipgloss styles on the program's
// renderer, built once per theme change rather than per frame.
type styles struct {
	theme themes.Theme

	text, muted, title, border, accent paint
	selected, worst                    paint
	good, warn, err                    paint
	tier                               [5]paint          // by rungs.Tier; 0 unused
	badge                              [5]lipgloss.Style // the header's tier badge
	srtt, rto                          paint
	resend, in, out                    paint
	cause, openCause                   [len(vocab.IncidentCauses)]paint // by place in vocab.IncidentCauses; an open incident's reversed
	tabOn, tabOff                      lipgloss.Style
	dialog                             lipgloss.Style

	// drawn keeps words drawn in the padded styles (tabs, badges): lipgloss
	// pads them at some cost, and they are the same few words every frame.
	r     *lipgloss.Renderer
	drawn *drawnWords
}

// drawnWords are words drawn in a style, for one colour profile.
type drawnWords struct {
	prof termenv.Profile
	m    map[drawnKey]string
}

type drawnKey struct {
	style string // which style, by its field name
	tier  rungs.Tier
	text  string
}

// word is text drawn in style (named by k.style), drawn once per theme and
// profile.
func (s *styles) word(k drawnKey, style lipgloss.Style) string {
	if p := s.r.ColorProfile(); s.drawn.m == nil || s.drawn.prof != p || len(s.drawn.m) > 256 {
		*s.drawn = drawnWords{prof: p, m: map[drawnKey]string{}}
	}
	if out, ok := s.drawn.m[k]; ok {
		return out
	}
	out := style.Render(k.text)
	s.drawn.m[k] = out
	return out
}

// tab is a view's name as its header tab, open or not.
func (s *styles) tab(name string, open bool) string {
	if open {
		return s.word(drawnKey{style: "tabOn", text: name}, s.tabOn)
	}
	return s.word(drawnKey{style: "tabOff", text: name}, s.tabOff)
}

// badgeWord is a tier's badge: its name in capitals on the tier's colour.
func (s *styles) badgeWord(t rungs.Tier) string {
	return s.word(drawnKey{style: "badge", tier: t, text: strings.ToUpper(t.String())}, s.badgeStyle(t))
}

// paint is an ink ready to draw with: the escape sequences a lipgloss style
// puts around text, worked out once per theme, so that painting a table
// cell or a chart line is a few appends instead of a pass through lipgloss
// (which builds the sequences again, splits lines and formats with fmt on
// every call: most of a frame's cost). An underlined style paints
// each rune on its own, spaces in their own sequence, and so does paint.
// What the shortcut cannot reproduce — text with tabs, line breaks or
// carriage returns — goes through lipgloss, and a style whose
// output the shortcut does not match on trial text never uses it: the bytes
// on screen are the same either way.
type paint struct {
	st lipgloss.Style
	// The sequences are the profile's the renderer had when they were
	// worked out; should it change, lipgloss paints again.
	r        *lipgloss.Renderer
	prof     termenv.Profile
	pre, suf string // around the whole text
	perRune  bool   // each rune painted on its own instead
	// around each space and each other rune, when perRune
	spPre, spSuf string
	fast         bool
	// lipgloss paints an underlined style rune by rune whatever the
	// profile, turning bytes that are not UTF-8 into U+FFFD on the way.
	runeWise bool
}

// probeText is what a style is tried on to find its sequences: letters,
// digits, spaces and wide runes, none of which occur in an escape
// sequence's parameters.
const probeText = "Xy 1·█ z"

func newPaint(r *lipgloss.Renderer, st lipgloss.Style) paint {
	p := paint{st: st, r: r, prof: r.ColorProfile(), runeWise: st.GetUnderline() || st.GetStrikethrough()}
	out := st.Render(probeText)
	if i := strings.Index(out, probeText); i >= 0 {
		p.pre, p.suf = out[:i], out[i+len(probeText):]
	} else {
		// Rune by rune: the sequences around one letter and one space.
		x, sp := st.Render("X"), st.Render(" ")
		i, j := strings.Index(x, "X"), strings.Index(sp, " ")
		if i < 0 || j < 0 {
			return p
		}
		p.perRune = true
		p.pre, p.suf = x[:i], x[i+1:]
		p.spPre, p.spSuf = sp[:j], sp[j+1:]
	}
	// The shortcut is used only where it agrees with lipgloss on trial
	// text, the empty string included.
	p.fast = true
	for _, s := range []string{"", probeText, "a  b", " ", "—"} {
		if p.Render(s) != st.Render(s) {
			p.fast = false
			break
		}
	}
	return p
}

// ok reports whether the shortcut paints s as lipgloss would.
func (p *paint) ok(s string) bool {
	return p.fast && p.r.ColorProfile() == p.prof && !strings.ContainsAny(s, "\t\n\r") &&
		(!p.runeWise || utf8.ValidString(s))
}

// plainRun reports whether pre+text+suf paints any one line of plain text
// (no tabs or line breaks, valid UTF-8) as lipgloss would: the caller then
// writes the three itself.
func (p *paint) plainRun() bool {
	return p.fast && !p.perRune && p.r.ColorProfile() == p.prof
}

// Render paints s as its lipgloss style would.
func (p paint) Render(s string) string {
	if !p.ok(s) {
		return p.st.Render(s)
	}
	if p.perRune {
		var b strings.Builder
		p.put(&b, s)
		return b.String()
	}
	if p.pre == "" && p.suf == "" {
		return s
	}
	return p.pre + s + p.suf
}

// put writes s painted onto b, without building the painted string.
func (p paint) put(b *strings.Builder, s string) {
	if !p.ok(s) {
		b.WriteString(p.st.Render(s))
		return
	}
	if !p.perRune {
		b.WriteString(p.pre)
		b.WriteString(s)
		b.WriteString(p.suf)
		return
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			b.WriteString(p.spPre)
			b.WriteRune(r)
			b.WriteString(p.spSuf)
			continue
		}
		b.WriteString(p.pre)
		b.WriteRune(r)
		b.WriteString(p.suf)
	}
}

// Style is the lipgloss style, for the libraries that take one.
func (p paint) Style() lipgloss.Style { return p.st }

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
	in := func(i themes.Ink) paint { return newPaint(r, ink(r, i)) }
	s := styles{theme: t, r: r, drawn: &drawnWords{},
		text: in(t.Text), muted: in(t.Muted), title: in(t.Title), border: in(t.Border),
		accent: in(t.Accent), selected: in(t.Selected), worst: in(t.Worst),
		good: in(t.Good), warn: in(t.Warn), err: in(t.Err),
		srtt: in(t.SRTT), rto: in(t.RTO),
		resend: in(t.Resend), in: in(t.Inbound), out: in(t.Outbound),
	}
	for i, c := range vocab.IncidentCauses {
		ci := causeInk(t, c)
		s.cause[i] = in(ci)
		// An open incident stands out reversed; an ink that is reversed
		// already turns plain and bold instead.
		open := ink(r, ci).Bold(true).Reverse(ci.Attr&themes.Reverse == 0)
		s.openCause[i] = newPaint(r, open)
	}
	tiers := [5]themes.Ink{{}, t.Fast, t.Normal, t.Poor, t.Bad}
	for i := 1; i < 5; i++ {
		s.tier[i] = in(tiers[i])
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
func (s *styles) tierStyle(t rungs.Tier) paint {
	if t >= rungs.Fast && t <= rungs.Bad {
		return s.tier[t]
	}
	return s.text
}

func (s *styles) badgeStyle(t rungs.Tier) lipgloss.Style {
	if t >= rungs.Fast && t <= rungs.Bad {
		return s.badge[t]
	}
	return s.text.Style()
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
