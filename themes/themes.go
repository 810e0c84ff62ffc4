// Package themes holds lagscope's colour palettes for the terminal UI:
// dark (the default), light, high-contrast, colour-blind-safe
// (Okabe–Ito) and monochrome. It holds colours and text attributes only;
// package ui turns them into styles.
//
// Every theme gives the four connection tiers of S17 (Fast, Normal, Poor,
// Bad) their own look, so a tier colour carries meaning in every theme. The
// monochrome theme has no colours at all and tells the tiers apart by text
// attributes; the UI also always writes the tier as a word, so nothing
// depends on colour alone (and NO_COLOR terminals lose nothing but colour).
package themes

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Attr is a text attribute that stands in for, or adds to, a colour.
type Attr uint8

// Attributes a theme can ask for.
const (
	Bold Attr = 1 << iota
	Underline
	Reverse
	Faint
	Italic
)

// Ink is one role's look: a foreground colour (lipgloss.NoColor{} for the
// terminal's own) and attributes.
type Ink struct {
	Fg   lipgloss.TerminalColor
	Attr Attr
}

// Theme is one palette. Each field is a role, not a hue: the UI asks for
// "the colour of the Poor tier", never for "orange".
type Theme struct {
	Name string

	Text   Ink // ordinary text
	Muted  Ink // labels, axes, unknown values
	Title  Ink // pane titles and the program name
	Border Ink // rules between panes
	Accent Ink // keys in the help line, the focused control

	Selected Ink // the row under the cursor (drawn reversed when Fg is NoColor)
	Worst    Ink // the worst link's marker

	Good Ink // a healthy state: measured
	Warn Ink // provisional, staged, paused
	Err  Ink // bad connections, desyncs, errors

	// Tier inks, in S17's order. They must differ from one another in every
	// theme, by colour or by attribute.
	Fast, Normal, Poor, Bad Ink

	// Chart series: the round trip and its retry timeout; the three loss
	// lanes (resend share, observed inbound, peer-reported outbound).
	SRTT, RTO                 Ink
	Resend, Inbound, Outbound Ink

	// Incident causes, on the Session view's incident strip and the
	// Diagnosis view's Incidents list.
	Causes CauseInks
}

// CauseInks are an incident's causes' looks: long round trips, lost
// packets, varying round trips, a slow machine, a router queue that fills
// under load, and a cause not told yet. They differ from one another in
// every theme, by colour or by attribute; the UI also writes each cause as
// a letter or a word, so none hangs on colour alone.
type CauseInks struct {
	Latency, Loss, Jitter, Processing, Bufferbloat, Unknown Ink
}

func c(hex string) lipgloss.TerminalColor { return lipgloss.Color(hex) }

var none = lipgloss.NoColor{}

// dark suits a dark terminal background; it is the default.
func dark() Theme {
	return Theme{
		Name:     "dark",
		Text:     Ink{Fg: c("#d0d0d0")},
		Muted:    Ink{Fg: c("#808080")},
		Title:    Ink{Fg: c("#87afff"), Attr: Bold},
		Border:   Ink{Fg: c("#4e4e4e")},
		Accent:   Ink{Fg: c("#5fd7ff"), Attr: Bold},
		Selected: Ink{Fg: c("#ffffff"), Attr: Reverse},
		Worst:    Ink{Fg: c("#ff5f5f"), Attr: Bold},
		Good:     Ink{Fg: c("#5fd787")},
		Warn:     Ink{Fg: c("#ffd75f")},
		Err:      Ink{Fg: c("#ff5f5f"), Attr: Bold},
		Fast:     Ink{Fg: c("#5fd787"), Attr: Bold},
		Normal:   Ink{Fg: c("#5fafff"), Attr: Bold},
		Poor:     Ink{Fg: c("#ffaf00"), Attr: Bold},
		Bad:      Ink{Fg: c("#ff5f5f"), Attr: Bold},
		SRTT:     Ink{Fg: c("#5fd7ff")},
		RTO:      Ink{Fg: c("#af87ff")},
		Resend:   Ink{Fg: c("#ffaf00")},
		Inbound:  Ink{Fg: c("#5fafff")},
		Outbound: Ink{Fg: c("#d787d7")},
		Causes: CauseInks{
			Latency:     Ink{Fg: c("#ff875f"), Attr: Bold},
			Loss:        Ink{Fg: c("#d787ff"), Attr: Bold},
			Jitter:      Ink{Fg: c("#ffd75f"), Attr: Bold},
			Processing:  Ink{Fg: c("#5fd7af"), Attr: Bold},
			Bufferbloat: Ink{Fg: c("#ffaf00"), Attr: Bold},
			Unknown:     Ink{Fg: c("#a8a8a8")},
		},
	}
}

