package ui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// speedSteps are the Speed slider's stops, in frames per second (S17: the
// game speed caps the frame rate).
var speedSteps = []int{10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60}

// optionsDialog is the options dialog (S17): the disabled, mirrored
// Connection slider and the Speed slider.
type optionsDialog struct {
	*ctx
	speed int // the speed the slider points at, not yet applied
}

// newDialog opens the dialog on the game speed of v.
func newDialog(c *ctx, v *feed.View) *optionsDialog {
	cur := v.Speed
	if cur <= 0 {
		cur = v.FPS
	}
	if cur <= 0 {
		cur = 30
	}
	return &optionsDialog{ctx: c, speed: nearestStep(cur)}
}

func nearestStep(v int) int {
	best := speedSteps[0]
	for _, s := range speedSteps {
		if abs(s-v) < abs(best-v) {
			best = s
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func stepIndex(v int) int {
	for i, s := range speedSteps {
		if s == v {
			return i
		}
	}
	return 0
}

// key handles a key while the dialog is open: closed says the dialog is
// done, apply is the speed to ask the engine for (0: none).
func (d *optionsDialog) key(msg tea.KeyMsg) (closed bool, apply int) {
	k := &d.keys
	switch {
	case key.Matches(msg, k.Close, k.Options):
		return true, 0
	case key.Matches(msg, k.Left):
		d.speed = speedSteps[max(0, stepIndex(d.speed)-1)]
	case key.Matches(msg, k.Right):
		d.speed = speedSteps[min(len(speedSteps)-1, stepIndex(d.speed)+1)]
	case key.Matches(msg, k.Apply):
		return true, d.speed
	}
	return false, 0
}

// connectionSlider draws the disabled, mirrored Connection slider: rung 10
// at its left end, rung 1 at its right end (S17), the knob on the rung in
// force.
func (p *optionsDialog) connectionSlider(t rungs.Timing) []string {
	st := &p.st
	pos := t.SliderPosition()
	var track, nums strings.Builder
	for i := 0; i < rungs.Rungs; i++ {
		if i == pos {
			track.WriteString("─●─")
		} else {
			track.WriteString("───")
		}
		nums.WriteString(padLeft(strconv.Itoa(rungs.Rungs-i), 2) + " ")
	}
	return []string{
		st.muted.Render("Bad  ├") + st.muted.Render(track.String()) + st.muted.Render("┤  Fast"),
		st.muted.Render("      " + nums.String()),
	}
}

func (p *optionsDialog) speedSlider(speed int) []string {
	st := &p.st
	idx := stepIndex(speed)
	var track, nums strings.Builder
	for i, s := range speedSteps {
		if i == idx {
			track.WriteString(st.accent.Render("─●─"))
		} else {
			track.WriteString(st.text.Render("───"))
		}
		_ = s
	}
	nums.WriteString(padLeft(strconv.Itoa(speedSteps[0]), 3))
	nums.WriteString(strings.Repeat(" ", 3*len(speedSteps)-6))
	nums.WriteString(strconv.Itoa(speedSteps[len(speedSteps)-1]))
	return []string{
		st.text.Render("slow ├") + track.String() + st.text.Render("┤ fast"),
		st.muted.Render("     " + nums.String()),
	}
}

// dialogScreen draws the options dialog in the middle of the body.
func (d *optionsDialog) view(s *session, w, h int) string {
	st := &d.st
	p := d
	v := &s.view
	var lines []string
	lines = append(lines, st.title.Render("Options"), "")
	// Who sets the connection: nobody moves this slider by hand; the
	// master's machine picks the timing from the worst reported round trip (S9).
	who := "  (set for everyone by the master's machine from the worst round trip)"
	if v.Self != "" && v.Self == v.Master {
		who = "  (you are the master: your machine sets it from the worst round trip)"
	}
	lines = append(lines, st.text.Render("Connection"))
	for _, l := range wrap(strings.TrimSpace(who), max(20, w-8)) {
		lines = append(lines, st.muted.Render(l))
	}
	if v.InForce.Valid() {
		lines = append(lines, p.connectionSlider(v.InForce)...)
		lines = append(lines, "      "+st.tierStyle(v.InForce.Tier()).Render(v.InForce.Label())+st.muted.Render("  timing "+v.InForce.String()))
	} else {
		lines = append(lines, st.muted.Render("      "+unknown+" (no timing yet)"))
	}
	lines = append(lines, "")
	lines = append(lines, st.text.Render("Speed")+st.muted.Render("  (game speed: caps the frame rate)"))
	lines = append(lines, p.speedSlider(d.speed)...)
	now := unknown
	if v.Speed > 0 {
		now = strconv.Itoa(v.Speed) + " fps"
	}
	lines = append(lines, "      "+st.accent.Render(strconv.Itoa(d.speed)+" fps")+st.muted.Render("  (now "+now+")"))
	lines = append(lines, "", p.help.ShortHelpView(dialogKeys{p.keys}.ShortHelp()))
	box := st.dialog.Render(strings.Join(lines, "\n"))
	return blockString(lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, box), w, h)
}
