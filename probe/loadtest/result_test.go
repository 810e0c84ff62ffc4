package loadtest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestGrade(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{0, "A+"}, {4.99, "A+"}, {5, "A"},
		{29.9, "A"}, {30, "B"},
		{59.9, "B"}, {60, "C"},
		{199.9, "C"}, {200, "D"},
		{399.9, "D"}, {400, "F"},
		{5000, "F"},
	} {
		if got := grade(tc.ms); got != tc.want {
			t.Errorf("grade(%v) = %s, want %s", tc.ms, got, tc.want)
		}
	}
}

// contractBody is the load event's body as the event table shows it (the
// event's type, time and names are the caller's).
const contractBody = `{"idle_rtt_ms":12.1,
 "upload":{"added_ms":368.0,"p90_added_ms":420.5,"mbps":9.6,"loss":0.002,"grade":"D","capped":false},
 "download":{"added_ms":8.2,"p90_added_ms":11.0,"mbps":48.0,"loss":0.0,"grade":"A","capped":false},
 "both":{"added_ms":371.0,"p90_added_ms":430.0,"loss":0.003},
 "where":{"link":"uplink","ttl":2,"added_ms":360.5},
 "cost":{"frames_late":4,"max_wait_ms":120,"rung_from":1,"rung_to":4,"for_ms":40000},"stopped":null}`

// canonical is b with its numbers and spacing as encoding/json writes
// them, keys kept in order.
func canonical(t *testing.T, b string) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(strings.NewReplacer(".0,", ",", ".0}", "}").Replace(b))); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestResultJSONMatchesTheEvent(t *testing.T) {
	var r Result
	if err := json.Unmarshal([]byte(contractBody), &r); err != nil {
		t.Fatal(err)
	}
	if r.Upload == nil || *r.Upload.Grade != "D" || *r.Download.Mbps != 48 || r.Where.TTL != 2 || r.Cost.RungTo != 4 || r.Stopped != nil {
		t.Fatalf("decoded %+v", r)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := canonical(t, contractBody); string(out) != want {
		t.Errorf("round trip:\n got %s\nwant %s", out, want)
	}
}

// What is not known is null, never 0: a refused test has only its reason,
// a direction without probes in its hold has no added delay and no grade.
func TestResultNulls(t *testing.T) {
	out, _ := json.Marshal(Result{Stopped: stoppedBy(stopRefused)})
	want := `{"idle_rtt_ms":null,"upload":null,"download":null,"both":null,"where":null,"cost":null,"stopped":"peer refused"}`
	if string(out) != want {
		t.Errorf("refused: %s, want %s", out, want)
	}
	var w window
	d := direction(nil, 10*time.Millisecond, &w, false)
	out, _ = json.Marshal(d)
	if want := `{"added_ms":null,"p90_added_ms":null,"mbps":null,"loss":null,"grade":null,"capped":false}`; string(out) != want {
		t.Errorf("unmeasured direction: %s, want %s", out, want)
	}
	for why := stopComplete; why < numReasons; why++ {
		s := stoppedBy(why)
		if (why == stopComplete) != (s == nil) {
			t.Errorf("stoppedBy(%d) = %v", why, s)
		}
	}
}

func TestResultDecodeRejects(t *testing.T) {
	for _, b := range []string{
		`{"idle_rtt_ms":-1}`,
		`{"upload":{"added_ms":-0.1}}`,
		`{"upload":{"loss":1.01}}`,
		`{"download":{"loss":-0.5}}`,
		`{"both":{"loss":2}}`,
		`{"upload":{"grade":"E"}}`,
		`{"upload":{"grade":"a+"}}`,
		`{"stopped":"timeout"}`,
		`{"stopped":""}`,
		`{"cost":{"max_wait_ms":-3}}`,
		`{"where":{"added_ms":-3}}`,
		`{"upload":[]}`,
	} {
		var r Result
		if err := json.Unmarshal([]byte(b), &r); err == nil {
			t.Errorf("%s decoded to %+v", b, r)
		}
	}
	// Fields it does not know are ignored: the event may grow.
	var r Result
	if err := json.Unmarshal([]byte(`{"stopped":"busy","later":1}`), &r); err != nil || *r.Stopped != "busy" {
		t.Errorf("a field of a later version: %+v, %v", r, err)
	}
}

// The added round trip is the probes' median and 90th percentile above
// the idle median, never below 0; its Duration is the median's, rounded to
// 0.1 ms as its ms are.
func TestAdded(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x*float64(time.Millisecond)))
		}
		return out
	}
	d, med, high, g := added(ms(40, 10, 30, 20, 100, 50, 60, 70, 80, 90), 10*time.Millisecond)
	if d != 45*time.Millisecond || *med != 45 || *high != 80 || *g != "B" {
		t.Errorf("added = %v, %v, %v, %v; want 45ms, 45, 80, B", d, *med, *high, *g)
	}
	d, med, high, g = added(ms(9, 9.5, 12), 10*time.Millisecond)
	if d != 0 || *med != 0 || *high != 2 || *g != "A+" {
		t.Errorf("below idle: %v, %v, %v, %v; want 0s, 0, 2, A+", d, *med, *high, *g)
	}
	d, med, _, _ = added([]time.Duration{10*time.Millisecond + 12345*time.Microsecond, 10*time.Millisecond + 12355*time.Microsecond}, 10*time.Millisecond)
	if d != 12400*time.Microsecond || *med != 12.4 {
		t.Errorf("a median of 12.35 ms: %v, %v; want 12.4ms, 12.4", d, *med)
	}
	if d, med, high, g := added(nil, 0); d != 0 || med != nil || high != nil || g != nil {
		t.Error("no samples gave figures")
	}
}
