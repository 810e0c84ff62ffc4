package incident

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// world is a hand-made session for the detector: every player's row with
// its cumulative waits for each other player and its links' round trips,
// read by the detector once a second as a machine's engine hands it over.
type world struct {
	names []string
	// caused, frames: cumulative waits of row i for column j.
	caused [][]time.Duration
	frames [][]int
	// srtt and unacked per directed link; process per player.
	srtt, unacked [][]time.Duration
	sent, miss    [][]uint64
	process       []time.Duration
	d             Detector
	lines         []feed.Incident
	at            time.Duration
}

func newWorld(rtt time.Duration, names ...string) *world {
	n := len(names)
	w := &world{names: names, process: make([]time.Duration, n)}
	grid := func() [][]time.Duration {
		g := make([][]time.Duration, n)
		for i := range g {
			g[i] = make([]time.Duration, n)
		}
		return g
	}
	w.caused, w.srtt, w.unacked = grid(), grid(), grid()
	w.frames = make([][]int, n)
	w.sent, w.miss = make([][]uint64, n), make([][]uint64, n)
	for i := range n {
		w.frames[i] = make([]int, n)
		w.sent[i], w.miss[i] = make([]uint64, n), make([]uint64, n)
		w.process[i] = 5 * time.Millisecond
		for j := range n {
			w.srtt[i][j] = rtt
		}
	}
	return w
}

func (w *world) idx(name string) int { return slices.Index(w.names, name) }

// wait has machine `who` wait `d` for `forWhom` on `frames` frames.
func (w *world) wait(who, forWhom string, d time.Duration, frames int) {
	i, j := w.idx(who), w.idx(forWhom)
	w.caused[i][j] += d
	w.frames[i][j] += frames
}

// setRTT sets the round trip of every link between a and b.
func (w *world) setRTT(a, b string, d time.Duration) {
	i, j := w.idx(a), w.idx(b)
	w.srtt[i][j], w.srtt[j][i] = d, d
}

// tick advances the world a second: every link carries 60 datagrams each
// way, and the detector reads the matrix.
func (w *world) tick() {
	w.at += time.Second
	n := len(w.names)
	m := feed.MatrixView{}
	for i, a := range w.names {
		row := feed.MatrixPlayer{Name: a, Known: true, Self: i == 0}
		p := w.process[i]
		row.Process = &p
		for j, b := range w.names {
			if i == j {
				continue
			}
			w.sent[i][j] += 60
			l := feed.MatrixLink{Caused: w.caused[i][j], Frames: w.frames[i][j], Unacked: w.unacked[i][j]}
			l.From, l.To = a, b
			l.RTTKnown, l.SRTT, l.RTTVAR = true, w.srtt[i][j], 2*time.Millisecond
			l.LossKnown, l.Expected, l.Missing = true, w.sent[j][i], w.miss[j][i]
			row.Links = append(row.Links, l)
		}
		m.Players = append(m.Players, row)
	}
	_ = n
	w.lines = w.d.Observe(w.lines, Input{At: w.at, Start: 0, Frame: int(w.at / (time.Second / 30)), FPS: 30, Rung: 1, Matrix: &m})
}

func (w *world) run(d time.Duration, each func()) {
	for end := w.at + d; w.at < end; {
		if each != nil {
			each()
		}
		w.tick()
	}
}

func opens(lines []feed.Incident) []feed.Incident {
	var out []feed.Incident
	for _, l := range lines {
		if l.Phase == vocab.IncidentOpen {
			out = append(out, l)
		}
	}
	return out
}

func who(inc feed.Incident) string {
	switch {
	case inc.Player != nil:
		return *inc.Player
	case inc.Between != nil:
		return inc.Between[0] + "–" + inc.Between[1]
	}
	return "nobody"
}

