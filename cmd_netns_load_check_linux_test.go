package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"
)

// The load test's checks of what the runs printed and what the counters
// saw (cmd_netns_load_linux_test.go).

// loadLine is a `load` event as the test reads it.
type loadLine struct {
	TMs       float64 `json:"t_ms"`
	From, To  string
	IdleRTTMS *float64 `json:"idle_rtt_ms"`
	Upload    *loadDir
	Download  *loadDir
	Both      *struct {
		AddedMS *float64 `json:"added_ms"`
		Loss    *float64
	}
	Where *struct {
		Link    string
		TTL     int
		AddedMS float64 `json:"added_ms"`
	}
	Cost *struct {
		FramesLate int     `json:"frames_late"`
		MaxWaitMS  float64 `json:"max_wait_ms"`
		RungFrom   int     `json:"rung_from"`
		RungTo     int     `json:"rung_to"`
		ForMS      float64 `json:"for_ms"`
	}
	Stopped *string
}

type loadDir struct {
	AddedMS    *float64 `json:"added_ms"`
	P90AddedMS *float64 `json:"p90_added_ms"`
	Mbps       *float64
	Loss       *float64
	Grade      *string
	Capped     bool
}

func (d *loadDir) String() string {
	if d == nil {
		return "null"
	}
	f := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	g := "null"
	if d.Grade != nil {
		g = *d.Grade
	}
	return fmt.Sprintf("grade %s added %s ms (p90 %s) %s Mbit/s loss %s capped %v", g, f(d.AddedMS), f(d.P90AddedMS), f(d.Mbps), f(d.Loss), d.Capped)
}

func (d *loadDir) grade() string {
	if d == nil || d.Grade == nil {
		return "null"
	}
	return *d.Grade
}

// onlyLoad is the one load event of p's own test, toward to.
func onlyLoad(t *testing.T, p *proc, to string) loadLine {
	t.Helper()
	var es []ndjson
	for _, e := range p.of("load") {
		if e.str("from") == p.name {
			es = append(es, e)
		}
	}
	if len(es) != 1 {
		t.Fatalf("%s printed %d load events of its own test, want 1: %v\n%v", p.name, len(es), es, p.of("message"))
	}
	b, _ := json.Marshal(es[0])
	var l loadLine
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if l.From != p.name || l.To != to {
		t.Fatalf("%s's load event is from %s to %s, want to %s", p.name, l.From, l.To, to)
	}
	t.Logf("%s→%s at t_ms %.0f: idle %v ms; upload %v; download %v; where %+v; cost %+v; stopped %s",
		l.From, l.To, l.TMs, numOrNull(l.IdleRTTMS), l.Upload, l.Download, l.Where, l.Cost, textOrNull(l.Stopped))
	return l
}

