package themes

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

func TestNamesAndLookup(t *testing.T) {
	want := "dark,light,high-contrast,colour-blind,monochrome"
	if got := strings.Join(Names(), ","); got != want {
		t.Fatalf("Names() = %s", got)
	}
	for _, n := range Names() {
		th, ok := ByName(strings.ToUpper(n))
		if !ok || th.Name != n {
			t.Errorf("ByName(%q) = %q, %v", n, th.Name, ok)
		}
	}
	for alias, want := range map[string]string{"colorblind": "colour-blind", "okabe-ito": "colour-blind", "mono": "monochrome", "hc": "high-contrast"} {
		if th, ok := ByName(alias); !ok || th.Name != want {
			t.Errorf("ByName(%q) = %q", alias, th.Name)
		}
	}
	if _, ok := ByName("sepia"); ok {
		t.Error("unknown theme found")
	}
	if _, ok := ByName(Default); !ok {
		t.Error("the default theme must exist")
	}
}

func TestNextWrapsRound(t *testing.T) {
	names := Names()
	for i, n := range names {
		if got := Next(n).Name; got != names[(i+1)%len(names)] {
			t.Errorf("Next(%s) = %s", n, got)
		}
	}
	if Next("nope").Name != Default {
		t.Error("Next of an unknown theme should be the default")
	}
}

// Tier inks must differ from one another in every theme (S17: a tier's
// colour carries meaning), by colour or by attribute.
func TestTierInksDistinct_S17(t *testing.T) {
	for _, n := range Names() {
		th, _ := ByName(n)
		inks := []Ink{th.Fast, th.Normal, th.Poor, th.Bad}
		for i := range inks {
			for j := i + 1; j < len(inks); j++ {
				if inks[i] == inks[j] {
					t.Errorf("%s: tiers %d and %d share an ink", n, i+1, j+1)
				}
			}
		}
	}
}

// The colour-blind theme's tiers and series are Okabe–Ito colours only.
func TestColourBlindUsesOkabeIto(t *testing.T) {
	palette := map[lipgloss.Color]bool{okOrange: true, okSkyBlue: true, okGreen: true, okYellow: true, okBlue: true, okVermilion: true, okPurple: true, okGrey: true}
	th := colourBlind()
	for _, i := range []Ink{th.Fast, th.Normal, th.Poor, th.Bad, th.SRTT, th.RTO, th.Resend, th.Inbound, th.Outbound} {
		if c, ok := i.Fg.(lipgloss.Color); !ok || !palette[c] {
			t.Errorf("ink %+v is not an Okabe–Ito colour", i)
		}
	}
}

// Monochrome has no colour at all.
func TestMonochromeHasNoColour(t *testing.T) {
	th := monochrome()
	for _, i := range []Ink{th.Text, th.Muted, th.Fast, th.Normal, th.Poor, th.Bad, th.SRTT, th.Selected} {
		if _, ok := i.Fg.(lipgloss.NoColor); !ok {
			t.Errorf("ink %+v has a colour", i)
		}
	}
}

// The incident causes' inks differ from one another in every theme, and
// keep to the theme's own rules: Okabe–Ito colours in the colour-blind
// theme, no colour at all in monochrome.
func TestCauseInksDistinct(t *testing.T) {
	palette := map[lipgloss.Color]bool{okOrange: true, okSkyBlue: true, okGreen: true, okYellow: true, okBlue: true, okVermilion: true, okPurple: true, okGrey: true}
	for _, n := range Names() {
		th, _ := ByName(n)
		ci := th.Causes
		inks := []Ink{ci.Latency, ci.Loss, ci.Jitter, ci.Processing, ci.Bufferbloat, ci.Unknown}
		for i := range inks {
			if inks[i].Fg == nil {
				t.Errorf("%s: cause ink %d has no foreground", n, i)
			}
			for j := i + 1; j < len(inks); j++ {
				if inks[i] == inks[j] {
					t.Errorf("%s: cause inks %d and %d are the same", n, i, j)
				}
			}
			switch n {
			case "colour-blind":
				if c, ok := inks[i].Fg.(lipgloss.Color); !ok || !palette[c] {
					t.Errorf("colour-blind: cause ink %+v is not an Okabe–Ito colour", inks[i])
				}
			case "monochrome":
				if _, ok := inks[i].Fg.(lipgloss.NoColor); !ok {
					t.Errorf("monochrome: cause ink %+v has a colour", inks[i])
				}
			}
		}
	}
}