// A single late frame is no episode: one stall of 200 ms on every machine
// opens no incident; three stalls of 100 ms within 2 s do, and name the
// one waited for.
func TestOneStallOpensNoneThreeDo(t *testing.T) {
	w := newWorld(40*time.Millisecond, "ana", "bea", "cat", "dan")
	w.run(30*time.Second, nil)
	for _, m := range []string{"ana", "cat", "dan"} {
		w.wait(m, "bea", 200*time.Millisecond, 1)
	}
	w.run(15*time.Second, nil)
	if o := opens(w.lines); len(o) != 0 {
		t.Fatalf("one 200 ms stall opened %d incidents: %s", len(o), o[0].Text)
	}

	// Two stalls within one second and the third in the next: the
	// detector reads the matrix once a second.
	for _, stalls := range []int{2, 1} {
		for _, m := range []string{"ana", "cat", "dan"} {
			w.wait(m, "bea", time.Duration(stalls)*100*time.Millisecond, stalls)
		}
		w.tick()
	}
	w.run(time.Second, nil)
	o := opens(w.lines)
	if len(o) != 1 || who(o[0]) != "bea" {
		t.Fatalf("three 100 ms stalls within 2 s opened %v, want one incident of bea's", o)
	}
	// Back within the baselines: it closes, 5 s of calm later at the
	// earliest.
	w.run(12*time.Second, nil)
	last := w.lines[len(w.lines)-1]
	if last.Phase != vocab.IncidentClose || last.ClosedMs == nil {
		t.Fatalf("last line %s %q, want the close", last.Phase, last.Text)
	}
	if last.WaitMs != 900 || last.FramesWaited != 9 {
		t.Errorf("its cost: %.0f ms on %d frames, want 900 ms on 9", last.WaitMs, last.FramesWaited)
	}
}

// A player whose connection slows down: everyone waits for it and its
// links' round trips rise; the incident is its, cause latency, with the
// rise in added_ms. It stays open as long as the rise lasts (the
// baseline is frozen meanwhile) and closes once it is gone.
func TestSlowPlayerIsItsOwnIncidentAndTheBaselineHolds(t *testing.T) {
	w := newWorld(40*time.Millisecond, "ana", "bea", "cat", "dan")
	w.run(30*time.Second, nil)
	for _, o := range []string{"ana", "cat", "dan"} {
		w.setRTT("bea", o, 280*time.Millisecond)
	}
	w.run(3*time.Minute, func() {
		for _, m := range []string{"ana", "cat", "dan"} {
			w.wait(m, "bea", 150*time.Millisecond, 3)
		}
		for _, o := range []string{"ana", "cat", "dan"} {
			w.wait("bea", o, 60*time.Millisecond, 1)
		}
	})
	o := opens(w.lines)
	if len(o) != 1 || who(o[0]) != "bea" {
		t.Fatalf("opened %v, want one incident of bea's", o)
	}
	for _, l := range w.lines {
		if l.Phase == vocab.IncidentClose {
			t.Fatalf("closed during the 3 minutes of the rise: %s", l.Text)
		}
	}
	last := w.lines[len(w.lines)-1]
	if last.Cause != vocab.CauseLatency || last.AddedMs == nil || *last.AddedMs != 240 {
		t.Errorf("cause %s, added %v, want latency and 240 ms", last.Cause, last.AddedMs)
	}
	for _, o := range []string{"ana", "cat", "dan"} {
		w.setRTT("bea", o, 40*time.Millisecond)
	}
	w.run(12*time.Second, nil)
	if l := w.lines[len(w.lines)-1]; l.Phase != vocab.IncidentClose {
		t.Fatalf("10 s after the rise ended, the last line is %s: %q", l.Phase, l.Text)
	}
}

// A knock-on chain is followed to its root: dan waits for bea (bea's own
// links rose), and ana and cat wait for dan, whose frames come late
// because dan waited. The incident is bea's; dan is named nowhere.
func TestKnockOnWaitsFollowTheChainToItsRoot(t *testing.T) {
	w := newWorld(20*time.Millisecond, "ana", "bea", "cat", "dan")
	w.run(30*time.Second, nil)
	for _, o := range []string{"ana", "cat", "dan"} {
		w.setRTT("bea", o, 215*time.Millisecond)
	}
	w.run(20*time.Second, func() {
		w.wait("dan", "bea", 400*time.Millisecond, 6)
		w.wait("ana", "dan", 380*time.Millisecond, 6)
		w.wait("cat", "dan", 380*time.Millisecond, 6)
		w.wait("ana", "bea", 20*time.Millisecond, 1)
		w.wait("cat", "bea", 20*time.Millisecond, 1)
	})
	o := opens(w.lines)
	if len(o) != 1 || who(o[0]) != "bea" {
		t.Fatalf("opened %v, want one incident of bea's", o)
	}
	for _, l := range w.lines {
		if who(l) == "dan" {
			t.Errorf("dan, who only waited for bea, is named: %s", l.Text)
		}
	}
}

