package ui

import (
	"io"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
)

// batchModel is a model on a feed holding us, nothing read yet.
func batchModel(t *testing.T, us ...feed.Update) (*tuiModel, *staticFeed) {
	t.Helper()
	fd := newStaticFeed(us...)
	m, err := newModel(fd, Options{NoColor: true, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fd.Close()
		close(m.stop)
	})
	return m, fd
}

// batchOf is the updates one wait for the feed hands the model.
func batchOf(t *testing.T, m *tuiModel) []feed.Update {
	t.Helper()
	switch msg := m.waitFeed()().(type) {
	case updateMsg:
		return []feed.Update{msg.u}
	case updatesMsg:
		return msg
	default:
		t.Fatalf("the wait for the feed gave %T", msg)
	}
	return nil
}

// The updates waiting in the feed come to the model in one message, in
// order, maxBatch at a time while that many wait, and the model takes in
// every one of them: its picture is the last one's, and its message list
// holds every update's events.
func TestWaitingUpdatesComeTogether(t *testing.T) {
	us := fixtureUpdates()
	if len(us) <= maxBatch {
		t.Fatalf("the fixture has %d updates; the test wants more than %d", len(us), maxBatch)
	}
	m, _ := batchModel(t, us...)
	var got []feed.Update
	for len(got) < len(us) {
		b := batchOf(t, m)
		if want := min(maxBatch, len(us)-len(got)); len(b) != want {
			t.Fatalf("with %d updates waiting one message carried %d, want %d", len(us)-len(got), len(b), want)
		}
		m.Update(updatesMsg(b))
		got = append(got, b...)
	}
	if len(got) != len(us) {
		t.Fatalf("%d updates came, %d were sent", len(got), len(us))
	}
	for i := range us {
		if got[i].View.At != us[i].View.At {
			t.Fatalf("update %d is at %v, want %v: out of order", i, got[i].View.At, us[i].View.At)
		}
	}
	if m.live.view.At != us[len(us)-1].View.At {
		t.Fatalf("the model shows %v, the last update is at %v", m.live.view.At, us[len(us)-1].View.At)
	}
	one, _ := batchModel(t, us...)
	for range us {
		one.Update(updateMsg{<-one.fd.Updates()})
	}
	if len(m.live.msgs) == 0 || len(m.live.msgs) != len(one.live.msgs) {
		t.Fatalf("taken in batches the message list has %d lines, one update at a time %d", len(m.live.msgs), len(one.live.msgs))
	}
}

// A batch ends with the update that ends the feed: nothing after it is
// read, and the model takes the end.
func TestBatchEndsAtTheFeedsEnd(t *testing.T) {
	us := fixtureUpdates()[:5]
	us[2].Done = true
	m, _ := batchModel(t, us...)
	b := batchOf(t, m)
	if len(b) != 3 || !b[2].Done {
		t.Fatalf("the batch has %d updates (the last done: %v), want the 3 up to the end", len(b), len(b) > 0 && b[len(b)-1].Done)
	}
	m.Update(updatesMsg(b))
	if !m.feedDone || !m.live.done {
		t.Fatalf("after the end: feedDone %v, live.done %v", m.feedDone, m.live.done)
	}
}
