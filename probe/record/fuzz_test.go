package record

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/textsafe"
)

// FuzzReader: the reader never panics on outside bytes; it returns records,
// a clean end or a StopError, and what it returns re-reads identically.
func FuzzReader(f *testing.F) {
	b, _ := sample(f)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte{})
	f.Add(appendLine(nil, kindHeader, []byte(`{"magic":"lagscope-recording","format":1,"protocol":1}`)))
	f.Add(append(appendLine(nil, kindHeader, []byte(`{"magic":"lagscope-recording","format":1,"protocol":1}`)),
		appendLine(nil, KindView, []byte(`{"at_ns":1,"view":{"Links":[{"srtt_ms":null}]}}`))...))
	// Impossible values behind good checksums: damage, never records.
	f.Add(append(headerLine(1), appendLine(nil, KindEvent,
		[]byte(`{"at_ns":1,"event":{"type":"timing","frame":1,"send_period":0,"look_ahead":6,"rung":99,"tier":"Fast","fps":0}}`))...))
	f.Add(append(headerLine(1), appendLine(nil, KindEvent,
		[]byte(`{"at_ns":9223372036854775807,"event":{"type":"message","frame":1,"text":"\u001b]0;x\u0007"}}`))...))
	f.Add(headerLine(99))
	f.Add(append(headerLine(1), appendLine(nil, KindEvent, // an alert
		[]byte(`{"at_ns":1,"event":{"type":"alert","frame":3,"player":"alice","kind":"loss","from":"alice","to":"bob","text":"x"}}`))...))
	f.Add(append(headerLine(1), appendLine(nil, KindEvent,
		[]byte(`{"at_ns":1,"event":{"type":"diagnosis","frame":64,"verdict":"v","culprit":"ada","culprit_link":["ada","bob"],`+
			`"players":[{"player":"ada","access_rtt_ms":155,"access_loss":null,"rung_without":1,"fps_without":30,"causes":["latency"]}],`+
			`"links":[{"between":["ada","bob"],"rtt_ms":60,"excess_rtt_ms":-2,"loss":0,"causes":[]}]}}`))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := newReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		n := 0
		for {
			r, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var se *StopError
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a StopError", err)
				}
				if se.Offset > int64(len(data)) {
					t.Fatalf("stop offset %d past the end %d", se.Offset, len(data))
				}
				if msg := se.Error(); strings.ContainsAny(msg, "\n\x1b") {
					t.Fatalf("stop %q is not one clean line", msg)
				}
				break
			}
			if r.Offset >= int64(len(data)) {
				t.Fatalf("record offset %d past the end", r.Offset)
			}
			assertPlausible(t, r)
			n++
		}
		// Whatever was read is a prefix that reads the same and cleanly.
		rec, err := readAll(bytes.NewReader(data[:rd.Offset()]))
		if err != nil || rec.Stop != nil || len(rec.Records) != n {
			t.Fatalf("prefix of %d bytes: %v %v, %d records, want %d", rd.Offset(), err, rec.Stop, len(rec.Records), n)
		}
	})
}

// assertPlausible restates, from the outside, what a returned record never
// holds: a time outside 0..MaxAt, a timing no session runs at, text that
// could steer a terminal.
func assertPlausible(t *testing.T, r Record) {
	t.Helper()
	if r.At < 0 || r.At > maxAt {
		t.Fatalf("record at %d ns returned", int64(r.At))
	}
	if !textsafe.Safe(r.From) {
		t.Fatalf("from %q returned", r.From)
	}
	switch e := r.Event.(type) {
	case *probe.TimingEvent:
		if tm := (rungs.Timing{SendPeriod: e.SendPeriod, LookAhead: e.LookAhead}); !tm.Valid() || e.Rung != tm.Rung() || e.FPS < 1 {
			t.Fatalf("timing %+v returned", e)
		}
	case *probe.TimingActiveEvent:
		if tm := (rungs.Timing{SendPeriod: e.SendPeriod, LookAhead: e.LookAhead}); !tm.ValidInForce() || e.Rung != tm.Rung() || e.FPS < 1 {
			t.Fatalf("timing_active %+v returned", e)
		}
	case *probe.MessageEvent:
		if !textsafe.Safe(e.Text) || !textsafe.Safe(e.Player) {
			t.Fatalf("message %+v returned", e)
		}
	}
}