// light suits a light terminal background: darker, more saturated inks.
func light() Theme {
	return Theme{
		Name:     "light",
		Text:     Ink{Fg: c("#1c1c1c")},
		Muted:    Ink{Fg: c("#6c6c6c")},
		Title:    Ink{Fg: c("#005faf"), Attr: Bold},
		Border:   Ink{Fg: c("#bcbcbc")},
		Accent:   Ink{Fg: c("#0087af"), Attr: Bold},
		Selected: Ink{Fg: c("#000000"), Attr: Reverse},
		Worst:    Ink{Fg: c("#af0000"), Attr: Bold},
		Good:     Ink{Fg: c("#008700")},
		Warn:     Ink{Fg: c("#875f00")},
		Err:      Ink{Fg: c("#af0000"), Attr: Bold},
		Fast:     Ink{Fg: c("#008700"), Attr: Bold},
		Normal:   Ink{Fg: c("#005fd7"), Attr: Bold},
		Poor:     Ink{Fg: c("#af5f00"), Attr: Bold},
		Bad:      Ink{Fg: c("#af0000"), Attr: Bold},
		SRTT:     Ink{Fg: c("#0087af")},
		RTO:      Ink{Fg: c("#5f00af")},
		Resend:   Ink{Fg: c("#af5f00")},
		Inbound:  Ink{Fg: c("#005fd7")},
		Outbound: Ink{Fg: c("#870087")},
		Causes: CauseInks{
			Latency:     Ink{Fg: c("#d75f00"), Attr: Bold},
			Loss:        Ink{Fg: c("#8700af"), Attr: Bold},
			Jitter:      Ink{Fg: c("#876f00"), Attr: Bold},
			Processing:  Ink{Fg: c("#00875f"), Attr: Bold},
			Bufferbloat: Ink{Fg: c("#af5f00"), Attr: Bold | Underline},
			Unknown:     Ink{Fg: c("#6c6c6c")},
		},
	}
}

// highContrast uses the sixteen basic ANSI colours at full brightness, which
// every terminal has and most users have tuned to be legible.
func highContrast() Theme {
	a := func(n uint) lipgloss.TerminalColor { return lipgloss.ANSIColor(n) }
	return Theme{
		Name:     "high-contrast",
		Text:     Ink{Fg: a(15), Attr: Bold},
		Muted:    Ink{Fg: a(7)},
		Title:    Ink{Fg: a(15), Attr: Bold | Underline},
		Border:   Ink{Fg: a(7)},
		Accent:   Ink{Fg: a(14), Attr: Bold},
		Selected: Ink{Fg: a(15), Attr: Reverse | Bold},
		Worst:    Ink{Fg: a(9), Attr: Bold | Reverse},
		Good:     Ink{Fg: a(10), Attr: Bold},
		Warn:     Ink{Fg: a(11), Attr: Bold},
		Err:      Ink{Fg: a(9), Attr: Bold},
		Fast:     Ink{Fg: a(10), Attr: Bold},
		Normal:   Ink{Fg: a(14), Attr: Bold},
		Poor:     Ink{Fg: a(11), Attr: Bold},
		Bad:      Ink{Fg: a(9), Attr: Bold | Reverse},
		SRTT:     Ink{Fg: a(14), Attr: Bold},
		RTO:      Ink{Fg: a(13), Attr: Bold},
		Resend:   Ink{Fg: a(11), Attr: Bold},
		Inbound:  Ink{Fg: a(14), Attr: Bold},
		Outbound: Ink{Fg: a(13), Attr: Bold},
		Causes: CauseInks{
			Latency:     Ink{Fg: a(9), Attr: Bold},
			Loss:        Ink{Fg: a(13), Attr: Bold},
			Jitter:      Ink{Fg: a(11), Attr: Bold},
			Processing:  Ink{Fg: a(10), Attr: Bold},
			Bufferbloat: Ink{Fg: a(11), Attr: Bold | Reverse},
			Unknown:     Ink{Fg: a(7)},
		},
	}
}

// Okabe–Ito's eight colours, chosen to stay apart under the common forms of
// colour blindness.
const (
	okOrange    = "#E69F00"
	okSkyBlue   = "#56B4E9"
	okGreen     = "#009E73" // bluish green
	okYellow    = "#F0E442"
	okBlue      = "#0072B2"
	okVermilion = "#D55E00"
	okPurple    = "#CC79A7" // reddish purple
	okGrey      = "#999999"
)

