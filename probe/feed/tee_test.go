package feed

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/lagscope/lagscope/vocab"
	"strings"
	"testing"
)

// chanFeed is a Feed a test writes to.
type chanFeed struct {
	ch       chan Update
	controls []Control
}

func (f *chanFeed) Updates() <-chan Update { return f.ch }
func (f *chanFeed) Control(c Control)      { f.controls = append(f.controls, c) }

func msg(text string) Event {
	return &MessageEvent{Header: Header{Type: vocab.EventMessage}, Text: text}
}

// Every sink sees every update in order; a reader that does not keep up
// loses Views, never Events, and always gets the last update.
func TestTeeFeedRules(t *testing.T) {
	src := &chanFeed{ch: make(chan Update)}
	var seen []string
	sink := UpdateSinkFunc(func(u Update) error {
		for _, e := range u.Events {
			seen = append(seen, e.(*MessageEvent).Text)
		}
		return nil
	})
	teed := Tee(src, sink)
	const n = 200
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range n {
			src.ch <- Update{View: View{Frame: i}, Events: []Event{msg(strings.Repeat("x", i%7))}}
		}
		src.ch <- Update{View: View{Frame: n}, Events: []Event{msg("last")}, Done: true}
		close(src.ch)
	}()
	// A slow reader: it takes its first update only after all are sent.
	<-sent
	var got []string
	var views []int
	var last Update
	for u := range teed.Updates() {
		for _, e := range u.Events {
			got = append(got, e.(*MessageEvent).Text)
		}
		views = append(views, u.View.Frame)
		last = u
	}
	if len(got) != n+1 || got[n] != "last" || len(seen) != n+1 {
		t.Fatalf("reader got %d events, sink %d; want %d", len(got), len(seen), n+1)
	}
	for i := range n {
		if got[i] != seen[i] || got[i] != strings.Repeat("x", i%7) {
			t.Fatalf("event %d out of order", i)
		}
	}
	if !last.Done || last.View.Frame != n {
		t.Fatalf("last update %+v", last.View)
	}
	if len(views) > n {
		t.Fatalf("%d views for %d updates", len(views), n+1)
	}
	teed.Control(Control{Speed: 60})
	if len(src.controls) != 1 || src.controls[0].Speed != 60 {
		t.Fatal("control did not reach the source")
	}
	if teed.Err() != nil {
		t.Fatal(teed.Err())
	}
}

// A failing sink is dropped and reported; the others and the reader carry on.
func TestTeeSinkError(t *testing.T) {
	src := &chanFeed{ch: make(chan Update, 3)}
	boom := errors.New("disk full")
	calls := 0
	bad := UpdateSinkFunc(func(Update) error { calls++; return boom })
	var good int
	teed := Tee(src, bad, UpdateSinkFunc(func(Update) error { good++; return nil }))
	src.ch <- Update{}
	src.ch <- Update{}
	src.ch <- Update{Done: true}
	close(src.ch)
	for range teed.Updates() {
	}
	if calls != 1 || good != 3 || !errors.Is(teed.Err(), boom) {
		t.Fatalf("bad sink called %d times, good %d, err %v", calls, good, teed.Err())
	}
}

// The NDJSON writer prints each event as one JSON object per line, in order.
func TestNDJSONWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewNDJSONWriter(&buf)
	tms := 12.5
	rtt := 80.25
	err := w.Write(Update{Events: []Event{
		&ReportEvent{Header: Header{Type: vocab.EventReport, Frame: 38, TMs: &tms}, Player: "bob", RTTMs: &rtt},
		&ReportEvent{Header: Header{Type: vocab.EventReport, Frame: 38}, Player: "eve"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", buf.String())
	}
	want := `{"type":"report","frame":38,"t_ms":12.5,"player":"bob","rtt_ms":80.25,"wait_ms":0,"process_ms":0}`
	if lines[0] != want {
		t.Fatalf("line\n%s\nwant\n%s", lines[0], want)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil || m["rtt_ms"] != nil {
		t.Fatalf("a report without a round trip must print null (L3, S6): %s", lines[1])
	}
	if _, ok := m["t_ms"]; ok {
		t.Fatal("t_ms printed for an event without one")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestNDJSONWriterKeepsItsError(t *testing.T) {
	w := NewNDJSONWriter(failWriter{})
	u := Update{Events: []Event{msg("a")}}
	if w.Write(u) == nil || w.Write(u) == nil {
		t.Fatal("write error lost")
	}
}