// PassedOn moves each second's waits recorded for a knock-on to the root
// of its chain as they come, incident or not, and a slow player's waits
// for a machine stalled on it (its own delay, come round) to itself; the
// waits for a player's own side stay where the machines recorded them.
// want is what moves to (positive) or from (negative) each player every
// second of the pattern; the first second, before the window holds the
// chain, may stay where it was recorded.
func TestPassedOnCountsKnockOnWaitsToTheRoot(t *testing.T) {
	type wait struct {
		who, forWhom string
		d            time.Duration
		frames       int
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		each     []wait
		want     map[string]time.Duration
		incident bool   // an incident opens on the pattern
		rose     string // a player whose round trips to all others rose by 200 ms
	}{
		{
			name: "chain",
			each: []wait{{"dan", "bea", 400 * ms, 6}, {"ana", "dan", 380 * ms, 6}, {"cat", "dan", 380 * ms, 6},
				{"ana", "bea", 20 * ms, 1}, {"cat", "bea", 20 * ms, 1}},
			want:     map[string]time.Duration{"bea": 760 * ms, "dan": -760 * ms},
			incident: true,
		},
		{
			name: "two links",
			each: []wait{{"dan", "bea", 400 * ms, 6}, {"cat", "dan", 390 * ms, 6}, {"ana", "cat", 380 * ms, 6},
				{"ana", "bea", 10 * ms, 1}},
			want:     map[string]time.Duration{"bea": 770 * ms, "dan": -390 * ms, "cat": -380 * ms},
			incident: true,
		},
		{
			name:     "own side",
			each:     []wait{{"ana", "bea", 300 * ms, 5}, {"cat", "bea", 300 * ms, 5}, {"dan", "bea", 300 * ms, 5}},
			want:     map[string]time.Duration{},
			incident: true,
		},
		{
			// bea's side is slow: cat and dan wait for it, and ana, who
			// waits for it too, sends late to bea in turn.
			name: "come round",
			each: []wait{{"ana", "bea", 300 * ms, 5}, {"bea", "ana", 300 * ms, 5}, {"cat", "bea", 300 * ms, 5},
				{"dan", "bea", 300 * ms, 5}},
			want:     map[string]time.Duration{"bea": 300 * ms, "ana": -300 * ms},
			incident: true,
		},
		{
			// A queue on bea's own line (its round trips rose to every
			// other player): dan waits for bea; ana, cat and bea itself
			// wait for dan, who sends late to all of them.
			name: "root's own side, come round",
			rose: "bea",
			each: []wait{{"dan", "bea", 950 * ms, 8}, {"ana", "dan", 930 * ms, 8}, {"cat", "dan", 700 * ms, 7},
				{"bea", "dan", 940 * ms, 8}},
			want:     map[string]time.Duration{"bea": 2570 * ms, "dan": -2570 * ms},
			incident: true,
		},
		{
			// The same queue where bea, its own commands late to every
			// machine, waits for dan longer than dan waits for bea: dan's
			// waits for bea are still all it makes the others wait.
			name: "root's own side, come round longer",
			rose: "bea",
			each: []wait{{"dan", "bea", 900 * ms, 8}, {"ana", "dan", 880 * ms, 8}, {"cat", "dan", 700 * ms, 7},
				{"bea", "dan", 1200 * ms, 9}},
			want:     map[string]time.Duration{"bea": 2780 * ms, "dan": -2780 * ms},
			incident: true,
		},
		{
			name: "chain without an incident",
			each: []wait{{"dan", "bea", 150 * ms, 1}, {"ana", "dan", 140 * ms, 1}, {"cat", "dan", 140 * ms, 1}},
			want: map[string]time.Duration{"bea": 280 * ms, "dan": -280 * ms},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(20*time.Millisecond, "ana", "bea", "cat", "dan")
			w.run(30*time.Second, nil)
			for _, o := range w.names {
				if tc.rose != "" && o != tc.rose {
					w.setRTT(tc.rose, o, 220*time.Millisecond)
				}
			}
			const secs = 10
			w.run(secs*time.Second, func() {
				for _, x := range tc.each {
					w.wait(x.who, x.forWhom, x.d, x.frames)
				}
			})
			o := opens(w.lines)
			if got := len(o) > 0; got != tc.incident {
				t.Errorf("an incident opened: %v, want %v", got, tc.incident)
			}
			for _, l := range w.lines {
				if l.Player == nil || tc.want[*l.Player] < 0 {
					t.Errorf("an incident line names %s: %s", who(l), l.Text)
				}
			}
			var sum time.Duration
			for _, name := range w.names {
				got := w.d.PassedOn(name)
				sum += got
				want := tc.want[name]
				lo, hi := min(want*(secs-1), want*secs), max(want*(secs-1), want*secs)
				if got < lo || got > hi {
					t.Errorf("PassedOn(%s) = %v, want %v to %v", name, got, lo, hi)
				}
			}
			if sum != 0 {
				t.Errorf("the waits moved add up to %v, want 0", sum)
			}
		})
	}
}

