package ui

import (
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lagscope/lagscope/probe/feed"
)

// The bridge from the engine's feed to the model.

// FeedUpdates is how many of the feed's updates msg carries to the model,
// 0 for any other message: a program that wraps the model (a script that
// drives it) counts by it what the model has taken in.
func FeedUpdates(msg tea.Msg) int {
	switch msg := msg.(type) {
	case updateMsg:
		return 1
	case updatesMsg:
		return len(msg)
	}
	return 0
}

// maxBatch is the most updates one message carries.
const maxBatch = 64

// waitFeed is the bridge from engine to UI: a command that waits for the
// next update (or for the program to end, so it never outlives it). The
// updates already waiting behind it come in the same message, up to
// maxBatch: the model takes each in, and the screen is drawn once for all
// of them rather than once for each (a replay played fast, or a feed that
// got ahead of a busy terminal, hands out many at a time).
func (m *tuiModel) waitFeed() tea.Cmd {
	ch, stop := m.fd.Updates(), m.stop
	return func() tea.Msg {
		var us updatesMsg
		select {
		case u, ok := <-ch:
			if !ok {
				return feedClosedMsg{}
			}
			us = append(us, u)
		case <-stop:
			return nil
		}
		for len(us) < maxBatch && !us[len(us)-1].Done {
			u, ok, waiting := nextWaiting(ch)
			if !ok || !waiting {
				break // a closed feed is the next wait's to find
			}
			us = append(us, u)
		}
		if len(us) == 1 {
			return updateMsg{us[0]}
		}
		return us
	}
}

// nextWaiting is the update waiting in ch, if one is (waiting), without waiting
// for one; ok is false when ch is closed.
func nextWaiting(ch <-chan feed.Update) (u feed.Update, ok, waiting bool) {
	select {
	case u, ok = <-ch:
		return u, ok, true
	default:
		return feed.Update{}, true, false
	}
}

// takeUpdates takes in us, in order, and waits for the next ones unless
// one of them ends the feed. The bell rings once for them all, however
// many alerts they brought.
func (m *tuiModel) takeUpdates(us ...feed.Update) tea.Cmd {
	alerts := m.live.alerts
	done := false
	for _, u := range us {
		if m.playback != nil && m.live.have && u.View.At < m.live.view.At {
			// A replay sought back: it hands out every event from the
			// start again, and the picture starts over with them.
			m.live = newSession()
		}
		m.live.apply(u)
		m.loadSettle()
		if u.Done {
			done = true
			break
		}
	}
	if !m.paused {
		m.dirty = true
	}
	var bell tea.Cmd
	if m.bellOn && m.live.alerts > alerts {
		bell = m.ring()
	}
	if done {
		return tea.Batch(bell, m.ended())
	}
	return tea.Batch(bell, m.waitFeed())
}
