package record

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
)

func headerLine(protocol int) []byte {
	return appendLine(nil, kindHeader, []byte(fmt.Sprintf(`{"magic":%q,"format":%d,"protocol":%d}`, magic, format, protocol)))
}

// S19: a recording of another protocol version is
// refused with one line naming both versions, not read without a word.
func TestOtherProtocolRefused_S19(t *testing.T) {
	for _, p := range []int{0, feed.ProtocolVersion + 1, 99, -1} {
		_, err := readAll(bytes.NewReader(headerLine(p)))
		if !errors.Is(err, ErrVersion) {
			t.Fatalf("protocol %d: err %v, want ErrVersion", p, err)
		}
		want := fmt.Sprintf("protocol %d, this build reads protocols %d to %d", p, oldestProtocol, feed.ProtocolVersion)
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("protocol %d: %q, want one line with %q", p, err, want)
		}
	}
	for p := oldestProtocol; p <= feed.ProtocolVersion; p++ {
		if _, err := readAll(bytes.NewReader(headerLine(p))); err != nil {
			t.Fatalf("protocol %d, which this build reads: %v", p, err)
		}
	}
}

// Header text is printed by report and replay: control characters in it
// make the file not a recording lagscope wrote.
func TestHeaderWithControlCharactersRefused(t *testing.T) {
	for _, body := range []string{
		`{"magic":%q,"format":1,"protocol":1,"session":"\u001b]0;pwned\u0007"}`,
		`{"magic":%q,"format":1,"protocol":1,"program":"x\u009by"}`,
		`{"magic":%q,"format":1,"protocol":1,"self":"\u3164"}`,
	} {
		line := appendLine(nil, kindHeader, []byte(fmt.Sprintf(body, magic)))
		if _, err := readAll(bytes.NewReader(line)); !errors.Is(err, ErrNotRecording) {
			t.Errorf("%s: err %v, want ErrNotRecording", body, err)
		}
	}
}

