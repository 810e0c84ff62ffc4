package record

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"

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
	f.Add(append(headerLine(1), appendLine(nil, KindEvent, // a path
		[]byte(`{"at_ns":1,"from":"ada","event":{"type":"path","t_ms":61000,"from":"ada","to":"bob","available":true,"why":null,`+
			`"hops":[{"ttl":1,"addr":"192.168.1.1","link":"lan","sent":30,"loss":0,"best_ms":0.6,"rtt_ms":210.4,"worst_ms":260.1,"rate_limited":false},`+
			`{"ttl":2,"addr":null,"link":"uplink","sent":30,"loss":1,"best_ms":null,"rtt_ms":null,"worst_ms":null,"rate_limited":false},`+
			`{"ttl":3,"addr":"2001:db8::1","link":"peer","sent":30,"loss":0.1,"best_ms":211,"rtt_ms":215,"worst_ms":290,"rate_limited":true}],`+
			`"delay_starts":{"ttl":1,"link":"lan","added_ms":210.4},"loss_starts":{"ttl":3,"link":"peer","loss":0.1},"complete":true}}`))...))
	f.Add(append(headerLine(1), appendLine(nil, KindEvent, // a path that cannot be traced
		[]byte(`{"at_ns":1,"event":{"type":"path","from":"ada","to":"bob","available":false,"why":"no error queue","hops":[],"delay_starts":null,"loss_starts":null,"complete":false}}`))...))
	f.Add(append(headerLine(1), appendLine(nil, KindView, // a View's paths
		[]byte(`{"at_ns":1,"from":"ada","view":{"Self":"ada","Paths":[{"Peer":"bob","Available":true,"Hops":[`+
			`{"TTL":1,"Addr":"10.0.0.1","Link":"lan","Sent":12,"Loss":0.5,"Answered":true,"Best":1000,"Median":2000,"Last":2000,"Worst":3000,"Judged":true},`+
			`{"TTL":2,"Addr":"","Link":"peer","Sent":12,"Loss":1}],"DelayStarts":{"TTL":1,"Link":"lan","Added":2000},"Complete":true}]}}`))...))
	f.Add(append(headerLine(1), appendLine(nil, KindEvent, // a load test
		[]byte(`{"at_ns":1,"from":"ada","event":{"type":"load","t_ms":90000,"from":"ada","to":"bob","idle_rtt_ms":12.1,`+
			`"upload":{"added_ms":368.0,"p90_added_ms":420.5,"mbps":9.6,"loss":0.002,"grade":"D","capped":false},`+
			`"download":{"added_ms":8.2,"p90_added_ms":11.0,"mbps":48.0,"loss":0.0,"grade":"A","capped":false},`+
			`"both":{"added_ms":371.0,"p90_added_ms":430.0,"loss":0.003},"where":{"link":"uplink","ttl":2,"added_ms":360.5},`+
			`"cost":{"frames_late":4,"max_wait_ms":120,"rung_from":1,"rung_to":4,"for_ms":40000},"stopped":null}}`))...))
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
	case *feed.TimingEvent:
		if tm := (rungs.Timing{SendPeriod: e.SendPeriod, LookAhead: e.LookAhead}); !tm.Valid() || e.Rung != tm.Rung() || e.FPS < 1 {
			t.Fatalf("timing %+v returned", e)
		}
	case *feed.TimingActiveEvent:
		if tm := (rungs.Timing{SendPeriod: e.SendPeriod, LookAhead: e.LookAhead}); !tm.ValidInForce() || e.Rung != tm.Rung() || e.FPS < 1 {
			t.Fatalf("timing_active %+v returned", e)
		}
	case *feed.MessageEvent:
		if !textsafe.Safe(e.Text) || !textsafe.Safe(e.Player) {
			t.Fatalf("message %+v returned", e)
		}
	case *feed.PathEvent:
		for _, h := range e.Hops {
			if h.TTL < 1 || h.TTL > maxTTL || !(h.Loss >= 0 && h.Loss <= 1) || (h.Addr != nil && (!h.Addr.IsValid() || h.Addr.Zone() != "")) {
				t.Fatalf("path hop %+v returned", h)
			}
		}
	case *feed.LoadEvent:
		if e.From == e.To || !textsafe.Safe(e.From) || !textsafe.Safe(e.To) ||
			(e.Result.Where != nil && (e.Result.Where.TTL < 1 || e.Result.Where.TTL > maxTTL || !vocab.HopLink(e.Result.Where.Link).Valid())) {
			t.Fatalf("load %+v returned", e)
		}
	}
	if r.View != nil {
		for _, p := range r.View.Paths {
			for _, h := range p.Hops {
				if h.TTL < 1 || h.TTL > maxTTL || !(h.Loss >= 0 && h.Loss <= 1) || h.Median < 0 || h.Addr.Zone() != "" {
					t.Fatalf("view path hop %+v returned", h)
				}
			}
		}
	}
}