// A queue on bea's own line, the waits noisy from second to second as a
// live session's are: cat stalls on bea; ana and dan wait about as long,
// now for bea and now for cat (whichever's late commands came last); bea,
// its commands late to all, waits in turn for whichever of them sends
// last, sometimes longer than cat waited for it. Over many seeds no
// incident names cat, ana or dan, and the waits their own delay made
// (what the machines recorded for them plus PassedOn: what the waits rule
// reads) stay below bea's.
func TestNoisyKnockOnsFollowTheRoot(t *testing.T) {
	ms := time.Millisecond
	others := []string{"ana", "cat", "dan"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		w := newWorld(20*ms, "ana", "bea", "cat", "dan")
		w.run(30*time.Second, nil)
		for _, o := range others {
			w.setRTT("bea", o, 20*ms+time.Duration(300+rng.IntN(200))*ms)
		}
		// The waits recorded for each player, its column of the matrix.
		recorded := func(name string) time.Duration {
			i := w.idx(name)
			var c time.Duration
			for j := range w.names {
				c += w.caused[j][i]
			}
			return c
		}
		caused0 := map[string]time.Duration{}
		for _, name := range w.names {
			caused0[name] = recorded(name)
		}
		w.run(20*time.Second, func() {
			cat := time.Duration(400+rng.IntN(400)) * ms
			w.wait("cat", "bea", cat, 6+rng.IntN(4))
			for _, m := range []string{"ana", "dan"} {
				total := cat + time.Duration(rng.IntN(120)-60)*ms
				f := rng.Float64()
				onBea := time.Duration(f * float64(total))
				if onBea > 0 {
					w.wait(m, "bea", onBea, 1+int(f*6))
				}
				if total-onBea > 0 {
					w.wait(m, "cat", total-onBea, 1+int((1-f)*6))
				}
			}
			if rng.IntN(3) > 0 {
				d := time.Duration(rng.IntN(int(cat/ms)+300)) * ms
				w.wait("bea", others[rng.IntN(3)], d, 1+rng.IntN(6))
			}
		})
		for _, l := range w.lines {
			if l.Player == nil || *l.Player != "bea" {
				t.Errorf("seed %d: an incident line names %s: %s", seed, who(l), l.Text)
			}
		}
		own := func(name string) time.Duration { return recorded(name) - caused0[name] + w.d.PassedOn(name) }
		for _, o := range others {
			if own(o) >= own("bea") {
				t.Errorf("seed %d: %s's own waits %v, bea's %v", seed, o, own(o), own("bea"))
			}
		}
	}
}