// A record with a good checksum but an
// impossible value is damage. The reader stops there with the record's
// place and the field, returns every record before it, and never returns
// the bad one, so no replay or report acts on it or prints it.
func TestImpossibleValuesAreDamage_S19(t *testing.T) {
	good := `{"at_ns":0,"from":"alice","event":{"type":"master","frame":0,"player":"alice"}}`
	timing := func(sp, la, rung int, tier string, fps int) string {
		return fmt.Sprintf(`{"at_ns":1,"from":"alice","event":{"type":"timing","frame":70,"decided":64,"send_period":%d,"look_ahead":%d,"rung":%d,"tier":%q,"fps":%d,"reason":"initial"}}`, sp, la, rung, tier, fps)
	}
	cases := []struct {
		name string
		kind Kind
		body string
		want string // in the StopError's detail
	}{
		{"negative time", KindEvent, `{"at_ns":-1,"from":"alice","event":{"type":"master","frame":0,"player":"alice"}}`, "time -1 ns"},
		{"time MaxInt64", KindEvent, fmt.Sprintf(`{"at_ns":%d,"from":"alice","event":{"type":"master","frame":0,"player":"alice"}}`, int64(math.MaxInt64)), "time 9223372036854775807 ns"},
		{"send period 0", KindEvent, timing(0, 6, 1, "Fast", 30), "timing 0/6"},
		{"send period 11", KindEvent, timing(11, 33, 10, "Bad", 30), "timing 11/33"},
		{"look-ahead 251", KindEvent, timing(10, 251, 10, "Bad", 30), "timing 10/251"},
		{"look-ahead below send period", KindEvent, timing(10, 5, 10, "Bad", 30), "timing 10/5"},
		{"look-ahead not whole send periods", KindEvent, timing(3, 7, 3, "Normal", 30), "timing 3/7"},
		{"extended look-ahead not whole send periods", KindEvent, timing(3, 10, 3, "Bad", 30), "timing 3/10"},
		{"look-ahead below the rung's", KindEvent, timing(1, 1, 1, "Fast", 30), "timing 1/1"},
		{"look-ahead below the rung's, no tier", KindEvent, timing(5, 10, 5, "—", 30), "timing 5/10"},
		{"timing 0/0", KindEvent, timing(0, 0, 1, "Fast", 30), "timing 0/0"},
		{"in force past 250 as a target", KindEvent, timing(9, 252, 9, "Bad", 30), "timing 9/252"},
		{"active not whole send periods", KindEvent, `{"at_ns":1,"event":{"type":"timing_active","frame":0,"send_period":3,"look_ahead":7,"rung":3,"tier":"Normal","fps":30}}`, "timing 3/7"},
		{"active past any staging", KindEvent, `{"at_ns":1,"event":{"type":"timing_active","frame":0,"send_period":10,"look_ahead":280,"rung":10,"tier":"Bad","fps":30}}`, "timing 10/280"},
		{"rung 99", KindEvent, timing(2, 6, 99, "Fast", 30), "rung 99"},
		{"rung 0", KindEvent, timing(2, 6, 0, "Fast", 30), "rung 0"},
		{"wrong tier", KindEvent, timing(2, 6, 2, "Bad", 30), `tier "Bad"`},
		{"fps 0", KindEvent, timing(2, 6, 2, "Fast", 0), "fps 0"},
		{"fps negative", KindEvent, timing(2, 6, 2, "Fast", -30), "fps -30"},
		{"active send period 0", KindEvent, `{"at_ns":1,"event":{"type":"timing_active","frame":0,"send_period":0,"look_ahead":6,"rung":2,"tier":"Fast","fps":30}}`, "timing 0/6"},
		{"escape in message", KindEvent, `{"at_ns":1,"event":{"type":"message","frame":3,"text":"\u001b[2J\u001b]0;pwned\u0007"}}`, "text"},
		{"escape in a name", KindEvent, `{"at_ns":1,"event":{"type":"master","frame":3,"player":"\u001b[2J"}}`, "control character U+001B"},
		{"look-alike filler name", KindEvent, `{"at_ns":1,"event":{"type":"removed","frame":3,"player":"\u3164"}}`, "U+3164"},
		{"escape in from", KindEvent, `{"at_ns":1,"from":"a\u001bb","event":{"type":"master","frame":3,"player":"alice"}}`, "from"},
		{"negative frame", KindEvent, `{"at_ns":1,"event":{"type":"master","frame":-5,"player":"alice"}}`, "frame -5"},
		{"negative wait", KindEvent, `{"at_ns":1,"event":{"type":"stall","frame":5,"player":"bob","wait_ms":-1}}`, "wait_ms -1"},
		{"absurd rtt", KindEvent, `{"at_ns":1,"event":{"type":"report","frame":32,"player":"bob","rtt_ms":1e300,"wait_ms":0,"process_ms":0}}`, "rtt_ms 1e+300"},
		{"missing beyond expected", KindEvent, `{"at_ns":1,"from":"alice","event":{"type":"link","frame":90,"from":"alice","to":"bob","state":"measured","expected":3,"missing":1601}}`, "missing 1601 of 3"},
		{"summary name", KindEvent, `{"at_ns":1,"event":{"type":"summary","frame":9,"links":[],"players":[{"player":"","frames":1}]}}`, "empty"},
		{"view target 3/7 started", KindView, `{"at_ns":1,"from":"alice","view":{"Self":"alice","Started":true,"FPS":30,"InForce":{"SendPeriod":2,"LookAhead":6},"Target":{"SendPeriod":3,"LookAhead":7}}}`, "target 3/7"},
		{"view target past 250 started", KindView, `{"at_ns":1,"from":"alice","view":{"Self":"alice","Started":true,"FPS":30,"InForce":{"SendPeriod":9,"LookAhead":252},"Target":{"SendPeriod":9,"LookAhead":252}}}`, "target 9/252"},
		{"view timing 0/0 started", KindView, `{"at_ns":1,"from":"alice","view":{"Self":"alice","Started":true,"FPS":30,"InForce":{"SendPeriod":0,"LookAhead":0},"Target":{"SendPeriod":2,"LookAhead":6}}}`, "timing in force 0/0"},
		{"view fps 0 started", KindView, `{"at_ns":1,"from":"alice","view":{"Self":"alice","Started":true,"FPS":0,"InForce":{"SendPeriod":2,"LookAhead":6},"Target":{"SendPeriod":2,"LookAhead":6}}}`, "fps 0"},
		{"view player name", KindView, `{"at_ns":1,"from":"alice","view":{"Self":"alice","Players":[{"Name":"\u001b]8;;http://x\u0007"}]}}`, "player"},
		{"command runs early", KindCommand, `{"at_ns":1,"from":"alice","command":{"player":"bob","send_frame":70,"frame":72,"seq":1,"type":1}}`, "send_frame 70 before"},
		{"command player", KindCommand, `{"at_ns":1,"from":"alice","command":{"player":"b\u202eob","send_frame":72,"frame":72,"seq":1,"type":1}}`, "U+202E"},
		{"unknown kind, bad time", 'Z', fmt.Sprintf(`{"at_ns":%d}`, int64(math.MaxInt64)), "time"},
	}
	for _, c := range cases {
		var b []byte
		b = append(b, headerLine(feed.ProtocolVersion)...)
		b = appendLine(b, KindEvent, []byte(good))
		bad := len(b)
		b = appendLine(b, c.kind, []byte(c.body))
		b = appendLine(b, KindEvent, []byte(good)) // never reached
		rec, err := readAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch s := rec.Stop; {
		case s == nil:
			t.Errorf("%s: read without a word (%d records)", c.name, len(rec.Records))
		case !errors.Is(s, errCorrupt) || s.Index != 2 || s.Offset != int64(bad):
			t.Errorf("%s: stop %v, want damage at record 2, byte %d", c.name, s, bad)
		case !strings.Contains(s.Error(), c.want) || strings.Contains(s.Error(), "\n") || strings.Contains(s.Error(), "\x1b"):
			t.Errorf("%s: %q, want one clean line with %q", c.name, s.Error(), c.want)
		case len(rec.Records) != 1:
			t.Errorf("%s: %d records returned, want only the one before the damage", c.name, len(rec.Records))
		}
	}
}

