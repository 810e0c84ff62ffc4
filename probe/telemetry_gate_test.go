package probe

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
)

// Under an observer gate, an observer gets what the gate admits and
// nothing else: here one telemetry update a second from each player
// (instead of ten) and every reliable frame packet (its commands), no
// unreliable packet alone. Its frame still moves on, nothing held back
// was numbered (so nothing reads as loss), and no update rides on a
// reliable packet; the players between themselves are not gated.
func TestObserverGateThinsWhatObserversGet(t *testing.T) {
	w := newTMWorldWith(t, 2, 1, impair.Profile{Delay: 10 * time.Millisecond}, 17, func(_ int, c *Config) { c.Telemetry = true })
	const obs = netcore.PeerID(3)
	var asked, relUpdates int
	for _, m := range w.ms[:2] {
		next := time.Duration(0)
		m.peer.SetObserverGate(func(now time.Duration, to netcore.PeerID, n int, update, reliable bool) bool {
			if to != obs {
				t.Errorf("gate asked about %d, a player", to)
			}
			asked++
			if update {
				if reliable {
					relUpdates++
				}
				if now < next {
					return false
				}
				next = now + time.Second
				return true
			}
			return reliable
		})
	}
	log := w.logSends(time.Second)
	w.sched.RunUntil(20 * time.Second)
	for k, n := range log.last {
		switch {
		case k[1] == obs && (n < 15 || n > 21):
			t.Errorf("stream %d→observer: %d updates in 20 s, want one a second", k[0], n)
		case k[1] != obs && n < 150:
			t.Errorf("stream %d→%d: %d updates in 20 s, want ten a second", k[0], k[1], n)
		}
	}
	if asked == 0 || relUpdates != 0 {
		t.Errorf("gate asked %d times, %d times for an update on a reliable packet", asked, relUpdates)
	}
	o := w.ms[2].peer
	if f := o.View(w.sched.Now()).Frame; f < 500 {
		t.Errorf("the observer is at frame %d after 20 s at 30 fps", f)
	}
	for _, id := range []netcore.PeerID{1, 2} {
		st, _ := o.ep.Stats(id)
		if st.Loss.Expected == 0 || st.Loss.Missing != 0 {
			t.Errorf("observer's link from %d: %d expected, %d missing; want none missing", id, st.Loss.Expected, st.Loss.Missing)
		}
	}
	if !matrixKnown(o.Matrix(w.sched.Now())) {
		t.Error("the observer's matrix is not complete")
	}
}

func matrixKnown(m feed.MatrixView) bool {
	for _, row := range m.Players {
		if !row.Known {
			return false
		}
	}
	return len(m.Players) == 2
}