// Three players, one slow path: ana and cat wait for each other, bea's
// links to both are fast. The incident is the path's.
func TestOneSlowPathIsThePathsIncident(t *testing.T) {
	w := newWorld(20*time.Millisecond, "ana", "bea", "cat")
	w.run(30*time.Second, nil)
	w.setRTT("ana", "cat", 260*time.Millisecond)
	w.run(10*time.Second, func() {
		w.wait("ana", "cat", 300*time.Millisecond, 5)
		w.wait("cat", "ana", 300*time.Millisecond, 5)
		w.wait("bea", "ana", 40*time.Millisecond, 1)
		w.wait("bea", "cat", 40*time.Millisecond, 1)
	})
	o := opens(w.lines)
	if len(o) != 1 || o[0].Between == nil || *o[0].Between != [2]string{"ana", "cat"} {
		t.Fatalf("opened %v, want one incident between ana and cat", o)
	}
	last := w.lines[len(w.lines)-1]
	if last.Cause != vocab.CauseLatency {
		t.Errorf("cause %s, want latency", last.Cause)
	}
}

// A machine that waits for no one while the others wait for it, its
// links fine and a frame taking it longer than the frame rate allows: its
// processing.
func TestSlowMachineIsProcessing(t *testing.T) {
	w := newWorld(20*time.Millisecond, "ana", "bea", "cat", "dan")
	w.run(30*time.Second, nil)
	w.process[w.idx("cat")] = 55 * time.Millisecond
	w.run(10*time.Second, func() {
		for _, m := range []string{"ana", "bea", "dan"} {
			w.wait(m, "cat", 250*time.Millisecond, 8)
		}
	})
	o := opens(w.lines)
	if len(o) != 1 || who(o[0]) != "cat" {
		t.Fatalf("opened %v, want one incident of cat's", o)
	}
	if last := w.lines[len(w.lines)-1]; last.Cause != vocab.CauseProcessing {
		t.Errorf("cause %s (%q), want processing", last.Cause, last.Text)
	}
}

// A healthy but jittery session opens nothing: waits of a few tens of
// milliseconds come and go on every link, and round trips move ±15 ms.
func TestJitteryButHealthyOpensNone(t *testing.T) {
	w := newWorld(60*time.Millisecond, "ana", "bea", "cat", "dan")
	k := 0
	w.run(5*time.Minute, func() {
		k++
		for i, a := range w.names {
			for j, b := range w.names {
				if i < j {
					w.setRTT(a, b, 60*time.Millisecond+time.Duration((k*7+i*3+j*5)%31-15)*time.Millisecond)
				}
			}
		}
		if k%3 == 0 {
			w.wait(w.names[k%4], w.names[(k+1)%4], time.Duration(20+k%40)*time.Millisecond, 1)
		}
	})
	if o := opens(w.lines); len(o) != 0 {
		t.Fatalf("opened %d incidents: %s", len(o), o[0].Text)
	}
}

// matrixOf is a session of n players as the engine keeps its matrix: every
// row's links known, 30 ms round trips, 5 ms of processing.
func matrixOf(n int) ([]string, feed.MatrixView) {
	names := make([]string, n)
	for i := range names {
		names[i] = "p" + string(rune('a'+i/26)) + string(rune('a'+i%26))
	}
	m := feed.MatrixView{}
	for i, a := range names {
		row := feed.MatrixPlayer{Name: a, Known: true, Self: i == 0}
		p := 5 * time.Millisecond
		row.Process = &p
		for j, c := range names {
			if i != j {
				l := feed.MatrixLink{}
				l.From, l.To = a, c
				l.RTTKnown, l.SRTT, l.RTTVAR = true, 30*time.Millisecond, 2*time.Millisecond
				l.LossKnown = true
				row.Links = append(row.Links, l)
			}
		}
		m.Players = append(m.Players, row)
	}
	return names, m
}

// BenchmarkObserve64 is one evaluation of a 64-player session: every
// row's 63 links, waits growing on one player. The detector runs once a
// second (Every), so ns/op over 1e9 is the share of a core it takes; the
// matrix is built once, as the engine keeps it, and only its figures move.
func BenchmarkObserve64(b *testing.B) {
	const n = 64
	names, m := matrixOf(n)
	var d Detector
	var lines []feed.Incident
	at := time.Duration(0)
	step := func() {
		at += time.Second
		for i := range m.Players {
			for k := range m.Players[i].Links {
				l := &m.Players[i].Links[k]
				l.Expected += 60
				if l.To == names[0] && i < 4 {
					l.Caused += 50 * time.Millisecond
					l.Frames++
				}
			}
		}
		lines = d.Observe(lines[:0], Input{At: at, Frame: int(at / (time.Second / 30)), FPS: 30, Rung: 1, Matrix: &m})
	}
	for range 30 {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		step()
	}
}

