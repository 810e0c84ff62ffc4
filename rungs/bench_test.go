package rungs

import (
	"testing"
	"time"
)

// eightPlayers is a record with eight seated players, each with a fresh
// report carrying a round trip.
func eightPlayers(rtt time.Duration) *Record {
	rec := NewRecord(0, []int{1, 2, 3, 4, 5, 6, 7, 8})
	for p := 1; p <= 8; p++ {
		rec.Add(Report{Player: p, Frame: 1000, RTT: rtt + time.Duration(p)*time.Millisecond, HasRTT: true, Wait: ms(5), Process: ms(4)})
	}
	return rec
}

// One evaluation over an eight-player record allocates nothing, whether it
// holds, counts toward an improvement or sends an event.
func BenchmarkEvaluate(b *testing.B) {
	b.Run("players=8/hold", func(b *testing.B) {
		rec := eightPlayers(ms(150))
		m := NewMaster(0, RungTiming(1), 30)
		m.Observe(Decision{Frame: 64, Target: RungTiming(1), FPS: 30, Reason: Initial})
		b.ReportAllocs()
		for b.Loop() {
			m.Evaluate(1024, rec, 30)
		}
	})
	b.Run("players=8/worse", func(b *testing.B) {
		rec := eightPlayers(ms(1200))
		m := NewMaster(0, RungTiming(1), 30)
		want := Need(rec.Summary(1024).Worst, 30) // 1208 ms: 10/30
		b.ReportAllocs()
		for b.Loop() {
			// Put the target back to 1/4 so that every evaluation sends a
			// worsening.
			m.Observe(Decision{Frame: 64, Target: RungTiming(1), FPS: 30, Reason: Initial})
			if d, ok := m.Evaluate(1024, rec, 30); !ok || d.Target != want {
				b.Fatalf("Evaluate = %+v, %v; want a worsening to %v", d, ok, want)
			}
		}
	})
	b.Run("players=8/count", func(b *testing.B) {
		rec := eightPlayers(ms(100))
		m := NewMaster(0, RungTiming(5), 30)
		m.Observe(Decision{Frame: 64, Target: RungTiming(5), FPS: 30, Reason: Initial})
		b.ReportAllocs()
		for b.Loop() {
			// Every evaluation passes all four conditions; the count restarts
			// by hand so that no improvement is sent.
			m.TakeOver(0)
			if _, ok := m.Evaluate(1024, rec, 30); ok || m.inARow != 1 {
				b.Fatalf("count %d, want 1", m.inARow)
			}
		}
	})
}

func TestEvaluateAllocatesNothing_S9(t *testing.T) {
	rec := eightPlayers(ms(1200))
	m := NewMaster(0, StartTiming(), 30)
	frame := 0
	allocs := testing.AllocsPerRun(100, func() {
		frame += 256
		m.Evaluate(frame, rec, 30)
	})
	if allocs != 0 {
		t.Fatalf("Evaluate allocates %v times per run", allocs)
	}
}

func BenchmarkNeed(b *testing.B) {
	b.ReportAllocs()
	var sink Timing
	d := ms(1)
	for b.Loop() {
		sink = Need(d, 60)
		d += time.Millisecond
		if d > 30*time.Second {
			d = ms(1)
		}
	}
	_ = sink
}
