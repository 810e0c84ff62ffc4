package ui

import (
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// A timing that is not valid has no tier: the header shows "—" for it, not
// the Fast its clamped rung would read as, and no tier badge.
func TestInvalidTimingShowsNoTier_S17(t *testing.T) {
	for _, bad := range []rungs.Timing{{SendPeriod: 0, LookAhead: 0}, {SendPeriod: 3, LookAhead: 7}, {SendPeriod: 3, LookAhead: 10}, {SendPeriod: 1, LookAhead: 1}, {SendPeriod: 5, LookAhead: 10}} {
		v := fixtureView(2)
		v.InForce, v.Target = bad, bad
		m := model(t, newStaticFeed(), 140, 40, []feed.Update{{View: v}})
		header := strings.Split(m.View(), "\n")[1]
		if !strings.Contains(header, "30 fps") {
			t.Fatalf("%v: line %q is not the header's second line", bad, header)
		}
		if strings.Contains(header, bad.String()) || strings.Contains(strings.ToLower(header), "fast") || !strings.Contains(header, "30 fps · —") {
			t.Errorf("%v: header %q, want the timing shown as —", bad, header)
		}
	}
	v := fixtureView(2)
	m := model(t, newStaticFeed(), 140, 40, []feed.Update{{View: v}})
	if header := strings.Split(m.View(), "\n")[1]; !strings.Contains(header, "30 fps · "+v.InForce.String()+"  FAST") {
		t.Errorf("a valid %v: header %q", v.InForce, header)
	}
}
