package live

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/session"
)

// While everyone waits for a machine that has vanished, a stalled machine
// repeats its state at the usual pace (every 50 ms) only to the machine
// that may lack its commands, and about once a second to the ones that
// hold them all (probe.Config.SparseStatus) — and that still
// carries the holds the master needs to remove the vanished machine after
// the drop timeout (S7), after which the game goes on.
func TestSparseStatus_S7(t *testing.T) {
	const n = 8
	w := newWorld(t, 5, impair.Profile{Delay: 5 * time.Millisecond})
	cfg := session.Config{Players: n, DropTimeout: 6 * time.Second, TelemetryTo: []string{"m0"}}
	ms := []*machine{w.host("m0", cfg)}
	for i := 1; i < n; i++ {
		ms = append(ms, w.join(fmt.Sprintf("m%d", i), session.RolePlayer, ms[0], cfg))
	}
	if !w.runUntil(20*time.Second, func() bool { return ms[n-1].s.Frame() > 90 }) {
		t.Fatal("the game did not run")
	}
	gone, watched := ms[n-1], ms[2]
	gone.vanish()
	w.runFor(time.Second) // everyone is stalled on gone by now
	watched.tr.Keep = true
	from := w.now()
	const window = 4 * time.Second
	w.runFor(window)
	watched.tr.Keep = false
	sent := map[netip.AddrPort]int{}
	for _, d := range watched.tr.Sent {
		sent[d.To]++
	}
	perSecond := func(m *machine) float64 { return float64(sent[m.addr]) / window.Seconds() }
	if r := perSecond(gone); r < 15 {
		t.Errorf("%.1f datagrams a second to the machine it waits for, want its state every 50 ms", r)
	}
	for _, m := range ms {
		if m == gone || m == watched || m == ms[0] {
			continue // ms[0] gets telemetry, which goes at its own pace
		}
		if r := perSecond(m); r > 4 {
			t.Errorf("%.1f datagrams a second to %s, which holds all our commands; want about one", r, m.name)
		}
	}
	// The drop timeout removes the silent machine, and the game goes on.
	f := watched.s.Frame()
	w.runFor(10 * time.Second)
	if _, ok := removedAt(watched, gone.name); !ok {
		t.Fatalf("%s was not removed (stalled at frame %d since %v)", gone.name, f, from)
	}
	if watched.s.Frame() < f+60 {
		t.Fatalf("frame %d → %d after the removal: the game did not go on", f, watched.s.Frame())
	}
}
