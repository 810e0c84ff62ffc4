package ui

import (
	"os"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"go.uber.org/goleak"
)

// TestMain pins the default renderer to plain ASCII, so golden files hold
// text and no escape codes whatever terminal runs the tests, and checks
// that no test leaves a goroutine behind. teatest parks one goroutine per
// program on a signal channel for the life of the process; it is not ours.
func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Unsetenv("NO_COLOR")
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"))
}
