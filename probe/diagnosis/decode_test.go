package diagnosis

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// A diagnosis written and read back writes the same bytes: nulls stay
// null (L3), not 0.
func TestDecodeRoundTrip(t *testing.T) {
	in := Input{Speed: 30}
	for i, n := range []string{"ada", "bob", "cy", "dee"} {
		in.Players = append(in.Players, Player{Name: n, Measured: i < 3, Process: time.Duration(i) * time.Millisecond})
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	in.Pairs = []Pair{{A: 0, B: 1, RTT: ms(40)}, {A: 0, B: 2, RTT: ms(190)}, {A: 1, B: 2, RTT: ms(185), ExpectedAB: 500, MissingAB: 9, ExpectedBA: 500}}
	d := Diagnose(in)
	want, _ := json.Marshal(Event{Frame: 512, Diagnosis: d})
	var e Event
	if err := json.Unmarshal(want, &e); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(e)
	if !bytes.Equal(got, want) || e.Frame != 512 {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if p := e.Players[3]; !math.IsNaN(p.AccessRTTMs) || p.RungWithout != d.Players[3].RungWithout {
		t.Fatalf("dee read back %+v", p)
	}
}

// FuzzDecode: outside bytes never make the decoder panic, and what it
// accepts writes bytes that read back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"diagnosis","frame":64,"verdict":"v","culprit":"ada","culprit_link":["ada","bob"],` +
		`"players":[{"player":"ada","access_rtt_ms":155,"access_loss":null,"rung_without":1,"fps_without":30,"causes":["latency"]}],` +
		`"links":[{"between":["ada","bob"],"rtt_ms":60,"excess_rtt_ms":-2,"loss":0,"causes":[]}]}`))
	f.Add([]byte(`{"shared_hop":{"addr":"10.0.5.1","players":["bob","cy"],"added_ms":140.25},` +
		`"players":[{"player":"ada","where":{"link":"uplink","ttl":2,"added_ms":1e308}},{"player":"bob","where":null}]}`))
	f.Add([]byte(`{"shared_hop":{"addr":"::ffff:10.0.5.1","players":null,"added_ms":-1}}`))
	f.Add([]byte(`{"players":[{"player":"ada","causes":["bufferbloat"],"where":null,"bufferbloat_ms":{"upload":380.1,"download":null}},` +
		`{"player":"bob","bufferbloat_ms":null},{"player":"cy","bufferbloat_ms":{"upload":null,"download":null}}]}`))
	f.Add([]byte(`{"players":[{"player":"ada","bufferbloat_ms":{"upload":-0,"download":1e305}}]}`))
	f.Add([]byte(`{"players":[{"player":"ada","bufferbloat_ms":{"upload":-1,"download":0}}]}`))
	f.Add([]byte(`{"players":[{"player":"ada","bufferbloat_ms":{"download":12.25}}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"players":[{"access_rtt_ms":1e308}]}`))
	f.Add([]byte(`{"players":[{"access_rtt_ms":null,"jitter_ms":-1e307}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return
		}
		once, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("accepted %q, cannot write it: %v", b, err)
		}
		var again Event
		if err := json.Unmarshal(once, &again); err != nil {
			t.Fatalf("cannot read back %s: %v", once, err)
		}
		if twice, _ := json.Marshal(again); !bytes.Equal(once, twice) {
			t.Fatalf("not stable:\n%s\n%s", once, twice)
		}
	})
}
