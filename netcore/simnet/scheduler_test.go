package simnet

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestEventsRunInTimeThenInsertionOrder(t *testing.T) {
	s := NewScheduler()
	var got []string
	add := func(at time.Duration, name string) { s.At(at, func() { got = append(got, name) }) }
	add(30*time.Millisecond, "c1")
	add(10*time.Millisecond, "a")
	add(30*time.Millisecond, "c2")
	add(20*time.Millisecond, "b")
	add(30*time.Millisecond, "c3")
	s.Run(nil)
	if want := []string{"a", "b", "c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if s.Now() != 30*time.Millisecond {
		t.Fatalf("Now = %v after the last event at 30ms", s.Now())
	}
}

// A heap-ordered random workload pops in exactly the order of a stable sort
// by time.
func TestHeapMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewScheduler()
	type rec struct {
		at time.Duration
		id int
	}
	var want, got []rec
	var cancelled []*Event
	for id := range 5000 {
		at := time.Duration(rng.IntN(200)) * time.Millisecond
		r := rec{at, id}
		e := s.At(at, func() { got = append(got, r) })
		if rng.IntN(10) == 0 {
			cancelled = append(cancelled, e)
		} else {
			want = append(want, r)
		}
	}
	for _, e := range cancelled {
		if !e.cancel() {
			t.Fatal("Cancel of a pending event reported false")
		}
	}
	slices.SortStableFunc(want, func(a, b rec) int { return int(a.at - b.at) })
	s.Run(nil)
	if !slices.Equal(got, want) {
		t.Fatal("events ran out of (time, insertion) order")
	}
}

func TestPastTimesRunAtNowAfterWhatIsDue(t *testing.T) {
	s := NewScheduler()
	var got []string
	s.At(50*time.Millisecond, func() {
		s.At(0, func() { got = append(got, "past") })
		s.after(0, func() { got = append(got, "now") })
	})
	s.At(50*time.Millisecond, func() { got = append(got, "due") })
	s.Run(nil)
	if want := []string{"due", "past", "now"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if s.Now() != 50*time.Millisecond {
		t.Fatalf("Now = %v, want 50ms: a past time must not move the clock back", s.Now())
	}
}

func TestCancelAndReschedule(t *testing.T) {
	s := NewScheduler()
	ran := map[string]time.Duration{}
	mark := func(name string) func() { return func() { ran[name] = s.Now() } }
	a := s.At(10*time.Millisecond, mark("a"))
	b := s.At(20*time.Millisecond, mark("b"))
	c := s.At(30*time.Millisecond, mark("c"))
	if !a.cancel() || a.cancel() || a.Pending() {
		t.Fatal("Cancel should succeed once")
	}
	b.reschedule(40 * time.Millisecond)
	s.RunUntil(35 * time.Millisecond)
	if _, ok := ran["a"]; ok {
		t.Fatal("a cancelled event ran")
	}
	if ran["c"] != 30*time.Millisecond || s.Now() != 35*time.Millisecond {
		t.Fatalf("ran %v, now %v", ran, s.Now())
	}
	if c.cancel() {
		t.Fatal("Cancel of an event that ran reported true")
	}
	// An event that ran, or was cancelled, can be armed again.
	c.reschedule(36 * time.Millisecond)
	a.reschedule(0) // past: runs at Now
	s.Run(nil)
	if ran["a"] != 35*time.Millisecond || ran["c"] != 36*time.Millisecond || ran["b"] != 40*time.Millisecond {
		t.Fatalf("ran %v", ran)
	}
	if b.time() != 40*time.Millisecond {
		t.Fatalf("b.Time() = %v", b.time())
	}
}

func TestRunUntilAndStop(t *testing.T) {
	s := NewScheduler()
	count := 0
	var tick func()
	tick = func() { count++; s.after(10*time.Millisecond, tick) }
	s.At(0, tick)
	s.RunUntil(95 * time.Millisecond)
	if count != 10 || s.Now() != 95*time.Millisecond {
		t.Fatalf("count %d, now %v; want 10 ticks (0..90ms) and now 95ms", count, s.Now())
	}
	if at, ok := s.Next(); !ok || at != 100*time.Millisecond || s.Pending() != 1 {
		t.Fatalf("Next = %v, %v; Pending %d", at, ok, s.Pending())
	}
	s.Run(func() bool { return count == 15 })
	if count != 15 || s.Now() != 140*time.Millisecond {
		t.Fatalf("Run stopped at count %d, now %v", count, s.Now())
	}
	empty := NewScheduler()
	if empty.Step() {
		t.Fatal("Step on an empty scheduler reported an event")
	}
	empty.RunUntil(time.Second)
	if empty.Now() != time.Second {
		t.Fatalf("RunUntil with no events left the clock at %v", empty.Now())
	}
}

// BenchmarkScheduler measures a steady queue of pending events: each event
// run schedules one more, as timers re-arm in a simulation.
func BenchmarkScheduler(b *testing.B) {
	for _, pending := range []int{16, 1024, 65536} {
		b.Run("pending="+strconv.Itoa(pending), func(b *testing.B) {
			s := NewScheduler()
			rng := rand.New(rand.NewPCG(1, 1))
			var fn func()
			fn = func() { s.after(time.Duration(rng.IntN(1000))*time.Microsecond, fn) }
			for range pending {
				s.after(time.Duration(rng.IntN(1000))*time.Microsecond, fn)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Step()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkReschedule is the allocation-free way to re-arm a timer.
func BenchmarkReschedule(b *testing.B) {
	s := NewScheduler()
	var e *Event
	e = s.At(0, func() { e.reschedule(s.Now() + time.Millisecond) })
	for range 1023 {
		s.At(time.Duration(1<<62), func() {}) // never due: a standing queue
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Step()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
