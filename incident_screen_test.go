package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// The demo as `go run .` runs it, in virtual time, on an 80×24 screen:
// from the second ada's incident opens until it closes, the verdict's
// first sentence on screen names ada, every second.
func TestDemoScreenNamesAdaWhileItsIncidentIsOpen(t *testing.T) {
	const length = 50 * time.Second
	updates := playDemo(t, length, 100*time.Millisecond)
	var open, closed time.Duration = -1, -1
	for _, u := range updates {
		for _, e := range u.Events {
			inc, ok := e.(*feed.IncidentEvent)
			if !ok || inc.Player == nil || *inc.Player != "ada" {
				continue
			}
			switch inc.Phase {
			case vocab.IncidentOpen:
				if open < 0 {
					open = u.View.Game
				}
			case vocab.IncidentClose:
				closed = u.View.Game
			}
		}
	}
	if open < 0 || closed < 0 {
		t.Fatalf("ada's incident: opened at %v, closed at %v (want both within %v)", open, closed, length)
	}
	byClock := map[string]string{}
	for _, scr := range screens(t, updates, screenW, screenH) { // verdict_screen_test.go
		byClock[clockIn(scr)] = scr
	}
	checked := 0
	for s := open.Truncate(time.Second) + time.Second; s < closed; s += time.Second {
		scr, ok := byClock[clockOf(s)]
		if !ok {
			t.Errorf("no screen at %s", clockOf(s))
			continue
		}
		v := verdictOnScreen(scr)
		first := v
		if i := strings.Index(v, ". "); i >= 0 {
			first = v[:i+1]
		}
		if !strings.Contains(first, "ada") {
			t.Errorf("at %s the verdict's first sentence does not name ada: %q\n%s", clockOf(s), first, scr)
		}
		checked++
	}
	t.Logf("ada's incident open on screen from %v to %v; %d screens checked", open, closed, checked)
	if checked < 10 {
		t.Errorf("only %d screens checked", checked)
	}
}

// verdictOnScreen is the verdict's lines of a screen (between the header
// and the players' table), joined.
func verdictOnScreen(scr string) string {
	lines := strings.Split(scr, "\n")
	var v []string
	for _, l := range lines[min(2, len(lines)):] {
		if strings.HasPrefix(strings.TrimSpace(l), "PLAYER") {
			break
		}
		v = append(v, strings.TrimSpace(l))
	}
	return strings.Join(v, " ")
}

var countdownRe = regexp.MustCompile(`steps back down .*? in (a few seconds|about (\d+) s|about (\d+) min)`)

// The step-down countdown, as the verdict words it every second at the
// frame shown (the UI's way), never rises from one second to the next
// unless an evaluation changed the plan in that second — and then the
// verdict says why ("That is later than the match's last timing check said …").
func TestDemoCountdownNeverRisesUnexplained(t *testing.T) {
	updates := playDemo(t, 3*time.Minute, time.Second)
	prev, seen := -1.0, 0
	var d *diagnosis.Diagnosis
	for _, u := range updates {
		evaluated := false
		for _, e := range u.Events {
			if _, ok := e.(*feed.DiagnosisEvent); ok {
				evaluated = true
			}
		}
		v := u.View
		if v.Diagnosis == nil {
			continue
		}
		if v.Diagnosis != d {
			d = v.Diagnosis
		}
		text := strings.Join(d.Sentences(diagnosis.Timings{Target: v.Target, InForce: v.InForce, Frame: v.Frame, FPS: v.FPS}), " ")
		m := countdownRe.FindStringSubmatch(text)
		if m == nil {
			prev = -1
			continue
		}
		secs := 5.0
		switch {
		case m[2] != "":
			secs, _ = strconv.ParseFloat(m[2], 64)
		case m[3] != "":
			secs, _ = strconv.ParseFloat(m[3], 64)
			secs *= 60
		}
		seen++
		if prev >= 0 && secs > prev && !(evaluated && strings.Contains(text, "That is later than the match's last timing check said")) {
			t.Errorf("at %v the countdown rose from %.0f s to %.0f s (an evaluation in this second: %v): %q", v.At, prev, secs, evaluated, text)
		}
		prev = secs
	}
	t.Logf("%d seconds with a countdown", seen)
	if seen == 0 {
		t.Error("no verdict ever counted down")
	}
}
