package sim

import (
	"encoding/json"
	"testing"
)

// A watcher sends no game commands and its keep-alives are unnumbered
// (L2), so the replies to them are what measures its own links (T2): by the
// end of a run every link from the observer is measured, with a round trip
// near the network's. Without keep-alive samples they stayed unmeasured.
func TestObserverLinksMeasuredByKeepAlives_T2_L2(t *testing.T) {
	sc := parse(t, `{"fps": 30, "frames": 900, "seed": 4, "players": ["alice", "bob"],
	  "observers": ["eve"], "network": {"rtt_ms": 60}}`)
	r := runScenario(t, sc)
	var sum struct {
		Links []struct {
			From, To, State string
			SRTT            *float64 `json:"srtt_ms"`
			Sent            *uint64  `json:"sent"`
		} `json:"links"`
	}
	if err := json.Unmarshal(r.raw[lastLine(r.raw):], &sum); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, l := range sum.Links {
		if l.From != "eve" {
			continue
		}
		seen++
		if l.State != "measured" || l.SRTT == nil || *l.SRTT < 55 || *l.SRTT > 65 {
			t.Errorf("eve→%s: state %s, srtt %v; want measured near 60 ms", l.To, l.State, l.SRTT)
		}
		if l.Sent == nil || *l.Sent != 0 {
			t.Errorf("eve→%s: sent %v; keep-alives are not counted (L2)", l.To, l.Sent)
		}
	}
	if seen != 2 {
		t.Fatalf("%d links from eve in the summary, want 2", seen)
	}
}

// lastLine is where the last line of b starts.
func lastLine(b []byte) int {
	end := len(b) - 1
	for end > 0 && b[end] == '\n' {
		end--
	}
	for i := end; i > 0; i-- {
		if b[i-1] == '\n' {
			return i
		}
	}
	return 0
}
