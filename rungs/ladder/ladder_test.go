package ladder

import (
	"strings"
	"testing"
	"time"
)

// ParseRTT reads whatever a user types: it never panics, and what it
// accepts is a round trip of zero or more that the rung policy can use.
func FuzzParseRTT(f *testing.F) {
	for _, s := range []string{"180ms", "180", "180.5", "1.5s", "-5", "-5ms", "NaN", "Inf", "-Inf", "1e300", "1e300h", "", " ", "0x10", "2h45m", "9223372036854775807ns", "9223372036.854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseRTT(s)
		if err != nil {
			if d != 0 {
				t.Fatalf("%q: error %v with round trip %v", s, err, d)
			}
			return
		}
		if d < 0 {
			t.Fatalf("%q: accepted a negative round trip %v", s, d)
		}
		_ = Explain(d, 30)
	})
}

// The JSON answer is the command's contract, field order included (S3).
func TestWriteJSON_S3(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, 200*time.Millisecond, 30); err != nil {
		t.Fatal(err)
	}
	want := `{"rtt_ms":200,"fps":30,"one_way_frames":3,"rung":1,"send_period":1,"look_ahead":4,"tier":"Fast","extended":false,` +
		`"headroom":{"rtt_ms":250,"one_way_frames":4,"rung":2,"send_period":2,"look_ahead":6,"tier":"Fast","extended":false}}` + "\n"
	if b.String() != want {
		t.Fatalf("got  %s\nwant %s", b.String(), want)
	}
}
