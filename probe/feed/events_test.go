package feed

import (
	"encoding/json"
	"testing"
	"time"
)

// A report event carries its figures twice: in ms as its line writes them,
// and as the durations the engine reads (a spectator's copy of the report,
// the session's count of waits); its line leaves the durations out.
func TestNewReportEvent(t *testing.T) {
	for _, c := range []struct {
		rtt    time.Duration
		hasRTT bool
		want   string
	}{
		{61250 * time.Microsecond, true, `{"type":"report","frame":32,"player":"bob","rtt_ms":61.25,"wait_ms":3.5,"process_ms":1}`},
		{0, false, `{"type":"report","frame":32,"player":"bob","rtt_ms":null,"wait_ms":3.5,"process_ms":1}`},
	} {
		e := NewReportEvent(Header{Frame: 32}, "bob", c.rtt, c.hasRTT, 3500*time.Microsecond, time.Millisecond)
		if e.RTT != c.rtt || e.HasRTT != c.hasRTT || e.Wait != 3500*time.Microsecond || e.Process != time.Millisecond {
			t.Errorf("durations %v (%v), %v, %v", e.RTT, e.HasRTT, e.Wait, e.Process)
		}
		b, err := json.Marshal(e)
		if err != nil || string(b) != c.want {
			t.Errorf("line %s, %v; want %s", b, err, c.want)
		}
	}
}
