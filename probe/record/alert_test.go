package record

import (
	"bytes"
	"errors"
	"github.com/lagscope/lagscope/vocab"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// An alert is recorded and read back as the typed event, not as bytes of
// an unknown type.
func TestAlertRoundTrip(t *testing.T) {
	from, to := "alice", "bob"
	alerts := []feed.Event{
		&feed.AlertEvent{Header: feed.Header{Type: vocab.EventAlert, Frame: 306}, Player: "alice", Kind: feed.AlertBad, From: &from, To: &to, Text: "Connection to bob has gone bad"},
		&feed.AlertEvent{Header: feed.Header{Type: vocab.EventAlert, Frame: 316}, Player: "alice", Kind: feed.AlertLoss, From: &from, To: &to,
			Text: "Connection to bob is losing datagrams: 7.1% from bob in the last 10s"},
		&feed.AlertEvent{Header: feed.Header{Type: vocab.EventAlert, Frame: 1029}, Player: "carol", Kind: feed.AlertTier,
			Text: "Connection quality target worsened from Fast to Normal"},
	}
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "test", Session: "s1", Virtual: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range alerts {
		if err := w.event(time.Duration(i)*time.Second, "alice", e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil {
		t.Fatalf("read: %v %v", err, rec.Stop)
	}
	var got []feed.Event
	for _, r := range rec.Records {
		if r.Kind == KindEvent {
			got = append(got, r.Event)
		}
	}
	if !reflect.DeepEqual(got, alerts) {
		t.Fatalf("read back %+v\nwant %+v", got, alerts)
	}
}

// An alert no writer writes is damage, with one clean line saying why.
func TestImplausibleAlertIsDamage(t *testing.T) {
	good := `{"at_ns":0,"from":"alice","event":{"type":"master","frame":0,"player":"alice"}}`
	for _, c := range []struct{ name, body, want string }{
		{"unknown kind", `{"at_ns":1,"event":{"type":"alert","frame":3,"player":"alice","kind":"b\u001bd","from":null,"to":null,"text":"x"}}`, `alert kind "b\x1bd"`},
		{"link alert without link", `{"at_ns":1,"event":{"type":"alert","frame":3,"player":"alice","kind":"bad","from":null,"to":null,"text":"x"}}`, "bad alert without its link"},
		{"tier alert on a link", `{"at_ns":1,"event":{"type":"alert","frame":3,"player":"alice","kind":"tier","from":"alice","to":"bob","text":"x"}}`, "tier alert on a link"},
		{"bad name", `{"at_ns":1,"event":{"type":"alert","frame":3,"player":"alice","kind":"loss","from":"alice","to":"b\u202eob","text":"x"}}`, "U+202E"},
		{"no player", `{"at_ns":1,"event":{"type":"alert","frame":3,"kind":"tier","from":null,"to":null,"text":"x"}}`, "empty"},
		{"escape in text", `{"at_ns":1,"event":{"type":"alert","frame":3,"player":"alice","kind":"tier","from":null,"to":null,"text":"\u001b[2J"}}`, "text"},
	} {
		var b []byte
		b = append(b, headerLine(feed.ProtocolVersion)...)
		b = appendLine(b, KindEvent, []byte(good))
		bad := len(b)
		b = appendLine(b, KindEvent, []byte(c.body))
		rec, err := readAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch s := rec.Stop; {
		case s == nil:
			t.Errorf("%s: read without a word", c.name)
		case !errors.Is(s, errCorrupt) || s.Offset != int64(bad):
			t.Errorf("%s: stop %v, want damage at byte %d", c.name, s, bad)
		case !strings.Contains(s.Error(), c.want) || strings.ContainsAny(s.Error(), "\n\x1b"):
			t.Errorf("%s: %q, want one clean line with %q", c.name, s.Error(), c.want)
		}
	}
}
