package feed

import (
	"bytes"
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"testing"

	"github.com/lagscope/lagscope/rungs"
)

// A message keeps its kind through the NDJSON bytes without a field of its
// own: the line is what it always was, and reading it back gives the kind
// the peer set (T11 bad links, desyncs, S18 tier lines).
func TestMessageKindSurvivesNDJSON_T11_S18(t *testing.T) {
	tier := TierMessage(rungs.Timing{SendPeriod: 2, LookAhead: 6}, rungs.Timing{SendPeriod: 6, LookAhead: 18})
	if tier == nil {
		t.Fatal("a tier change gave no message")
	}
	for _, c := range []struct {
		e       *MessageEvent
		line    string
		subject string
		alarm   bool
	}{
		{LinkMessage(7, "alice", "bob", true), `{"type":"message","frame":7,"text":"Connection to bob has gone bad","player":"alice"}`, "bob", true},
		{LinkMessage(9, "alice", "bob", false), `{"type":"message","frame":9,"text":"Connection to bob recovered","player":"alice"}`, "bob", false},
		{DesyncMessage(40, "carol", "dave", 33), `{"type":"message","frame":40,"text":"Desync with dave at frame 33","player":"carol"}`, "dave", true},
		{tier, `{"type":"message","frame":0,"text":"Connection quality target: ` + tier.Subject + `"}`, tier.Subject, false},
	} {
		b, err := json.Marshal(c.e)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.line {
			t.Errorf("line %s, want %s", b, c.line)
		}
		var back MessageEvent
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Kind != c.e.Kind || back.Subject != c.subject || back.Kind.Alarm() != c.alarm || back.Text != c.e.Text {
			t.Errorf("%s read back as kind %d subject %q, want %d %q", b, back.Kind, back.Subject, c.e.Kind, c.subject)
		}
	}
}

// Lines that only look like alarms are notes: a lobby line naming a
// player "bad", a tier line from one machine, a desync without a frame.
func TestMessageKindIsNotATextSearch(t *testing.T) {
	for _, c := range []struct {
		text, player string
	}{
		{"badger joined (2 of 4 players seated)", "alice"},
		{"Connection to  has gone bad", "alice"},
		{"Connection to bob has gone bad", ""},
		{"Connection quality target: Fast", "alice"},
		{"Desync with bob at frame x", "alice"},
		{"Demo: the link between bob and carol is back to normal", "you"},
	} {
		b, _ := json.Marshal(&MessageEvent{Header: Header{Type: vocab.EventMessage}, Text: c.text, Player: c.player})
		var e MessageEvent
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind != MessageNote {
			t.Errorf("%q from %q read as kind %d", c.text, c.player, e.Kind)
		}
	}
}

// FuzzMessageEvent: any bytes decode or fail without a panic, and a
// decoded message's kind is a function of its line (encoding it again and
// decoding gives the same kind and subject).
func FuzzMessageEvent(f *testing.F) {
	f.Add([]byte(`{"type":"message","frame":7,"text":"Connection to bob has gone bad","player":"alice"}`))
	f.Add([]byte(`{"type":"message","text":"Desync with a at frame 1","player":"b"}`))
	f.Add([]byte(`{"type":"message","text":"Connection quality target: Fast"}`))
	f.Add([]byte(`{"text":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e MessageEvent
		if json.Unmarshal(b, &e) != nil {
			return
		}
		again, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		var e2 MessageEvent
		if err := json.Unmarshal(again, &e2); err != nil {
			t.Fatalf("%s does not decode: %v", again, err)
		}
		if e2.Kind != e.Kind || e2.Subject != e.Subject || bytes.Contains(again, []byte(`"Kind"`)) {
			t.Fatalf("%s: kind %d %q, then %d %q", again, e.Kind, e.Subject, e2.Kind, e2.Subject)
		}
	})
}

// A loss line reads back as one in its wording now and in the wording of
// recordings made when it said datagrams.
func TestLossLineReadsBackInBothWordings(t *testing.T) {
	now := LossMessage(3, "alice", "bob", LossText("bob", 0.071, -1, 10e9))
	for _, line := range []string{
		`{"type":"message","frame":3,"text":"` + now.Text + `","player":"alice"}`,
		`{"type":"message","frame":3,"text":"Connection to bob is losing datagrams: 7.1% from bob in the last 10s","player":"alice"}`,
	} {
		var back MessageEvent
		if err := json.Unmarshal([]byte(line), &back); err != nil {
			t.Fatal(err)
		}
		if back.Kind != MessageLinkLoss || back.Subject != "bob" {
			t.Errorf("%s read back as kind %d subject %q, want a loss line about bob", line, back.Kind, back.Subject)
		}
	}
	if want := "Connection to bob is losing packets: 7.1% from bob in the last 10s"; now.Text != want {
		t.Errorf("loss line %q, want %q", now.Text, want)
	}
}
