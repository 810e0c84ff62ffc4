package ui

import (
	"fmt"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Playback is what a replayed feed offers besides feed.Feed:
// pause, seek and the speed of playback. record.Player has these methods;
// the UI finds them by asserting its feed to this interface, binds keys to
// them and shows where the replay is. A live feed has none of them, and
// the UI then shows neither the keys nor the position.
type Playback interface {
	TogglePause()
	SetSpeed(x float64) // the feed clamps it to what it allows (×0.5–×16)
	Seek(t time.Duration)
	// Position says where the replay is, how long it is, whether it plays
	// and at which speed.
	Position() (at, end time.Duration, playing bool, speed float64)
}

// seekStep is how far ←/→ move a replay.
const seekStep = 10 * time.Second

// playbackKey handles the replay's keys; it reports whether it used the
// key. It runs before a view's own keys, so in a replay ←/→ seek on every
// view (the Matrix view's columns are h/l then).
func (m *tuiModel) playbackKey(msg tea.KeyMsg) bool {
	pb, k := m.playback, &m.keys
	at, end, _, speed := pb.Position()
	switch {
	case key.Matches(msg, k.PlayPause):
		pb.TogglePause()
	case key.Matches(msg, k.SeekBack):
		pb.Seek(max(at-seekStep, 0))
	case key.Matches(msg, k.SeekForward):
		pb.Seek(min(at+seekStep, end))
	case key.Matches(msg, k.Slower):
		pb.SetSpeed(speed / 2)
	case key.Matches(msg, k.Faster):
		pb.SetSpeed(speed * 2)
	default:
		return false
	}
	return true
}

// playbackStatus is the header's replay part: playing or paused, where,
// of how long, and the speed, e.g. "▶ 01:23 / 05:00 ×2".
func (m *tuiModel) playbackStatus() string {
	at, end, playing, speed := m.playback.Position()
	mark := "▶"
	if !playing {
		mark = "⏸"
	}
	return fmt.Sprintf("%s %s / %s ×%s", mark, fmtClock(at), fmtClock(end), strconv.FormatFloat(speed, 'g', 3, 64))
}

// matrixColumnKeys names the keys that move the Matrix view's column: in a
// replay ←/→ seek, so only h/l do.
func (m *tuiModel) matrixColumnKeys() string {
	if m.playback != nil {
		return "h/l"
	}
	return "←/→"
}