// colourBlind is the colour-blind-safe theme on the Okabe–Ito palette. The
// tiers run bluish green, sky blue, orange, vermilion: blue against orange is
// the pair that stays apart for every common form of colour blindness, and
// Bad is also reversed so it never hangs on hue alone.
func colourBlind() Theme {
	return Theme{
		Name:     "colour-blind",
		Text:     Ink{Fg: none},
		Muted:    Ink{Fg: c(okGrey)},
		Title:    Ink{Fg: c(okSkyBlue), Attr: Bold},
		Border:   Ink{Fg: c(okGrey)},
		Accent:   Ink{Fg: c(okYellow), Attr: Bold},
		Selected: Ink{Fg: none, Attr: Reverse},
		Worst:    Ink{Fg: c(okVermilion), Attr: Bold},
		Good:     Ink{Fg: c(okGreen)},
		Warn:     Ink{Fg: c(okOrange)},
		Err:      Ink{Fg: c(okVermilion), Attr: Bold},
		Fast:     Ink{Fg: c(okGreen), Attr: Bold},
		Normal:   Ink{Fg: c(okSkyBlue), Attr: Bold},
		Poor:     Ink{Fg: c(okOrange), Attr: Bold},
		Bad:      Ink{Fg: c(okVermilion), Attr: Bold | Reverse},
		SRTT:     Ink{Fg: c(okSkyBlue)},
		RTO:      Ink{Fg: c(okPurple)},
		Resend:   Ink{Fg: c(okOrange)},
		Inbound:  Ink{Fg: c(okBlue)},
		Outbound: Ink{Fg: c(okPurple)},
		Causes: CauseInks{
			Latency:     Ink{Fg: c(okVermilion), Attr: Bold},
			Loss:        Ink{Fg: c(okPurple), Attr: Bold},
			Jitter:      Ink{Fg: c(okYellow), Attr: Bold},
			Processing:  Ink{Fg: c(okGreen), Attr: Bold},
			Bufferbloat: Ink{Fg: c(okOrange), Attr: Bold},
			Unknown:     Ink{Fg: c(okGrey)},
		},
	}
}

// monochrome uses no colour at all; tiers are told apart by attributes
// (Fast plain, Normal underlined, Poor bold, Bad reversed) and by their
// names, which the UI always writes.
func monochrome() Theme {
	return Theme{
		Name:     "monochrome",
		Text:     Ink{Fg: none},
		Muted:    Ink{Fg: none, Attr: Faint},
		Title:    Ink{Fg: none, Attr: Bold},
		Border:   Ink{Fg: none, Attr: Faint},
		Accent:   Ink{Fg: none, Attr: Bold},
		Selected: Ink{Fg: none, Attr: Reverse},
		Worst:    Ink{Fg: none, Attr: Bold},
		Good:     Ink{Fg: none},
		Warn:     Ink{Fg: none, Attr: Underline},
		Err:      Ink{Fg: none, Attr: Bold},
		Fast:     Ink{Fg: none},
		Normal:   Ink{Fg: none, Attr: Underline},
		Poor:     Ink{Fg: none, Attr: Bold},
		Bad:      Ink{Fg: none, Attr: Reverse | Bold},
		SRTT:     Ink{Fg: none, Attr: Bold},
		RTO:      Ink{Fg: none},
		Resend:   Ink{Fg: none, Attr: Bold},
		Inbound:  Ink{Fg: none},
		Outbound: Ink{Fg: none, Attr: Underline},
		Causes: CauseInks{
			Latency:     Ink{Fg: none, Attr: Bold},
			Loss:        Ink{Fg: none, Attr: Underline},
			Jitter:      Ink{Fg: none, Attr: Italic},
			Processing:  Ink{Fg: none},
			Bufferbloat: Ink{Fg: none, Attr: Bold | Underline},
			Unknown:     Ink{Fg: none, Attr: Faint},
		},
	}
}

// Default is the theme used when none is named.
const Default = "dark"

var all = []func() Theme{dark, light, highContrast, colourBlind, monochrome}

// aliases are other spellings accepted by ByName.
var aliases = map[string]string{
	"colorblind": "colour-blind", "color-blind": "colour-blind", "colourblind": "colour-blind",
	"okabe-ito": "colour-blind", "cb": "colour-blind",
	"hc": "high-contrast", "contrast": "high-contrast",
	"mono": "monochrome", "none": "monochrome",
}

// Names lists the themes in the order the UI's `t` key cycles through.
func Names() []string {
	out := make([]string, len(all))
	for i, f := range all {
		out[i] = f().Name
	}
	return out
}

// ByName finds a theme by name (case-insensitive; a few aliases such as
// "colorblind" and "mono" are accepted). ok is false for an unknown name.
func ByName(name string) (Theme, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	for _, f := range all {
		if t := f(); t.Name == n {
			return t, true
		}
	}
	return Theme{}, false
}

// Next is the theme after name in Names' order, wrapping round; an unknown
// name gives the default.
func Next(name string) Theme {
	names := Names()
	for i, n := range names {
		if n == name {
			t, _ := ByName(names[(i+1)%len(names)])
			return t
		}
	}
	t, _ := ByName(Default)
	return t
}
