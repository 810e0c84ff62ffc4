package record

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// A replay knows where its incidents start: the times of their open lines,
// in order, whatever their updates and closes; a recording without any
// has none.
func TestPlayerIncidentTimes(t *testing.T) {
	var buf bytes.Buffer
	w, _ := newWriter(&buf, Header{}, time.Now)
	line := func(ms int, id int, phase vocab.IncidentPhase) {
		at := time.Duration(ms) * time.Millisecond
		tms := float64(ms)
		inc := feed.Incident{ID: id, Phase: phase, OpenedMs: 1000, Cause: vocab.CauseLatency, RungFrom: 1, RungPeak: 1, Text: "x"}
		if phase == vocab.IncidentClose {
			f := ms / 33
			inc.ClosedMs, inc.ClosedFrame = &tms, &f
		}
		w.event(at, "alice", &feed.IncidentEvent{Header: feed.Header{Type: vocab.EventIncident, Frame: ms / 33, TMs: &tms}, Incident: inc})
	}
	for ms := 0; ms <= 20000; ms += 1000 {
		w.View(feed.View{At: time.Duration(ms) * time.Millisecond, Self: "alice"})
	}
	line(3000, 1, vocab.IncidentOpen)
	line(4000, 1, vocab.IncidentUpdate)
	line(9000, 1, vocab.IncidentClose)
	line(12500, 2, vocab.IncidentOpen)
	line(15000, 2, vocab.IncidentClose)
	w.Close()
	rec, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stop != nil {
		t.Fatalf("the recording stops: %v", rec.Stop)
	}
	got := newPlayer(rec, "", 1).IncidentTimes()
	if want := []time.Duration{3 * time.Second, 12500 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("incident times %v, want %v", got, want)
	}
	if got := newPlayer(timeline(t), "", 1).IncidentTimes(); len(got) != 0 {
		t.Fatalf("a recording without incidents has times %v", got)
	}
}
