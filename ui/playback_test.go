package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/feed"
)

// fakeReplay is a feed with Playback's methods, like record.Player: it
// keeps a position and notes what was asked of it.
type fakeReplay struct {
	*staticFeed
	at, end time.Duration
	playing bool
	speed   float64
	calls   []string
}

func (f *fakeReplay) TogglePause() { f.playing = !f.playing; f.calls = append(f.calls, "pause") }
func (f *fakeReplay) SetSpeed(x float64) {
	f.speed = min(max(x, 0.5), 16)
	f.calls = append(f.calls, "speed "+itoa(int(f.speed*10)))
}
func (f *fakeReplay) Seek(t time.Duration) {
	f.at = t
	f.calls = append(f.calls, "seek "+t.String())
}
func (f *fakeReplay) Position() (time.Duration, time.Duration, bool, float64) {
	return f.at, f.end, f.playing, f.speed
}

var _ Playback = (*fakeReplay)(nil)

var keySpace = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}

// In a replay space pauses and plays, ←/→ seek 10 s (on the Matrix view
// too, whose columns move with h/l there), -/+ halve and double the speed,
// and the header shows where the replay is, with the session time beside
// it; the footer and the help name the keys.
func TestReplayKeysDrivePlayback(t *testing.T) {
	f := &fakeReplay{staticFeed: newStaticFeed(), at: 30 * time.Second, end: 100 * time.Second, playing: true, speed: 1}
	m := model(t, f, 120, 40, fixtureUpdates()[:31])
	v := m.View()
	if !strings.Contains(v, "▶ 00:30 / 01:40 ×1  t 00:30") || !strings.Contains(v, "space play/pause") {
		t.Fatalf("replay header or footer:\n%s", v)
	}
	press(m, keySpace, keyLeft, keyRight, keyRight, typed("+"), typed("+"), typed("-"))
	want := "pause|seek 20s|seek 30s|seek 40s|speed 20|speed 40|speed 20"
	if got := strings.Join(f.calls, "|"); got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	if v := m.View(); !strings.Contains(v, "⏸ 00:40 / 01:40 ×2") {
		t.Fatalf("after the keys:\n%s", v)
	}
	// Seeking stays within the recording.
	f.at = 95 * time.Second
	press(m, keyRight)
	f.at = 4 * time.Second
	press(m, keyLeft)
	if got := strings.Join(f.calls[7:], "|"); got != "seek 1m40s|seek 0s" {
		t.Fatalf("seeks at the edges: %s", got)
	}
	// The Matrix view: ← seeks, h moves the column.
	for m.screen != len(screens)-1 {
		press(m, tea.KeyMsg{Type: tea.KeyTab})
	}
	f.calls = nil
	press(m, keyLeft)
	if len(f.calls) != 1 || f.calls[0] != "seek 0s" {
		t.Fatalf("← on the Matrix view: %v", f.calls)
	}
	press(m, typed("?"))
	if v := m.View(); !strings.Contains(v, "seek 10 s") || !strings.Contains(v, "h/l to whom") {
		t.Fatalf("help:\n%s", v)
	}
}

// A live feed has no playback: no replay keys in the footer, the session
// clock in the header, and space does nothing.
func TestLiveFeedHasNoReplayKeys(t *testing.T) {
	f := newStaticFeed()
	m := model(t, f, 120, 40, fixtureUpdates()[:31])
	press(m, keySpace)
	v := m.View()
	if m.playback != nil || strings.Contains(v, "play/pause") || !strings.Contains(v, "t 00:30") || len(f.Controls()) != 0 {
		t.Fatalf("live view:\n%s", v)
	}
}

// A replay sought back hands out every event from its start again (as
// probe/record's replay does): the picture starts over, so the message list shows
// each message once, as a straight play to that point would.
func TestReplaySeekBackStartsOver(t *testing.T) {
	f := &fakeReplay{staticFeed: newStaticFeed(), end: 100 * time.Second, playing: true, speed: 1}
	ups := fixtureUpdates()
	m := model(t, f, 120, 40, ups[:40])
	msgs := func() []string {
		var out []string
		for _, x := range m.live.msgs {
			out = append(out, x.text)
		}
		return out
	}
	before := msgs()
	// Back to 20 s: the events of 0–20 s again, with the picture at 20 s.
	back := feed.Update{View: ups[20].View}
	for _, u := range ups[:21] {
		back.Events = append(back.Events, u.Events...)
	}
	press(m, updateMsg{back})
	after := msgs()
	if len(before) <= len(after) || len(after) == 0 || m.live.view.At != 20*time.Second {
		t.Fatalf("messages before %v, after the seek back %v", before, after)
	}
	straight := model(t, newStaticFeed(), 120, 40, ups[:21])
	var want []string
	for _, x := range straight.live.msgs {
		want = append(want, x.text)
	}
	if strings.Join(after, "|") != strings.Join(want, "|") {
		t.Fatalf("after the seek back %v, a straight play shows %v", after, want)
	}
}