func numOrNull(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

// testWindow is one test as the wire and its event place it: the first
// and last reading of its load at the tester's router, the bursts between
// and the event's time, all on this process's clock.
type testWindow struct {
	p          *proc
	load, done time.Time
	bursts     []burst
	ev         loadLine
}

// windowOf finds p's test in the run: the bursts of the load counters of
// its home's router (a pause of a second or more splits them), and its
// event's time.
func windowOf(t *testing.T, r *loadRun, router string, p *proc, ev loadLine) testWindow {
	t.Helper()
	bs := bursts(r.smp.series(router, "up", "down"), time.Second)
	if len(bs) == 0 {
		t.Fatalf("%s: no load crossed its router", p.name)
	}
	w := testWindow{p: p, load: bs[0].from, bursts: bs, ev: ev, done: r.smp.wallOf(p, ev.TMs)}
	origin := r.smp.wallOf(p, 0)
	var desc []string
	for _, b := range bs {
		desc = append(desc, fmt.Sprintf("t_ms %.0f–%.0f (%v) %d kB", ms(b.from.Sub(origin)), ms(b.to.Sub(origin)), b, b.bytes/1000))
	}
	t.Logf("%s: load bursts at its router %v; its load event at t_ms %.0f", p.name, desc, ev.TMs)
	// Load flows only inside its test: a test lasts at most 30 s and
	// ends when its event is published. The tester's own load stops
	// then; the peer's stops when the tester's stop reaches it, or a
	// second after the tester's last pace command, which waits in the
	// tester's upload queue on its way. The sampler reads the end of a
	// burst up to a period late.
	slack := countEvery + 50*time.Millisecond
	up := bursts(r.smp.series(router, "up"), time.Second)
	down := bursts(r.smp.series(router, "down"), time.Second)
	if len(up) == 0 || len(down) == 0 {
		t.Fatalf("%s: %d bursts of upload and %d of download at its router", p.name, len(up), len(down))
	}
	if last := up[len(up)-1].to; last.After(w.done.Add(slack)) {
		t.Errorf("%s's upload crossed its router at t_ms %.0f, after its load event (%.0f)", p.name, ms(last.Sub(origin)), ev.TMs)
	}
	queued := 0.0
	if ev.Upload != nil && ev.Upload.P90AddedMS != nil {
		queued = *ev.Upload.P90AddedMS
	}
	if last := down[len(down)-1].to; last.After(w.done.Add(time.Second + time.Duration(queued*float64(time.Millisecond)) + slack)) {
		t.Errorf("%s's download crossed its router at t_ms %.0f, more than a second and its upload queue (%.0f ms) after its load event (%.0f)",
			p.name, ms(last.Sub(origin)), queued, ev.TMs)
	}
	if w.load.Before(w.done.Add(-30 * time.Second)) {
		t.Errorf("%s: load crossed its router %v before its load event: more than a test's 30 s", p.name, w.done.Sub(w.load))
	}
	return w
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// checkFirstRun: both tests complete, one after the other, with the
// grades and figures of their queues, the delay placed at home 1's
// uplink, the diagnosis naming home 1's bufferbloat, nothing relayed, and
// the game going on through both.
func checkFirstRun(t *testing.T, r *loadRun, q float64) {
	ev1, ev2 := onlyLoad(t, r.p1, "ada"), onlyLoad(t, r.p2, "ada")
	for _, ev := range []loadLine{ev1, ev2} {
		if ev.Stopped != nil {
			t.Fatalf("%s's test stopped %q: both complete, one waiting its turn", ev.From, *ev.Stopped)
		}
	}
	if g := ev1.Upload.grade(); g != "D" && g != "F" {
		t.Errorf("p1's upload graded %s, want D or F: its queue holds 500 ms", g)
	}
	if ev1.Upload != nil && ev1.Upload.AddedMS != nil {
		a := *ev1.Upload.AddedMS
		t.Logf("p1's upload adds %.1f ms; the bare echo through the same queue, loaded the same way, %.1f ms (%+.1f %%)", a, q, 100*(a-q)/q)
		if math.Abs(a-q) > 0.25*q {
			t.Errorf("p1's upload adds %.1f ms, the bare echo measures %.1f ms: want within 25 %%", a, q)
		}
	} else {
		t.Errorf("p1's upload has no added round trip: %v", ev1.Upload)
	}
	if g := ev2.Upload.grade(); g != "A" && g != "A+" {
		t.Errorf("p2's upload graded %s, want A or A+: its queue holds 10 ms", g)
	}
	for _, ev := range []loadLine{ev1, ev2} {
		if g := ev.Download.grade(); g != "A+" {
			t.Errorf("%s's download graded %s, want A+: nothing shapes the host's side", ev.From, g)
		}
	}
	// The where reads the trace over each loaded hold alone, so the hop it
	// names adds what the queue holds, as the bare echo measures it.
	if w := ev1.Where; w == nil || w.Link != "uplink" || w.TTL != 2 || math.Abs(w.AddedMS-q) > 0.25*q {
		t.Errorf("p1's where %+v, want the uplink at hop 2 adding within 25 %% of the bare echo's %.1f ms: its queue is its router's WAN egress", ev1.Where, q)
		logTrace(t, r.p1, "ada", ev1.TMs-30000, ev1.TMs)
	}
	w1 := windowOf(t, r, r.smp.ns[0], r.p1, ev1)
	w2 := windowOf(t, r, r.smp.ns[1], r.p2, ev2)
	logHoldRate(t, r, r.smp.ns[0], "p1")
	logHoldRate(t, r, r.smp.ns[1], "p2")
	checkOneAtATime(t, w1, w2)
	checkDirect(t, r, [][2]*proc{{r.p1, r.host}, {r.p2, r.host}})
	checkStalls(t, r, []testWindow{w1, w2})
	firstLoad, lastDone := w1.load, w2.done
	if w2.load.Before(firstLoad) {
		firstLoad, lastDone = w2.load, w1.done
	}
	for _, w := range []testWindow{w1, w2} {
		checkFrames(t, r, w, firstLoad, lastDone)
	}
	checkBloatDiagnosis(t, r.p1, ev1.TMs)
	checkEveryoneTold(t, r, []*proc{r.p1, r.p2})
	for _, w := range []testWindow{w1, w2} {
		checkCostWhereItFalls(t, r, w, []*proc{r.host, r.p1, r.p2})
	}
	checkMaxLate(t, r)
}

// checkEveryoneTold: every machine of the run printed each tester's test
// once as load_start and once as load, the load line the tester's own
// (its t_ms aside), and load_start before it.
func checkEveryoneTold(t *testing.T, r *loadRun, testers []*proc) {
	for _, tester := range testers {
		var want string
		order := []*proc{tester}
		for _, p := range r.procs() {
			if p != tester {
				order = append(order, p)
			}
		}
		for _, p := range order {
			var starts, loads []ndjson
			for _, e := range p.of("load_start") {
				if e.str("from") == tester.name {
					starts = append(starts, e)
				}
			}
			for _, e := range p.of("load") {
				if e.str("from") == tester.name {
					loads = append(loads, e)
				}
			}
			if len(starts) != 1 || len(loads) != 1 {
				t.Errorf("%s printed %d load_start and %d load lines of %s's test, want one each", p.name, len(starts), len(loads), tester.name)
				continue
			}
			if starts[0].str("to") != loads[0].str("to") || starts[0].num("for_ms") != 25000 || starts[0].num("t_ms") > loads[0].num("t_ms") {
				t.Errorf("%s's load_start %v does not begin its load %v", p.name, starts[0], loads[0])
			}
			body := maps.Clone(map[string]any(loads[0]))
			delete(body, "t_ms")
			b, _ := json.Marshal(body)
			if p == tester {
				want = string(b)
				t.Logf("%s's test to %s: load_start at t_ms %.0f, load at %.0f", tester.name, loads[0].str("to"), starts[0].num("t_ms"), loads[0].num("t_ms"))
			} else if string(b) != want {
				t.Errorf("%s's load line of %s's test %s, want the tester's %s", p.name, tester.name, b, want)
			} else {
				t.Logf("%s printed it too: load_start at t_ms %.0f, load at %.0f", p.name, starts[0].num("t_ms"), loads[0].num("t_ms"))
			}
		}
	}
}

// checkCostWhereItFalls: the test's cost counts every seated machine's
// waits, as their stall lines show them. Each machine counts from its
// load_start to when the tester's end reaches it: after the tester's
// upload last crossed its router (less a counter period) and before its
// own load line. So frames_late is at least the frames any of them waited
// on in the narrower window and at most in the wider, and max_wait_ms the
// longest wait of either within a frame.
func checkCostWhereItFalls(t *testing.T, r *loadRun, w testWindow, seated []*proc) {
	cost := w.ev.Cost
	if cost == nil {
		t.Errorf("%s's test has no cost", w.p.name)
		return
	}
	ups := bursts(r.smp.series(r.smp.ns[slices.Index([]*proc{r.p1, r.p2}, w.p)], "up"), time.Second)
	if len(ups) == 0 {
		t.Errorf("%s's upload never crossed its router", w.p.name)
		return
	}
	end := ups[len(ups)-1].to.Add(-countEvery)
	narrow, wide := map[int]bool{}, map[int]bool{}
	longNarrow, longWide := 0.0, 0.0
	for _, p := range seated {
		var from, until float64 = -1, -1
		for _, e := range p.of("load_start") {
			if e.str("from") == w.p.name {
				from = e.num("t_ms")
			}
		}
		for _, e := range p.of("load") {
			if e.str("from") == w.p.name {
				until = e.num("t_ms")
			}
		}
		if from < 0 || until < 0 {
			t.Errorf("%s printed no load_start or load of %s's test", p.name, w.p.name)
			return
		}
		mid := r.smp.tmsOf(p, end)
		n, most := 0, 0.0
		for _, e := range p.of("stall") {
			at := e.num("t_ms")
			if e.str("player") != p.name || at < from || at > until {
				continue
			}
			wide[e.frame()] = true
			longWide = max(longWide, e.num("wait_ms"))
			if at <= mid {
				narrow[e.frame()] = true
				longNarrow = max(longNarrow, e.num("wait_ms"))
			}
			n++
			most = max(most, e.num("wait_ms"))
		}
		t.Logf("%s's test: %s waited on %d frames during it, the longest %.1f ms", w.p.name, p.name, n, most)
	}
	const frame = 1000.0 / 30
	t.Logf("%s's cost: frames_late %d, max_wait_ms %.1f; the stall lines: %d–%d frames, the longest %.1f–%.1f ms",
		w.p.name, cost.FramesLate, cost.MaxWaitMS, len(narrow), len(wide), longNarrow, longWide)
	if cost.FramesLate < len(narrow) || cost.FramesLate > len(wide) {
		t.Errorf("%s's frames_late %d, want the frames any seated machine waited on during the test: %d to %d", w.p.name, cost.FramesLate, len(narrow), len(wide))
	}
	if cost.MaxWaitMS < longNarrow-frame || cost.MaxWaitMS > longWide+frame {
		t.Errorf("%s's max_wait_ms %.1f, want the longest single wait of any seated machine during the test, %.1f to %.1f ms, within a frame",
			w.p.name, cost.MaxWaitMS, longNarrow, longWide)
	}
}

// checkMaxLate: no machine's frame loop was ever a second late.
func checkMaxLate(t *testing.T, r *loadRun) {
	for _, p := range r.procs() {
		sum := p.of("summary")
		if len(sum) != 1 {
			t.Errorf("%s printed %d summaries", p.name, len(sum))
			continue
		}
		proc, _ := sum[0]["process"].(map[string]any)
		late, ok := proc["max_late_ms"].(float64)
		t.Logf("%s: max_late_ms %v", p.name, proc["max_late_ms"])
		if !ok || late >= 1000 {
			t.Errorf("%s's max_late_ms %v, want under 1 s: the frame loop's own lateness", p.name, proc["max_late_ms"])
		}
	}
}

// logTrace logs, one line each, the path events p printed toward to
// between the t_ms from and to: what the trace showed while the test ran.
func logTrace(t *testing.T, p *proc, to string, from, until float64) {
	for _, e := range p.of("path") {
		if e.str("to") != to || e.num("t_ms") < from || e.num("t_ms") > until {
			continue
		}
		var hops []string
		for _, h := range e["hops"].([]any) {
			h := ndjson(h.(map[string]any))
			hops = append(hops, fmt.Sprintf("ttl %.0f %s sent %.0f median %v worst %v", h.num("ttl"), h.str("link"), h.num("sent"), h["rtt_ms"], h["worst_ms"]))
		}
		t.Logf("%s's trace to %s at t_ms %.0f: delay_starts %v; %v", p.name, to, e.num("t_ms"), e["delay_starts"], hops)
	}
}

// checkOneAtATime: the tests did not overlap. Whichever was granted the
// turn first had ended, by its own event's t_ms, 2 s (the later test's
// idle phase) before the other's load flowed, less a counter period for
// the reading of the load's start and a line period for the event's time;
// and the two loads' stretches on the wire are apart.
func checkOneAtATime(t *testing.T, a, b testWindow) {
	if b.load.Before(a.load) {
		a, b = b, a
	}
	aEnd := a.bursts[len(a.bursts)-1].to
	t.Logf("%s's test first: its load %v–%v, its event %v; %s's load from %v: %v after %s's event, %v after its load",
		a.p.name, a.load.Format("15:04:05.0"), aEnd.Format("15:04:05.0"), a.done.Format("15:04:05.0"), b.p.name,
		b.load.Format("15:04:05.0"), b.load.Sub(a.done).Round(time.Millisecond), a.p.name, b.load.Sub(aEnd).Round(time.Millisecond))
	if gap := b.load.Sub(a.done); gap < 2*time.Second-countEvery-sampleEvery {
		t.Errorf("%s's load began %v after %s's test ended (its load event): want its idle phase's 2 s after the end at least", b.p.name, gap, a.p.name)
	}
	if !aEnd.Before(b.load) {
		t.Errorf("%s's load began before %s's had stopped: the tests overlap", b.p.name, a.p.name)
	}
}

// checkDirect: each pair's link lines, from the tester, say direct every
// time, and the host relayed nothing.
func checkDirect(t *testing.T, r *loadRun, pairs [][2]*proc) {
	for _, pr := range pairs {
		n := 0
		for _, e := range pr[0].of("link") {
			if e.str("from") != pr[0].name || e.str("to") != pr[1].name {
				continue
			}
			n++
			if e.str("path") != "direct" {
				t.Errorf("%s→%s path %q at frame %d, want direct", pr[0].name, pr[1].name, e.str("path"), e.frame())
				break
			}
		}
		if n == 0 {
			t.Errorf("%s printed no link line to %s", pr[0].name, pr[1].name)
		}
	}
	sum := r.host.of("summary")
	if len(sum) != 1 {
		t.Fatalf("the host printed %d summaries", len(sum))
	}
	if rel, ok := sum[0]["relay"]; ok && rel != nil {
		t.Errorf("the host relayed: %v", rel)
	}
}

// checkStalls: during each test no machine's frame waited 2 s or more.
// A test's window runs from its idle phase (2 s before its load, and the
// ask's round trip) to its event.
func checkStalls(t *testing.T, r *loadRun, ws []testWindow) {
	for _, p := range r.procs() {
		most, n := 0.0, 0
		for _, e := range p.of("stall") {
			tms, ok := e["t_ms"].(float64)
			if !ok {
				continue
			}
			at := r.smp.wallOf(p, tms)
			for _, w := range ws {
				if at.Before(w.load.Add(-3*time.Second)) || at.After(w.done) {
					continue
				}
				n++
				most = max(most, e.num("wait_ms"))
				if e.num("wait_ms") > 2000 {
					t.Errorf("%s: during %s's test %s's frame %d waited %.0f ms: the game stopped", p.name, w.p.name, e.str("player"), e.frame(), e.num("wait_ms"))
				}
			}
		}
		t.Logf("%s: %d stalls during the tests, the longest %.0f ms", p.name, n, most)
	}
}

// framesAt is p's frame at its t_ms tms, from its lines that carry both
// (linear between two of them); false outside them.
func framesAt(p *proc, tms float64) (float64, bool) {
	type pt struct{ t, f float64 }
	var pts []pt
	for _, e := range p.events() {
		v, ok := e["t_ms"].(float64)
		if !ok || e.frame() <= 0 || e.str("type") == "summary" {
			continue
		}
		pts = append(pts, pt{v, float64(e.frame())})
	}
	i, _ := slices.BinarySearchFunc(pts, tms, func(x pt, t float64) int {
		switch {
		case x.t < t:
			return -1
		case x.t > t:
			return 1
		}
		return 0
	})
	if i == 0 || i >= len(pts) {
		return 0, false
	}
	a, b := pts[i-1], pts[i]
	if b.t == a.t {
		return b.f, true
	}
	return a.f + (b.f-a.f)*(tms-a.t)/(b.t-a.t), true
}

// checkFrames: in the 10 s from 10 s after the run's tests the tester
// executes within 10 % of the frames of the 10 s before them: the game's
// pace with no test running, before and after. The windows next to each
// test would hold the other's: the tests run back to back, the second
// starting some 4 s after the first ends. A test starts 2 s (its idle
// phase) before its load first crosses its router; firstLoad is when the
// run's first load did, lastDone when the run's last test ended.
func checkFrames(t *testing.T, r *loadRun, w testWindow, firstLoad, lastDone time.Time) {
	p := w.p
	start := r.smp.tmsOf(p, firstLoad) - 2000
	end := r.smp.tmsOf(p, lastDone)
	span := func(from, to float64) float64 {
		a, okA := framesAt(p, from)
		b, okB := framesAt(p, to)
		if !okA || !okB {
			t.Fatalf("%s printed no frames around t_ms %.0f–%.0f: the run is too short for the frame check", p.name, from, to)
		}
		return b - a
	}
	before, after := span(start-10000, start), span(end+10000, end+20000)
	t.Logf("%s: %.0f frames in the 10 s before the tests (t_ms %.0f–%.0f), %.0f in the 10 s from 10 s after them (%.0f–%.0f): %+.1f %%",
		p.name, before, start-10000, start, after, end+10000, end+20000, 100*(after-before)/before)
	from, until := r.smp.tmsOf(p, w.load)-2000, w.ev.TMs
	t.Logf("%s: %.0f frames during its own test (t_ms %.0f–%.0f), %.0f per 10 s", p.name, span(from, until), from, until, span(from, until)*10000/(until-from))
	if math.Abs(after-before) > 0.1*before {
		t.Errorf("%s executed %.0f frames in the 10 s from 10 s after the tests, %.0f in the 10 s before them: want within 10 %%", p.name, after, before)
	}
}

// checkBloatDiagnosis: every diagnosis p1's machine published after its
// test names bufferbloat among p1's causes and says what its line adds.
func checkBloatDiagnosis(t *testing.T, p *proc, after float64) {
	n := 0
	for _, d := range p.of("diagnosis") {
		if d.num("t_ms") <= after {
			continue
		}
		n++
		var pl map[string]any
		for _, x := range d["players"].([]any) {
			if m, _ := x.(map[string]any); m["player"] == "p1" {
				pl = m
			}
		}
		causes, _ := pl["causes"].([]any)
		if !slices.Contains(causes, any("bufferbloat")) || pl["bufferbloat_ms"] == nil {
			t.Errorf("p1's diagnosis at t_ms %.0f: p1's causes %v, bufferbloat_ms %v; want bufferbloat, and what the line adds",
				d.num("t_ms"), pl["causes"], pl["bufferbloat_ms"])
			return
		}
		if n == 1 {
			t.Logf("p1's first diagnosis after its test (t_ms %.0f): causes %v, bufferbloat_ms %v; verdict %q", d.num("t_ms"), causes, pl["bufferbloat_ms"], d.str("verdict"))
		}
	}
	if n == 0 {
		t.Errorf("p1 published no diagnosis after its test (t_ms %.0f)", after)
	}
}

// loadCapBits is the second run's --load-cap.
const loadCapBits = 5e6

// checkSecondRun: p1's test keeps to its 5 Mbit/s cap on the wire, and
// p3 refuses p2's test before any load leaves p2's home.
func checkSecondRun(t *testing.T, r *loadRun) {
	ev1, ev2 := onlyLoad(t, r.p1, "ada"), onlyLoad(t, r.p2, "p3")
	if ev1.Stopped != nil {
		t.Fatalf("p1's capped test stopped %q", *ev1.Stopped)
	}
	if ev1.Upload == nil || !ev1.Upload.Capped {
		t.Errorf("p1's upload %v: want capped, the cap being half its line's rate", ev1.Upload)
	}
	if ev2.Stopped == nil || *ev2.Stopped != "peer refused" {
		t.Errorf("p2's test toward p3 stopped %v, want \"peer refused\"", textOrNull(ev2.Stopped))
	}
	if ev2.Upload != nil || ev2.Download != nil || ev2.Both != nil {
		t.Errorf("p2's refused test has figures: upload %v, download %v", ev2.Upload, ev2.Download)
	}
	rp1, rp2, p3 := r.smp.ns[0], r.smp.ns[1], r.smp.ns[2]
	for _, c := range []struct {
		ns, counter, what string
	}{{rp2, "up", "p2's router forwarded from p2"}, {p3, "in", "p3 received"}} {
		s := r.smp.series(c.ns, c.counter)
		if len(s) < 2 {
			t.Fatalf("%d readings of %s's counters", len(s), c.ns)
		}
		got := s[len(s)-1].bytes - s[0].bytes
		t.Logf("%s %d bytes of datagrams of 1200 bytes or more over the run", c.what, got)
		if got != 0 {
			t.Errorf("%s %d bytes of load: p3 refused the test", c.what, got)
		}
	}
	checkDirect(t, r, [][2]*proc{{r.p1, r.host}, {r.p2, r.p3}})
	checkCap(t, r.smp.series(rp1, "up"))
	checkEveryoneTold(t, r, []*proc{r.p1, r.p2})
	checkMaxLate(t, r)
}

func textOrNull(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// checkCap: what p1 sent through its router's LAN port, in datagrams of
// 1200 bytes or more (its load: the game's are far smaller), keeps to the
// cap. The counter counts IP datagrams, the measure the cap is in (a
// test's rates are bits of datagrams on the path).
//
// The upload's first burst on the wire is the upload ramp and hold; the
// download phases pause it; the second is the both phase. Two bounds:
//
//   - the hold, the last 5 s of the first burst: the bytes between the
//     reading that holds all of the burst and the latest reading at least
//     5 s before it, at most cap × the time between those readings × 1.1.
//     The window is the hold's 5 s and at most a counter period of the
//     ramp, which also runs at the cap at most.
//   - the whole test: the upload carries load in the ramp (at most 3 s),
//     the hold (5 s) and both (5 s; its settling second at 1.5 times the
//     hold rate, never above the cap): at most cap × 13 s × 1.1.
//
// The 10 % is what the test's pacing and the counter's sampling leave.
func checkCap(t *testing.T, up []counterPoint) {
	bs := bursts(up, time.Second)
	if len(bs) < 2 {
		t.Fatalf("p1's upload crossed its router in %d bursts, want the ramp and hold, then both: %v", len(bs), bs)
	}
	hold, win := holdOf(up, bs[0])
	limit := loadCapBits / 8 * win.Seconds() * 1.1
	t.Logf("p1's upload hold at its router: %d bytes in %v (%.2f Mbit/s); the cap allows %.0f (5 Mbit/s × %v × 1.1)",
		hold, win.Round(time.Millisecond), float64(hold)*8/win.Seconds()/1e6, limit, win.Round(time.Millisecond))
	if float64(hold) > limit {
		t.Errorf("p1's upload hold sent %d bytes in %v: above the cap's %.0f", hold, win, limit)
	}
	var total uint64
	for _, b := range bs {
		total += b.bytes
	}
	whole := loadCapBits / 8 * 13 * 1.1
	t.Logf("p1's upload over the whole test: %d bytes in bursts %v; the cap allows %.0f (5 Mbit/s × 13 s × 1.1)", total, bs, whole)
	if float64(total) > whole {
		t.Errorf("p1's upload sent %d bytes over its test: above the cap's %.0f for its 13 s of upload", total, whole)
	}
}

// holdOf is the upload hold in a counter's burst of the upload ramp and
// hold: the bytes between the reading that holds all of the burst and the
// latest reading at least 5 s (the hold's length) before it, and the
// longest the time between the two readings can be — each reading's
// counters were read somewhere within the time its nft took, seconds on
// a machine busy enough to starve it, so a cap is checked against the
// widest window the bytes can have crossed in.
func holdOf(up []counterPoint, b burst) (uint64, time.Duration) {
	a := b.last
	for a > 0 && up[b.last].at.Sub(up[a].at) < 5*time.Second {
		a--
	}
	return up[b.last].bytes - up[a].bytes, up[b.last].at.Add(up[b.last].took).Sub(up[a].at)
}

// logHoldRate logs what a tester's upload hold sent into its router: 10 %
// above its line's 10 Mbit/s is what keeps the line's queue full.
func logHoldRate(t *testing.T, r *loadRun, router, who string) {
	up := r.smp.series(router, "up")
	if bs := bursts(up, time.Second); len(bs) > 0 {
		b, win := holdOf(up, bs[0])
		t.Logf("%s's upload hold sent %.2f Mbit/s into its router (%d bytes in %v); 110 %% of its line is 11", who,
			float64(b)*8/win.Seconds()/1e6, b, win.Round(time.Millisecond))
	}
}
