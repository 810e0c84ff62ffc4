package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/ui"
	"github.com/lagscope/lagscope/vocab"
)

// The demo's message list tells each event once: three minutes of the
// demo as `go run .` plays it, its whole message list read off the
// Messages view. An alert adds no line — the tier alert marks the tier
// line, the loss alert the loss line — ada's incident has one line when it
// opens (with its newest sentence) and one when it closes, and every other
// line is one message.
func TestDemoMessageListHasOneLinePerEvent(t *testing.T) {
	updates := playDemo(t, 3*time.Minute, 100*time.Millisecond)
	var msgs, members, opens, closes []string
	alerts := 0
	last := map[int]string{} // an incident's newest sentence
	for _, u := range updates {
		for _, e := range u.Events {
			switch e := e.(type) {
			case *feed.MessageEvent:
				msgs = append(msgs, e.Text)
			case *feed.MasterEvent, *feed.RemovedEvent:
				members = append(members, string(feed.Head(e).Type))
			case *feed.AlertEvent:
				alerts++
			case *feed.IncidentEvent:
				switch e.Phase {
				case vocab.IncidentOpen:
					opens = append(opens, "")
					last[e.ID] = e.Text
				case vocab.IncidentUpdate:
					last[e.ID] = e.Text
				case vocab.IncidentClose:
					closes = append(closes, e.Text)
				}
			}
		}
	}
	if alerts < 2 || len(opens) == 0 || len(closes) == 0 {
		t.Fatalf("the demo gave %d alerts, %d incidents opened, %d closed: not the episodes this test counts", alerts, len(opens), len(closes))
	}

	m, err := ui.NewModel(newQueuedFeed(updates), ui.Options{NoColor: true, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	// A screen tall enough for the whole list.
	c := &viewShots{m: m, updates: len(updates), shots: map[string]string{}, ready: func(string) bool { return true },
		steps: []shotStep{{"Messages", []tea.Msg{keyTab, keyTab, keyTab}}}}
	if !runHeadless(t, c, 200, 80, 60*time.Second) {
		t.Fatalf("the UI took %d of %d updates", c.seen, c.updates)
	}
	scr := c.shots["Messages"]
	stamp := regexp.MustCompile(`^(\d\d:\d\d|lobby)  (ALERT )?(.*?)\s*$`)
	var lines []string
	marked := 0
	in := false
	for _, l := range strings.Split(scr, "\n") {
		if strings.HasPrefix(l, "── Messages") {
			in = true
			continue
		}
		if m := stamp.FindStringSubmatch(l); in && m != nil {
			lines = append(lines, m[3])
			if m[2] != "" {
				marked++
			}
		}
	}
	count := func(text string) int {
		n := 0
		for _, l := range lines {
			if l == text {
				n++
			}
		}
		return n
	}
	for _, text := range msgs {
		if n := count(text); n != 1 {
			t.Errorf("the message %q is on %d lines, want 1", text, n)
		}
	}
	for _, text := range closes {
		if n := count(text); n != 1 {
			t.Errorf("the incident's close %q is on %d lines, want 1", text, n)
		}
	}
	for id, text := range last {
		if n := count(text); n != 1 {
			t.Errorf("incident %d's line %q is on %d lines, want 1", id, text, n)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "worsened from") {
			t.Errorf("a tier alert has a line of its own: %q", l)
		}
	}
	want := len(msgs) + len(members) + len(opens) + len(closes)
	t.Logf("%d lines: %d messages, %d master and removal lines, %d incidents opened and %d closed; %d alerts mark %d of them",
		len(lines), len(msgs), len(members), len(opens), len(closes), alerts, marked)
	if len(lines) != want {
		t.Errorf("%d lines for %d events that have one (and %d alerts that add none):\n%s", len(lines), want, alerts, scr)
	}
	if marked != alerts {
		t.Errorf("%d lines marked ALERT for %d alerts", marked, alerts)
	}
}
