package session

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// A quit ends as soon as the removal is through and acked, never on a fixed
// multi-second linger: on a LAN well under 500 ms, on a 200 ms
// round trip within about three round trips after the removal executed —
// the master's last quit too, whose final frame packet the remaining player
// never acks (it drops the link as it executes the removal).
func TestQuitEndsWithinRoundTrips_S7(t *testing.T) {
	for _, c := range []struct {
		oneWay time.Duration
		limit  time.Duration
	}{
		{250 * time.Microsecond, 500 * time.Millisecond},
		{15 * time.Millisecond, 500 * time.Millisecond},
		{100 * time.Millisecond, 300*time.Millisecond + 3*200*time.Millisecond},
	} {
		w := newWorld(t, 61, impair.Profile{Delay: c.oneWay})
		alice := w.host("alice", Config{Players: 3})
		bob := w.join("bob", RolePlayer, alice, Config{})
		carol := w.join("carol", RolePlayer, alice, Config{})
		if !w.runUntil(5*time.Second, started(alice, bob, carol)) {
			t.Fatal("no start")
		}
		w.runFor(10 * time.Second)
		for _, m := range []*machine{bob, alice} {
			t0 := w.now()
			m.quit()
			if !w.runUntil(quitLimit, func() bool { return m.s.Done() }) {
				t.Fatalf("%v: %s still quitting", c.oneWay, m.name)
			}
			took := w.now() - t0
			if took > c.limit || m.s.Err() != nil {
				t.Errorf("%v one way: %s's quit took %v (limit %v), err %v", c.oneWay, m.name, took, c.limit, m.s.Err())
			}
		}
		w.runFor(time.Second)
		// The removals went through: carol plays on alone, the others gone.
		if _, ok := removedAt(carol, "alice"); !ok || carol.s.Done() {
			t.Fatalf("%v: carol did not see alice's removal", c.oneWay)
		}
	}
}
