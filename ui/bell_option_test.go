package ui

import (
	"io"
	"testing"
)

// Options.Bell is where the bell starts (the config file's alerts.bell);
// b still toggles it.
func TestBellOptionStartsTheBell(t *testing.T) {
	for _, start := range []bool{false, true} {
		fd := newStaticFeed(fixtureUpdates()...)
		m, err := newModel(fd, Options{NoColor: true, Output: io.Discard, Bell: start})
		if err != nil {
			t.Fatal(err)
		}
		if m.bellOn != start {
			t.Fatalf("Bell %v: bell on %v", start, m.bellOn)
		}
		m.Update(typed("b"))
		if m.bellOn == start {
			t.Fatalf("Bell %v: b did not toggle it", start)
		}
		fd.Close()
	}
}
