package feed

import "testing"

func TestFoldTotalsMonotonic_L5(t *testing.T) {
	var f LinkFold
	steps := []LinkCounts{{Sent: 5}, {Sent: 9, PeerExpected: 4}, {Sent: 9, PeerExpected: 2}, {Sent: 1}, {Sent: 3, PeerLost: 1}}
	var prev LinkCounts
	for i, c := range steps {
		f.Observe(c)
		got := f.Total()
		if got.Sent < prev.Sent || got.PeerExpected < prev.PeerExpected || got.PeerLost < prev.PeerLost {
			t.Fatalf("step %d: %+v after %+v", i, got, prev)
		}
		prev = got
	}
	if prev.Sent != 12 || prev.PeerExpected != 4 || prev.PeerLost != 1 {
		t.Fatalf("total %+v", prev)
	}
}
