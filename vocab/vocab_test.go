package vocab

import "testing"

// Join spells typed words as strings.Join spells strings.
func TestJoin(t *testing.T) {
	for _, c := range []struct {
		ws   []Cause
		want string
	}{
		{nil, ""},
		{[]Cause{CauseLoss}, "loss"},
		{[]Cause{CauseLatency, CauseJitter, CauseLoss}, "latency, jitter, loss"},
	} {
		if got := Join(c.ws, ", "); got != c.want {
			t.Errorf("Join(%v) = %q, want %q", c.ws, got, c.want)
		}
	}
}
