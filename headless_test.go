package main

import (
	"io"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// runHeadless runs m in a real bubbletea program with no terminal (no
// input, the output discarded) at w×h until it quits, and reports false
// when it had not quit after limit: then the program is killed and its
// end waited for, so the caller may read m's state to say why. A program
// that ends in error fails the test.
func runHeadless(t *testing.T, m tea.Model, w, h int, limit time.Duration) bool {
	t.Helper()
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignalHandler())
	go p.Send(tea.WindowSizeMsg{Width: w, Height: h})
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		return true
	case <-time.After(limit):
		p.Kill()
		<-done
		return false
	}
}