// The sample of every record kind, and the edges a real session reaches,
// are not damage: the checks refuse only what no writer writes.
func TestPlausibleEdgesRead(t *testing.T) {
	b, events := sample(t)
	rec, err := readAll(bytes.NewReader(b))
	if err != nil || rec.Stop != nil {
		t.Fatalf("sample: %v %v", err, rec.Stop)
	}
	if len(rec.Records) < len(events) {
		t.Fatalf("sample: %d records for %d events", len(rec.Records), len(events))
	}
	edges := []string{
		`{"at_ns":0,"event":{"type":"timing","frame":0,"decided":0,"send_period":10,"look_ahead":250,"rung":10,"tier":"Bad","fps":1,"reason":"worse"}}`,
		`{"at_ns":1,"event":{"type":"timing_active","frame":0,"send_period":1,"look_ahead":4,"rung":1,"tier":"Fast","fps":1000}}`,
		// A staged change can hold a look-ahead past 250 in force (7/245
		// rounded up to send period 9), never as an event's target.
		`{"at_ns":1,"event":{"type":"timing_active","frame":0,"send_period":9,"look_ahead":252,"rung":9,"tier":"Bad","fps":30}}`,
		`{"at_ns":1,"from":"alice","view":{"Self":"alice","Started":true,"FPS":30,"InForce":{"SendPeriod":9,"LookAhead":252},"Target":{"SendPeriod":9,"LookAhead":27}}}`,
		fmt.Sprintf(`{"at_ns":%d,"event":{"type":"master","frame":0,"player":"Bob Smith"}}`, int64(maxAt)),
		`{"at_ns":1,"event":{"type":"message","frame":0,"text":"Desync with Zoë <&> | ok"}}`,
		`{"at_ns":1,"from":"alice","view":{"Self":"alice","Started":false,"FPS":0}}`, // a lobby's view
	}
	var buf []byte
	buf = append(buf, headerLine(feed.ProtocolVersion)...)
	for _, e := range edges {
		kind := KindEvent
		if strings.Contains(e, `"view"`) {
			kind = KindView
		}
		buf = appendLine(buf, kind, []byte(e))
	}
	rec, err = readAll(bytes.NewReader(buf))
	if err != nil || rec.Stop != nil || len(rec.Records) != len(edges) {
		t.Fatalf("edges: %v, stop %v, %d records", err, rec.Stop, len(rec.Records))
	}
}
