package loadtest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// FuzzDecode: any bytes decode or fail without panicking, and a message
// that decodes encodes back to the same bytes (a load datagram to the
// same head and size: its padding is not read).
func FuzzDecode(f *testing.F) {
	for _, ex := range examples {
		f.Add(appendMessage(nil, ex.m))
	}
	f.Add([]byte{kindLoad, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{kindAnswer, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b)
		if err != nil {
			return
		}
		again := appendMessage(nil, m)
		if m.kind == kindLoad {
			if len(again) != len(b) || !bytes.Equal(again[:loadHead], b[:loadHead]) {
				t.Fatalf("% x decoded to %+v, which encodes to % x", b, m, again)
			}
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("% x decoded to %+v, which encodes to % x", b, m, again)
		}
	})
}

// FuzzEnds: any message handed to either end of a running test is taken
// or refused without panicking, and neither end sends more than the
// probes and load it is due to.
func FuzzEnds(f *testing.F) {
	for _, ex := range examples {
		f.Add(appendMessage(nil, message{kind: ex.m.kind, id: 5, phase: ex.m.phase, rate: ex.m.rate,
			version: ex.m.version, reason: ex.m.reason, size: ex.m.size, seq: ex.m.seq}), uint16(3000))
	}
	f.Fuzz(func(t *testing.T, msg []byte, atMS uint16) {
		sends := 0
		cfg := Config{ID: 5, Cap: 1e6, Send: func(b []byte) {
			sends++
			if len(b) > maxMessage {
				t.Fatalf("sent %d bytes", len(b))
			}
		}}
		tester := New(cfg)
		tester.Tick(0)
		tester.Receive(time.Millisecond, appendMessage(nil, message{kind: kindAnswer, id: 5, rate: 1e6}))
		cfg.Request = appendMessage(nil, message{kind: kindRequest, id: 5, version: protoVersion, rate: 1e6})
		peer := New(cfg)
		peer.Tick(0)
		now := time.Duration(atMS) * time.Millisecond
		tester.Tick(now)
		peer.Tick(now)
		before := sends
		tester.Receive(now, msg)
		peer.Receive(now, msg)
		if sends-before > 1 {
			t.Fatalf("one message drew %d", sends-before)
		}
		tester.Tick(now)
		peer.Tick(now)
		if d, ok := tester.NextDeadline(); ok && d < now {
			t.Fatalf("the tester asks for a tick at %v, before now %v, after a tick", d, now)
		}
	})
}

// FuzzResultJSON: any bytes decode or fail without panicking; a Result
// that decodes encodes to JSON that decodes to the same Result.
func FuzzResultJSON(f *testing.F) {
	f.Add([]byte(contractBody))
	f.Add([]byte(`{"idle_rtt_ms":null,"upload":null,"download":null,"both":null,"where":null,"cost":null,"stopped":"busy"}`))
	f.Add([]byte(`{"upload":{"loss":1.5}}`))
	f.Add([]byte(`{"upload":{"grade":"E"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s decoded to %+v, which does not encode: %v", b, r, err)
		}
		var again Result
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("%s encodes to %s, which does not decode: %v", b, out, err)
		}
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("%s: %+v, then %+v", b, r, again)
		}
	})
}
