package probe

import (
	"fmt"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
)

// chainWaits scripts the waits of a knock-on chain into a machine's matrix
// (Config.FillMatrix), in virtual time: from `from` to `to`, p4 waits for
// p2 400 ms a second on 6 frames, and p1 and p3 wait for p4 — whose
// commands come late because it waited — 380 ms a second, and for p2
// itself 20 ms a second. Every other figure stays what the session
// measured.
type chainWaits struct{ from, to time.Duration }

func (c chainWaits) fill(now time.Duration, m *feed.MatrixView) {
	on := min(max(now-c.from, 0), c.to-c.from)
	rate := func(a, b string) (time.Duration, int) {
		switch {
		case a == "p4" && b == "p2":
			return 400 * time.Millisecond, 6
		case (a == "p1" || a == "p3") && b == "p4":
			return 380 * time.Millisecond, 6
		case (a == "p1" || a == "p3") && b == "p2":
			return 20 * time.Millisecond, 1
		}
		return 0, 0
	}
	for i := range m.Players {
		row := &m.Players[i]
		for k := range row.Links {
			l := &row.Links[k]
			w, f := rate(row.Name, l.To)
			l.Caused = time.Duration(float64(w) * on.Seconds())
			l.Frames = int(float64(f) * on.Seconds())
		}
	}
}

// The waits rule counts a knock-on's waits to the root of its chain over
// the whole of its window (S9's last two evaluation intervals): p4 only
// waited for p2, and p1 and p3 waited for p4 because of it. The incident
// is p2's; so is every diagnosis that names a culprit, also the one whose
// window still holds the chain's waits after the incident closed.
func TestWaitsRuleCountsKnockOnWaitsToTheRoot_S9(t *testing.T) {
	chain := chainWaits{from: 12 * time.Second, to: 24 * time.Second}
	log := diagLog{}
	var incidents []string
	sink := feed.SinkFunc(func(from string, e feed.Event) {
		if inc, ok := e.(*feed.IncidentEvent); ok {
			who := ""
			if inc.Player != nil {
				who = *inc.Player
			}
			if inc.Between != nil {
				who = inc.Between[0] + "–" + inc.Between[1]
			}
			incidents = append(incidents, fmt.Sprintf("%s %s %s", from, inc.Phase, who))
		}
		log.sink().Emit(from, e)
	})
	w := newTMWorldWith(t, 4, 0, impair.Profile{Delay: 10 * time.Millisecond}, 5, func(_ int, c *Config) {
		c.Telemetry, c.Sink, c.FillMatrix = true, sink, chain.fill
	})
	w.runUntilFrame(t, 1300)
	t.Logf("incident lines: %v", incidents)
	opened := map[string]bool{}
	for _, l := range incidents {
		var from, phase, who string
		fmt.Sscan(l, &from, &phase, &who)
		if who != "p2" {
			t.Errorf("%s: an incident line names %q, want p2's", from, who)
		}
		opened[from] = opened[from] || phase == "open"
	}
	for _, m := range w.ms {
		name := m.peer.Name()
		if !opened[name] {
			t.Errorf("%s opened no incident", name)
		}
		named := 0
		for _, e := range log[name] {
			d := e.Diagnosis
			t.Logf("%s frame %d: culprit %q (%s)", name, e.Frame, d.Culprit, d.Reason)
			switch d.Culprit {
			case "":
			case "p2":
				named++
			default:
				t.Errorf("%s frame %d: the diagnosis names %s, want p2 or nobody: %s", name, e.Frame, d.Culprit, d.Verdict)
			}
		}
		if named < 2 {
			t.Errorf("%s: %d diagnoses name p2, want the two whose windows hold the chain's waits", name, named)
		}
	}
}
