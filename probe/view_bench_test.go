package probe

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/rungs"
)

// BenchmarkView is one machine of eight taking its picture (every front
// end's once-per-update cost): the links are typed values, so a link adds
// no allocation of its own beyond the slices the View holds.
func BenchmarkView(b *testing.B) {
	b.ReportAllocs()
	w := newTMWorld(b, 8, 0, true, impair.Profile{Delay: 5 * time.Millisecond}, 4, rungs.Timing{})
	w.sched.RunUntil(10 * time.Second)
	now := w.sched.Now()
	p := w.ms[0].peer
	b.ResetTimer()
	for range b.N {
		if v := p.View(now); len(v.Links) != 7 {
			b.Fatalf("%d links", len(v.Links))
		}
	}
}