// nth finds what a sort would put at k, for every k, on inputs with
// repeats, runs and order of every kind: the baselines' medians stay the
// ones a sort gives.
func TestNthIsTheSortedElement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + rng.IntN(130)
		s := make([]time.Duration, n)
		for i := range s {
			switch trial % 4 {
			case 0:
				s[i] = time.Duration(rng.IntN(1_000_000))
			case 1:
				s[i] = time.Duration(rng.IntN(4)) // many repeats
			case 2:
				s[i] = time.Duration(i) // sorted
			default:
				s[i] = time.Duration(n - i) // reversed
			}
		}
		sorted := slices.Sorted(slices.Values(s))
		for _, k := range []int{0, n / 2, n - 1, rng.IntN(n)} {
			work := slices.Clone(s)
			if got := nth(work, k); got != sorted[k] {
				t.Fatalf("trial %d: nth(%v, %d) = %v, want %v", trial, s, k, got, sorted[k])
			}
		}
	}
}

// BenchmarkDetectorHeap64 is what a 64-player session's detector holds
// once every link's baseline is full (two minutes of calm evaluations and
// some): the heap in use after a collection, less before, as bytes per
// detector (B/detector) and per judged link (B/link).
func BenchmarkDetectorHeap64(b *testing.B) {
	const n = 64
	_, m := matrixOf(n)
	rng := rand.New(rand.NewPCG(5, 6))
	var held float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := new(Detector)
		var lines []feed.Incident
		for s := range baselineSpan + 30 {
			at := time.Duration(s+1) * time.Second
			for i := range m.Players {
				for k := range m.Players[i].Links {
					l := &m.Players[i].Links[k]
					l.Expected += 60
					l.SRTT = 30*time.Millisecond + time.Duration(rng.IntN(2000))*time.Microsecond
				}
			}
			lines = d.Observe(lines[:0], Input{At: at, Frame: int(at / (time.Second / 30)), FPS: 30, Rung: 1, Matrix: &m})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapInuse) - float64(before.HeapInuse)
		runtime.KeepAlive(d)
	}
	b.ReportMetric(held, "B/detector")
	b.ReportMetric(held/float64(n*(n-1)), "B/link")
}

// A calm link's baseline variation is the median of its calm variations,
// kept in varUnit steps (rounded to the nearest) and held at the most 16
// bits hold; the round trip's median stays whole microseconds.
func TestCalmBaselineKeepsVariationInSteps(t *testing.T) {
	cases := []struct {
		name    string
		rttvar  time.Duration
		wantVar time.Duration
	}{
		{"whole steps", 2 * time.Millisecond, 2 * time.Millisecond},
		{"rounded down", 2*time.Millisecond + 3*time.Microsecond, 2 * time.Millisecond},
		{"rounded up", 2*time.Millisecond + 5*time.Microsecond, 2*time.Millisecond + varUnit},
		{"none", 0, 0},
		{"held at the most", 2 * time.Second, math.MaxUint16 * varUnit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l link
			var sc []int32
			var sc16 []uint16
			for range baselineMin + 3 {
				l.known, l.rtt, l.rttvar = true, 30*time.Millisecond+7*time.Microsecond, c.rttvar
				l.calm(&sc, &sc16)
			}
			rtt, v, ok := l.baseline()
			if !ok {
				t.Fatalf("no baseline after %d calm evaluations", baselineMin+3)
			}
			if rtt != 30*time.Millisecond+7*time.Microsecond || v != c.wantVar {
				t.Errorf("baseline %v ± %v, want %v ± %v", rtt, v, 30*time.Millisecond+7*time.Microsecond, c.wantVar)
			}
		})
	}
}
