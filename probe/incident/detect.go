package incident

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// The thresholds. docs/diagnosis.md ("Incidents") gives each with its
// reason; they are worked out in session time, so the simulator and a
// live machine judge alike.
const (
	// Every is how often the engine hands the detector its evidence: a
	// player feels lag within a second or two, and the telemetry that
	// carries the others' waits comes ten times a second.
	Every = time.Second
	// waitWindow is the stretch of waits that opens an incident: long
	// enough to hold three stalls of a match that stutters, short enough
	// to answer within two seconds.
	waitWindow = 2 * time.Second
	// waitOpen with waitOpenFrames: waits of 250 ms on three frames or
	// more within the window open one. A single late frame (one stall of
	// 200 ms, a frame packet resent once) opens none; three stalls of
	// 100 ms within 2 s do.
	waitOpen       = 250 * time.Millisecond
	waitOpenFrames = 3
	// waitOpenLong: a machine held for the whole window opens one however
	// few frames it fell on — a stall still going on counts as it grows.
	// A lost packet resent after a backed-off timeout holds a frame a
	// second on a bursty line now and then; two seconds is a freeze.
	waitOpenLong = 2 * time.Second
	// waitCalm: waits under a tenth of a second within the window are the
	// match's normal jitter.
	waitCalm = 100 * time.Millisecond
	// feltFrames: a machine feels a rise or a loss that holds it on two
	// frames or more within the window.
	feltFrames = 2
	// waitUsual and waitSustain: the waits that open an incident are
	// those above plus twice the subject's usual waits (the 90th
	// percentile of its calm windows), for two evaluations in a row — a
	// Wi-Fi line that stutters now and then has its stutter as its normal,
	// and a stutter that lasts a second is no episode.
	waitUsual   = 2
	waitSustain = 1
	// waitHold: a calm window joins the baseline three evaluations late,
	// once no incident opened on it.
	waitHold = 3
	// riseMin and riseRatio: a round trip at least 50 ms and 50 % above
	// the link's own baseline has left it (a LAN at 1 ms rising to 30 ms
	// has not; a line at 40 ms rising to 100 ms has); riseSustain
	// evaluations in a row, so one resent packet's age is not a rise.
	// A rise opens an incident when the match waits for it (felt), or
	// when SRTT itself — clean samples, not one packet's age — and the
	// latest acks both stay up riseLong evaluations: a lost packet on a
	// bursty line ages a second and is resent without a rise of the line,
	// and SRTT remembers a rise for seconds after the acks show it ended.
	riseMin     = 50 * time.Millisecond
	riseRatio   = 1.5
	riseSustain = 2
	riseLong    = 5
	// lossWindow, lossOpen and lossMinDatagrams: 2 % of the datagrams of
	// the last 5 s lost, above the baseline's own loss by 2 points and
	// twice it, over 100 datagrams at least (fewer cannot tell 2 % from
	// 0). lossBaseline: the baseline's loss is known once ten times that
	// many datagrams came before the window. lossChance: and the count
	// lost is one that the baseline's rate (at least lossFloor) gives by
	// chance less than once in ten thousand windows — a 5-minute session
	// has 300 of them, and a line that loses 1 % loses 3 % of some 5 s.
	lossWindow       = 5 * time.Second
	lossOpen         = 0.02
	lossMinDatagrams = 100
	lossBaseline     = 10 * lossMinDatagrams
	lossFloor        = 0.005
	lossChance       = 1e-4
	// lossSustain: and it stays so for three evaluations in a row while
	// the match waits for the subject (felt): a Wi-Fi line's burst of
	// interference is one moment, not an episode.
	lossSustain = 3
	// baselineSpan and baselineMin: a link's baseline is the median of
	// its calm round trips over the last two minutes, once it holds five;
	// rebase: the median is worked out again every fourth calm sample.
	baselineSpan = 120
	baselineMin  = 5
	rebase       = 4
	// calmFor: an incident closes once its evidence has been back within
	// the baselines this long.
	calmFor = 5 * time.Second
	// refresh: an open incident says where it stands at least this often
	// (an update line), and at most once an evaluation.
	refresh = 5 * time.Second
	// chainWait: a player's waits are another's passed on (a knock-on)
	// when it waited for that other at least half as long as the rest
	// waited for it. chainShare: a pair each of whom spent 60 % of its
	// waiting on the other is the path between them.
	chainShare = 0.6
	chainWait  = 0.5
	// knockOn: a player's waits pass on to the machines that wait for it
	// whole; a tenth of slack for the frames between.
	knockOn = 0.9
	// unbalanced: the others wait for one end of a pair three times as
	// long as for the other end: that end, not the path.
	unbalanced = 3
	// jitterMin and jitterRatio: round trips whose variation (RTTVAR, T3)
	// is 10 ms and twice the link's own baseline vary beyond its normal.
	jitterMin   = 10 * time.Millisecond
	jitterRatio = 2.0
	// leadWindow: the incident that caused the most waiting in the last
	// 5 s leads the verdict.
	leadWindow = 5 * time.Second
	// warmUp: no incident opens in the game's first seconds, while the
	// links take their first samples and the timing its first decision
	// (S9, S10); their evidence builds the baselines.
	warmUp = 5 * time.Second
)

// Input is what the engine knows at one evaluation.
type Input struct {
	// At is this machine's clock (t_ms; texts say "since mm:ss" on it, as
	// its screen does); Start is when the game started on it.
	At, Start time.Duration
	// Frame is this machine's next frame; FPS the frame rate in force.
	Frame, FPS int
	// Rung is the target rung in force.
	Rung int
	// Matrix is every seated player's row: its waits for each other player
	// and its links (feed.MatrixView; this machine's own row first-hand).
	Matrix *feed.MatrixView
	// Load is the load test running between two members, if one runs.
	Load *feed.LoadPair
	// Bloat is what a player's latest load test found its line adds when
	// busy, when it graded C or worse (ok false otherwise).
	Bloat func(player string) (ms float64, ok bool)
	// Where is the hop a player's delay starts at, once a trace judged it.
	Where func(player string) *feed.IncidentWhere
	// Causes is what the latest diagnosis found of a player's share (b
	// empty), or of the path between a and b.
	Causes func(a, b string) []vocab.Cause
}

// Detector is one machine's incidents. The zero Detector is ready; one
// goroutine calls it.
type Detector struct {
	links    map[[2]string]*link
	waits    map[subject]*waitBase
	open     []*tracked
	all      []feed.Incident // closed ones, as their last line
	nextID   int
	last     time.Duration // the last evaluation
	frames   []frameAt     // this machine's frame at recent evaluations
	process  map[string]time.Duration
	baseProc map[string]time.Duration
}

type frameAt struct {
	at    time.Duration
	frame int
}

// tracked is an open incident with what the detector keeps of it.
type tracked struct {
	feed.Incident
	key      subject
	calmFrom time.Duration // since when its evidence is calm; -1 while not
	said     time.Duration // its last line
	recent   []cost        // its waits of the last leadWindow
	addedD   time.Duration
	lossMax  float64
	lossSeen bool
	sawRise  bool
}

type cost struct {
	at   time.Duration
	wait time.Duration
}

// subject is who an incident is about: a player, or the path between two
// (a < b).
type subject struct{ a, b string }

func (s subject) path() bool { return s.b != "" }

// Observe reads the evidence at one evaluation and appends to dst the
// incident lines it has to publish: one for each incident that opens,
// changes or closes.
func (d *Detector) Observe(dst []feed.Incident, in Input) []feed.Incident {
	if d.links == nil {
		d.links = map[[2]string]*link{}
		d.waits = map[subject]*waitBase{}
		d.process = map[string]time.Duration{}
		d.baseProc = map[string]time.Duration{}
	}
	dt := in.At - d.last
	first := d.last == 0
	d.last = in.At
	d.frames = append(d.frames, frameAt{in.At, in.Frame})
	if len(d.frames) > 8 {
		d.frames = d.frames[1:]
	}
	names := d.read(in, dt, first)
	ev := d.judge(in, names)
	for _, t := range d.open {
		e, ok := ev[t.key]
		if !ok {
			e = &evidence{}
		}
		dst = d.carry(dst, in, t, e)
	}
	d.open = slices.DeleteFunc(d.open, func(t *tracked) bool { return t.Phase == vocab.IncidentClose })
	for _, k := range sortedSubjects(ev) {
		e := ev[k]
		wb := d.waitBaseOf(k)
		// need: a player's own side holds back at least half of the
		// machines that play with it; a path holds back both its ends.
		need := 2
		if !k.path() {
			need = max(1, len(in.Matrix.Players)/2)
		}
		e.above = e.waitsAbove(wb.p90, need)
		if e.above {
			wb.above++
		} else {
			wb.above = 0
		}
		e.waitActive = wb.above >= waitSustain
		e.felt = e.feltBy(wb.p90, need)
		wb.lossAbove = next(wb.lossAbove, e.lossOK)
		e.lossFelt = wb.lossAbove >= lossSustain && e.felt
		if !e.active() || d.covered(k) || (d.endOfOpenPath(k) && !e.risen && !e.riseLong) || in.At-in.Start < warmUp {
			continue
		}
		wb.held = wb.held[:0]
		dst = append(dst, d.opened(in, k, e))
	}
	d.keepBaselines(ev, in.At-in.Start < warmUp)
	return dst
}

// waitBase is a subject's own waits when no incident touches it: the
// waits of its calm windows, their 90th percentile worked out again every
// rebase of them, and how many evaluations in a row its waits have been
// above what opens an incident.
type waitBase struct {
	// held are the latest windows, kept back from the baseline for
	// waitHold evaluations: the first windows of an episode are calm by
	// the thresholds (they have not gathered three stalls yet), and an
	// incident that opens drops them rather than learn them as usual.
	held      []time.Duration
	calm      []time.Duration
	p90       time.Duration
	added     int
	above     int
	lossAbove int
	tmp       []time.Duration
}

func (d *Detector) waitBaseOf(k subject) *waitBase {
	wb := d.waits[k]
	if wb == nil {
		wb = &waitBase{}
		d.waits[k] = wb
	}
	return wb
}

// hold takes a calm window; the one waitHold evaluations older goes into
// the baseline.
func (wb *waitBase) hold(w time.Duration) {
	wb.held = append(wb.held, w)
	if len(wb.held) > waitHold {
		wb.add(wb.held[0])
		wb.held = append(wb.held[:0], wb.held[1:]...)
	}
}

func (wb *waitBase) add(w time.Duration) {
	if len(wb.calm) == baselineSpan {
		copy(wb.calm, wb.calm[1:])
		wb.calm = wb.calm[:baselineSpan-1]
	}
	wb.calm = append(wb.calm, w)
	if wb.added++; wb.added%rebase == 0 || len(wb.calm) <= baselineMin {
		s := append(wb.tmp[:0], wb.calm...)
		slices.Sort(s)
		wb.tmp, wb.p90 = s, s[len(s)*9/10]
	}
}

// read takes every seated player's row into the links' evidence and
// returns the players in house order.
func (d *Detector) read(in Input, dt time.Duration, first bool) []string {
	var names []string
	for i := range in.Matrix.Players {
		row := &in.Matrix.Players[i]
		names = append(names, row.Name)
		if row.Process != nil {
			d.process[row.Name] = *row.Process
		}
		if !row.Known {
			continue
		}
		for k := range row.Links {
			ml := &row.Links[k]
			if ml.Observer {
				continue
			}
			key := [2]string{row.Name, ml.To}
			l := d.links[key]
			if l == nil {
				l = &link{}
				d.links[key] = l
			}
			if first {
				dt = 0
			}
			l.observe(in.At, dt, ml)
		}
	}
	return names
}

// evidence is what one subject's evaluation found.
type evidence struct {
	wait, now time.Duration // its waits in the window, and in this evaluation
	from      time.Duration // when the window's first waits began
	frames    int
	// rise is the largest significant rise of its links now (an
	// unacknowledged packet's age included), added that of SRTT alone,
	// unacked the age when that is the rise; zero when its links have not
	// risen. risen: they rose riseSustain evaluations in a row; riseLong:
	// SRTT itself rose riseLong in a row.
	rise, added, unacked time.Duration
	risen, riseLong      bool
	// felt: the match waits for the subject more than usual (feltBy),
	// though less than opens an incident on waits alone.
	felt     bool
	loss     float64
	lossOK   bool // enough datagrams to tell, and above the baseline
	lossSeen bool
	// lossFelt: the loss has left its baseline and the match waits for
	// the subject more than usual (waitCalm beyond twice its usual
	// waits): loss that no one waits for is no lag.
	lossFelt bool
	process  time.Duration
	slow     bool // its machine runs slower than the frame rate asks
	jitter   bool // its links' round trips vary beyond their baselines
	outWait  time.Duration
	// above: the window's waits open an incident; waitActive: for
	// waitSustain evaluations in a row.
	above, waitActive bool
	// byMachine is each waiting machine's part: the window's waits and
	// frames one machine waited on the subject.
	byMachine map[int]*machineWait
}

type machineWait struct {
	wait   time.Duration
	frames int
}

// add counts machine m's waits on the subject: w in the window, now in
// this evaluation, on frames frames, the first of them from first.
func (e *evidence) add(m int, w, now time.Duration, frames int, first time.Duration) {
	if w > 0 && (e.from == 0 || first < e.from) {
		e.from = first
	}
	e.wait += w
	e.now += now
	e.frames += frames
	if e.byMachine == nil {
		e.byMachine = map[int]*machineWait{}
	}
	mw := e.byMachine[m]
	if mw == nil {
		mw = &machineWait{}
		e.byMachine[m] = mw
	}
	mw.wait += w
	mw.frames += frames
}

// waitsAbove: the window's waits are more than a late frame — and more
// than the subject's own usual waits (p90, its 90th percentile over calm
// windows) can explain: a line that stutters all along has that as its
// normal.
//
// It is judged machine by machine: a machine that waited on one late
// frame (a single stall, however many machines saw the same late frame)
// has no episode to tell; one that waited on three frames or more, or a
// whole window, has. need machines must have one: a player that one
// machine alone stutters on is that path's, and the pair's mutual waits
// tell it.
func (e *evidence) waitsAbove(p90 time.Duration, need int) bool {
	n := 0
	for _, mw := range e.byMachine {
		if mw.wait >= waitOpenLong+waitUsual*p90 || (mw.wait >= waitOpen+waitUsual*p90 && mw.frames >= waitOpenFrames) {
			n++
		}
	}
	return n >= need
}

// active: the evidence opens an incident — waits no late frame explains;
// round trips that rose while the match waits for them; round trips
// whose SRTT stays up for riseLong; or loss that left its baseline for
// lossSustain evaluations while the match waits.
// feltBy: need machines stalled on two frames or more with waits
// waitCalm beyond twice the subject's usual (p90): a machine held once,
// however long, by one late frame does not make a rise or a loss an
// episode.
func (e *evidence) feltBy(p90 time.Duration, need int) bool {
	n := 0
	for _, mw := range e.byMachine {
		if mw.frames >= feltFrames && mw.wait >= waitCalm+waitUsual*p90 {
			n++
		}
	}
	return n >= need
}

func (e *evidence) active() bool {
	return e.waitActive || (e.risen && e.felt) || e.riseLong || e.lossFelt
}

func (e *evidence) calm() bool {
	return e.wait < waitCalm && e.rise == 0 && !e.risen && !e.lossOK
}

// judge works out each subject's evidence from the links: who waits for
// whom, followed along knock-on chains to their root; which links have
// left their baselines; what is lost.
func (d *Detector) judge(in Input, names []string) map[subject]*evidence {
	n := len(names)
	pairs, ownNow := d.rises(names)
	ev := map[subject]*evidence{}
	get := func(k subject) *evidence {
		e := ev[k]
		if e == nil {
			e = &evidence{}
			ev[k] = e
		}
		return e
	}
	since := in.At - waitWindow + time.Millisecond
	W := make([]time.Duration, n*n)
	Wn := make([]time.Duration, n*n)
	F := make([]int, n*n)
	Fst := make([]time.Duration, n*n)
	for i, a := range names {
		for j, b := range names {
			if l := d.links[[2]string{a, b}]; l != nil && i != j {
				W[i*n+j], F[i*n+j], _, _ = l.window(since)
				Fst[i*n+j] = l.firstWait(since)
				Wn[i*n+j] = l.last().wait
			}
		}
	}
	out := make([]time.Duration, n)
	for i := range n {
		for j := range n {
			out[i] += W[i*n+j]
		}
	}
	// A pair each of whom waits mostly for the other: the path between
	// them. The others' waits for either are its knock-on (a machine
	// stalled on its slow path sends its own commands late to everyone).
	// A player whose own side is slow waits for everyone alike, so no
	// pair with it passes. With two players the one path is all there is.
	used := make([]bool, n*n)
	third := func(x int, skip int) time.Duration {
		var w time.Duration
		for m := range n {
			if m != x && m != skip {
				w += W[m*n+x]
			}
		}
		return w
	}
	mutual := func(i, j int) bool {
		ab, ba := W[i*n+j], W[j*n+i]
		if ab < waitOpen/2 || ba < waitOpen/2 ||
			float64(ab) < chainShare*float64(out[i]) || float64(ba) < chainShare*float64(out[j]) {
			return false
		}
		// The others wait for both ends of a slow path (each stalls on the
		// other and sends late); when they wait for one far more, that
		// one's own side is slow.
		ti, tj := third(i, j), third(j, i)
		return !(ti > waitOpen && ti > unbalanced*tj) && !(tj > waitOpen && tj > unbalanced*ti)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !complete(in.Matrix) || !mutual(i, j) {
				continue
			}
			e := get(pathOf(names[i], names[j]))
			for x := range n {
				for _, y := range []int{i, j} {
					if x == y || used[x*n+y] {
						continue
					}
					e.add(x, W[x*n+y], Wn[x*n+y], F[x*n+y], Fst[x*n+y])
					used[x*n+y] = true
				}
			}
		}
	}
	// Every other wait goes to the player whose side it is.
	//
	// A pair may wait for each other: a slow player waits for the others
	// too (what they send it comes late), and they wait for it. Which side
	// is at fault is the one the rest of the session waits for: each
	// player's undisputed waits (others') counts the waits of machines it
	// does not wait for as long itself.
	undisputed := make([]time.Duration, n)
	for y := range n {
		for m := range n {
			if m != y && !used[m*n+y] && float64(W[y*n+m]) < chainWait*float64(W[m*n+y]) {
				undisputed[y] += W[m*n+y]
			}
		}
	}
	// A player is another's knock-on when it waited, mostly for that
	// other, about as long as it made any machine wait (knockOn): a
	// machine stalled on another sends its own commands late by as much,
	// and no more; a player that makes the others wait longer than it
	// waited itself is slow on its own side. Chains follow to their end.
	maxIn := func(y int) time.Duration {
		var w time.Duration
		for m := range n {
			if m != y {
				w = max(w, W[m*n+y])
			}
		}
		return w
	}
	rootOf := make([]int, n)
	for y := range n {
		rootOf[y] = y
		best := -1
		for r := range n {
			if r != y && (best < 0 || W[y*n+r] > W[y*n+best]) {
				best = r
			}
		}
		if best < 0 {
			continue
		}
		// y's own links rising to most others is y's own delay; a root
		// that waits for y in turn is a pair held up both ways, which the
		// undisputed waits below settle.
		w := W[y*n+best]
		if w >= waitOpen/2 && float64(w) >= knockOn*float64(maxIn(y)) && float64(w) >= chainShare*float64(out[y]) &&
			!ownNow[y] && float64(W[best*n+y]) < chainWait*float64(w) {
			rootOf[y] = best
		}
	}
	follow := func(y int) int {
		for range n {
			if rootOf[y] == y {
				break
			}
			y = rootOf[y]
		}
		return y
	}
	for i := range n {
		for j := range n {
			w := W[i*n+j]
			if i == j || used[i*n+j] || (w == 0 && Wn[i*n+j] == 0) {
				continue
			}
			r := follow(j)
			if float64(W[j*n+i]) >= chainWait*float64(w) && undisputed[i] > undisputed[r] {
				r = follow(i) // the waiting machine's own delay, come round
			}
			e := get(subject{a: names[r]})
			e.add(i, w, Wn[i*n+j], F[i*n+j], Fst[i*n+j])
		}
	}
	for i, a := range names {
		e := get(subject{a: a})
		e.outWait = out[i]
	}
	d.links2(in, names, pairs, get)
	return ev
}

// links2 adds each subject's round trips and loss: a player whose links
// to at least half the others (and two, with three players or more) rose
// is on its own side; one pair's link rising alone is the path between
// them.
func (d *Detector) links2(in Input, names []string, pairs []pairRise, get func(subject) *evidence) {
	n := len(names)
	pair := func(i, j int) *pairRise {
		if i > j {
			i, j = j, i
		}
		return &pairs[i*n+j]
	}
	jittery := func(a, b string) bool {
		for _, k := range [][2]string{{a, b}, {b, a}} {
			if l := d.links[k]; l != nil {
				if _, v, ok := l.baseline(); ok && l.rttvar >= jitterMin && float64(l.rttvar) >= jitterRatio*float64(v) {
					return true
				}
			}
		}
		return false
	}
	others := n - 1
	own := make([]bool, n)
	for i, a := range names {
		e := get(subject{a: a})
		var risen, long, up, jit int
		var sum pairRise
		for j, b := range names {
			if j == i {
				continue
			}
			p := pair(i, j)
			if p.up {
				up++
				sum.rise = max(sum.rise, p.rise)
				sum.added = max(sum.added, p.added)
				sum.unacked = max(sum.unacked, p.unacked)
			}
			if p.risen {
				risen++
			}
			if p.long {
				long++
			}
			if jittery(a, b) {
				jit++
			}
		}
		own[i] = most(risen, others) || most(long, others)
		e.jitter = most(jit, others)
		if most(up, others) {
			e.rise, e.added, e.unacked = sum.rise, sum.added, sum.unacked
		}
		e.risen, e.riseLong = most(risen, others), most(long, others)
		e.loss, e.lossOK, e.lossSeen = d.lossOf(in.At, a, names)
		if p, ok := d.process[a]; ok {
			e.process = p
			if in.FPS > 0 && p >= time.Second/time.Duration(in.FPS) {
				e.slow = true
			}
		}
	}
	if n <= 2 || !complete(in.Matrix) {
		// With two players the one path is either player's side; with a
		// row unknown, a player's own side cannot be ruled out.
		return
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			p := pair(i, j)
			if (p.risen || p.long) && !own[i] && !own[j] {
				e := get(pathOf(names[i], names[j]))
				e.risen, e.riseLong = p.risen, p.long
				e.rise, e.added, e.unacked = p.rise, p.added, p.unacked
			}
		}
	}
}

// rises reads every pair's round trips now ([i*n+j], i < j), once an
// evaluation, and which players' links rose now to most of the others:
// their own side's delay, which no knock-on explains.
func (d *Detector) rises(names []string) ([]pairRise, []bool) {
	n := len(names)
	pairs := make([]pairRise, n*n)
	for i, a := range names {
		for j, b := range names {
			if i >= j {
				continue
			}
			p := &pairs[i*n+j]
			for _, k := range [][2]string{{a, b}, {b, a}} {
				if l := d.links[k]; l != nil {
					p.take(l)
				}
			}
		}
	}
	own := make([]bool, n)
	for i := range n {
		up := 0
		for j := range n {
			if j != i && pairs[min(i, j)*n+max(i, j)].up {
				up++
			}
		}
		own[i] = most(up, n-1)
	}
	return pairs, own
}

// most: c of others is at least half of them, and two with three players
// or more.
func most(c, others int) bool { return c > 0 && 2*c >= others && (others < 2 || c >= 2) }

// pairRise is what the round trips between two players show now, both
// directions' links taken together.
type pairRise struct {
	up, risen, long bool
	// rise is the largest rise above the baseline now, an unacknowledged
	// packet's age included; added the largest rise of SRTT alone;
	// unacked the age of an unacknowledged packet, when that is the rise.
	rise, added, unacked time.Duration
}

// take counts one link's rise now into the pair, and keeps the link's
// count of evaluations in a row that rose.
func (p *pairRise) take(l *link) {
	r, up := l.rise()
	a, srttUp := l.srttRise()
	l.risen = next(l.risen, up)
	l.srttRisen = next(l.srttRisen, srttUp)
	l.freshRisen = next(l.freshRisen, up && l.fresh)
	if up {
		p.up = true
		if r > p.rise {
			p.rise, p.unacked = r, 0
			if l.rtt > l.srtt {
				p.unacked = l.rtt
			}
		}
	}
	if srttUp {
		p.added = max(p.added, a)
	}
	p.risen = p.risen || l.risen >= riseSustain
	p.long = p.long || (l.srttRisen >= riseLong && l.freshRisen >= riseLong)
}

func next(count int, up bool) int {
	if up {
		return count + 1
	}
	return 0
}

// lossOf is the share of the datagrams to and from a lost in the last
// lossWindow, over every other player, and whether it has left the
// baseline: lossOpen at least, lossOpen above the loss a's links had
// before, over lossMinDatagrams.
func (d *Detector) lossOf(at time.Duration, a string, names []string) (share float64, ok, seen bool) {
	since := at - lossWindow + time.Millisecond
	var exp, miss, allExp, allMiss uint64
	for _, b := range names {
		if b == a {
			continue
		}
		for _, k := range [][2]string{{a, b}, {b, a}} {
			l := d.links[k]
			if l == nil {
				continue
			}
			_, _, e, m := l.window(since)
			exp, miss = exp+e, miss+m
			allExp, allMiss = allExp+l.expected, allMiss+l.miss
		}
	}
	if exp < lossMinDatagrams {
		return 0, false, false
	}
	share = float64(miss) / float64(exp)
	before := allExp - exp
	if before < lossBaseline {
		return share, false, true // no baseline yet to leave
	}
	base := float64(allMiss-miss) / float64(before)
	ok = share >= lossOpen && share >= base+lossOpen && share >= 2*base &&
		poissonTail(miss, float64(exp)*max(base, lossFloor)) < lossChance
	return share, ok, true
}

// poissonTail is the chance of k or more events where lambda are
// expected: how often a line losing at its baseline rate loses this many
// by chance.
func poissonTail(k uint64, lambda float64) float64 {
	if k == 0 {
		return 1
	}
	// 1 - P(X < k), summed in logs from the mode outward is overkill at
	// these sizes; the terms below k are summed directly.
	term, cdf := math.Exp(-lambda), 0.0
	for i := uint64(0); i < k; i++ {
		cdf += term
		term *= lambda / float64(i+1)
	}
	return max(0, 1-cdf)
}

// covered reports whether an open incident already tells subject k: the
// same subject, or a player incident of one end of a path.
func (d *Detector) covered(k subject) bool {
	for _, t := range d.open {
		if t.key == k || (k.path() && !t.key.path() && (t.key.a == k.a || t.key.a == k.b)) {
			return true
		}
	}
	return false
}

// endOfOpenPath reports whether player subject k is one end of an open
// path incident: waits on that end are the path's unless the player's own
// links rose (its own side, then, too).
func (d *Detector) endOfOpenPath(k subject) bool {
	if k.path() {
		return false
	}
	for _, t := range d.open {
		if t.key.path() && (t.key.a == k.a || t.key.b == k.a) {
			return true
		}
	}
	return false
}

// complete: every seated player's row is known (its own telemetry come,
// or this machine's own): a path can be told from a player's side only
// from the whole picture.
func complete(m *feed.MatrixView) bool {
	for i := range m.Players {
		if !m.Players[i].Known {
			return false
		}
	}
	return true
}

func pathOf(a, b string) subject {
	if a > b {
		a, b = b, a
	}
	return subject{a: a, b: b}
}

func sortedSubjects(ev map[subject]*evidence) []subject {
	ks := make([]subject, 0, len(ev))
	for k := range ev {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(x, y subject) int {
		if x.a != y.a {
			if x.a < y.a {
				return -1
			}
			return 1
		}
		if x.b < y.b {
			return -1
		}
		if x.b > y.b {
			return 1
		}
		return 0
	})
	return ks
}

// keepBaselines adds every calm link's round trip, and every calm
// subject's waits, to its baseline: what an open incident touches keeps
// its baseline frozen, so a long spike never becomes the normal.
func (d *Detector) keepBaselines(ev map[subject]*evidence, warm bool) {
	for k, l := range d.links {
		if d.touches(k) {
			continue
		}
		l.calm()
	}
	if warm {
		return // the game's first seconds are its start, not its normal
	}
	for k, e := range ev {
		if !e.above && !d.covered(k) && !(k.path() && (d.touches([2]string{k.a, k.b}))) {
			d.waitBaseOf(k).hold(e.wait)
		}
	}
}

func (d *Detector) touches(k [2]string) bool {
	for _, t := range d.open {
		if t.key.a == k[0] || t.key.a == k[1] || (t.key.b != "" && (t.key.b == k[0] || t.key.b == k[1])) {
			return true
		}
	}
	return false
}

// frameAt is this machine's frame at (or just before) t.
func (d *Detector) frameAt(t time.Duration) int {
	f := d.frames[0].frame
	for _, x := range d.frames {
		if x.at <= t {
			f = x.frame
		}
	}
	return f
}

// opened starts an incident on k. Its start goes back to the beginning of
// the evidence: the window of waits that opened it.
func (d *Detector) opened(in Input, k subject, e *evidence) feed.Incident {
	d.nextID++
	from := in.At
	if e.wait > 0 && e.from > 0 {
		from = max(e.from, d.frames[0].at)
	}
	t := &tracked{key: k, calmFrom: -1, said: in.At}
	t.ID, t.Phase = d.nextID, vocab.IncidentOpen
	t.OpenedMs, t.OpenedFrame = units.Millis(from), d.frameAt(from)
	if k.path() {
		t.Between = &[2]string{k.a, k.b}
	} else {
		a := k.a
		t.Player = &a
	}
	t.RungFrom, t.RungPeak = in.Rung, in.Rung
	w, f := d.direct(k, in.At-waitWindow)
	t.WaitMs, t.FramesWaited = units.Millis(w), f
	t.recent = append(t.recent, cost{in.At, e.wait})
	d.fill(in, t, e)
	d.open = append(d.open, t)
	return t.Incident
}

// carry takes an open incident through one evaluation: its cost grows by
// this evaluation's waits, its figures by what they show now; it closes
// after calmFor of calm evidence.
func (d *Detector) carry(dst []feed.Incident, in Input, t *tracked, e *evidence) []feed.Incident {
	w, f := d.direct(t.key, in.At-time.Nanosecond)
	t.WaitMs += units.Millis(w)
	t.FramesWaited += f
	t.recent = append(t.recent, cost{in.At, e.now})
	t.recent = slices.DeleteFunc(t.recent, func(c cost) bool { return c.at <= in.At-leadWindow })
	t.RungPeak = max(t.RungPeak, in.Rung)
	before := t.Incident
	if e.calm() {
		if t.calmFrom < 0 {
			t.calmFrom = in.At
		}
	} else {
		t.calmFrom = -1
	}
	d.fill(in, t, e)
	switch {
	case t.calmFrom >= 0 && in.At-t.calmFrom >= calmFor:
		t.Phase = vocab.IncidentClose
		ms, f := units.Millis(t.calmFrom), d.frameAt(t.calmFrom)
		t.ClosedMs, t.ClosedFrame = &ms, &f
		t.Text = closedText(in, t)
		d.all = append(d.all, t.Incident)
		t.said = in.At
		return append(dst, t.Incident)
	case changed(before, t.Incident) || in.At-t.said >= refresh:
		t.Phase, t.said = vocab.IncidentUpdate, in.At
		return append(dst, t.Incident)
	}
	return dst
}

// direct is the waits and stalled frames of the steps after since that
// machines recorded as for k: a player's, or for a path each end's for
// the other. An incident's cost is these — what every machine's own
// stall records put on its subject; the knock-on waits and the subject's
// own waits for the others tell who, not what it cost.
func (d *Detector) direct(k subject, since time.Duration) (time.Duration, int) {
	var w time.Duration
	var f int
	for key, l := range d.links {
		if (!k.path() && key[1] == k.a) || (k.path() && (key == [2]string{k.a, k.b} || key == [2]string{k.b, k.a})) {
			lw, lf, _, _ := l.window(since)
			w += lw
			f += lf
		}
	}
	return w, f
}

// changed: a line is due when anything but the cost moved.
func changed(a, b feed.Incident) bool {
	a.WaitMs, a.FramesWaited, a.Phase = b.WaitMs, b.FramesWaited, b.Phase
	return !sameIncident(a, b)
}

func sameIncident(a, b feed.Incident) bool {
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqw := func(x, y *feed.IncidentWhere) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eql := func(x, y *feed.LoadPair) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Cause == b.Cause && eqf(a.AddedMs, b.AddedMs) && eqf(a.Loss, b.Loss) && a.RungPeak == b.RungPeak &&
		eqw(a.Where, b.Where) && eql(a.LoadTest, b.LoadTest) && a.Text == b.Text
}

// fill sets an incident's figures, cause, place and words from the
// evidence now.
func (d *Detector) fill(in Input, t *tracked, e *evidence) {
	if e.rise > 0 {
		t.sawRise = true
	}
	if e.added > t.addedD {
		t.addedD = e.added
		v := math.Round(units.Millis(e.added)*10) / 10
		t.AddedMs = &v
	}
	if e.lossSeen && e.loss > t.lossMax {
		t.lossMax, t.lossSeen = e.loss, true
		v := math.Round(e.loss*1e4) / 1e4
		t.Loss = &v
	}
	if in.Load != nil && (in.Load.From == t.key.a || in.Load.To == t.key.a || in.Load.From == t.key.b || in.Load.To == t.key.b) {
		lp := *in.Load
		t.LoadTest = &lp
	}
	if !t.key.path() && in.Where != nil && e.rise > 0 {
		if w := in.Where(t.key.a); w != nil {
			t.Where = w
		}
	}
	t.Cause = d.cause(in, t, e)
	if t.Phase != vocab.IncidentClose {
		t.Text = text(in, t, e)
	}
}

// cause: the load test's queue, when the player's own test runs or its
// latest graded its line C or worse and the rise fits what that test
// found; else a rise of its round trips (latency), its lost packets
// (loss), round trips that vary while their level holds (jitter), its
// machine (processing: others wait for it, it waits for no one, its
// links are fine and a frame takes it longer than the frame rate allows);
// else not known yet.
func (d *Detector) cause(in Input, t *tracked, e *evidence) vocab.Cause {
	now := d.causeNow(in, t, e)
	switch {
	case t.Cause == "" || t.Cause == vocab.CauseUnknown:
		return now
	case now == vocab.CauseUnknown || now == vocab.CauseJitter:
		return t.Cause // what it was found to be holds while the evidence fades
	case t.Cause == vocab.CauseBufferbloat && now == vocab.CauseLatency:
		return t.Cause // the queue's rise, as it drains
	}
	return now
}

// causeNow is what the evidence of this evaluation says.
func (d *Detector) causeNow(in Input, t *tracked, e *evidence) vocab.Cause {
	if !t.key.path() {
		a := t.key.a
		if e.rise > 0 && in.Bloat != nil {
			if ms, ok := in.Bloat(a); ok && fits(units.Millis(cmp.Or(e.added, e.rise)), ms) {
				return vocab.CauseBufferbloat
			}
		}
		if e.rise > 0 && t.LoadTest != nil {
			return vocab.CauseBufferbloat
		}
	}
	switch {
	case e.rise > 0 && !(e.lossOK && !e.risen):
		return vocab.CauseLatency
	case e.lossOK || (e.lossSeen && e.loss >= lossOpen):
		return vocab.CauseLoss
	case !t.key.path() && e.slow && e.outWait < waitCalm:
		return vocab.CauseProcessing
	case e.jitter:
		return vocab.CauseJitter
	}
	// What the latest diagnosis found of the player's share, when the
	// evidence of the moment names nothing: its line is slow, or varies,
	// or loses, all along.
	if in.Causes != nil {
		for _, c := range in.Causes(t.key.a, t.key.b) {
			switch c {
			case vocab.CauseLatency, vocab.CauseJitter, vocab.CauseLoss, vocab.CauseProcessing, vocab.CauseBufferbloat:
				return c
			}
		}
	}
	return vocab.CauseUnknown
}

// fits: a rise of x ms is what a load test that found y ms added
// explains, within half of it either way.
func fits(x, y float64) bool { return y > 0 && x >= y/2 && x <= y*1.5 }

// Open is the incidents open now, in the order they opened.
func (d *Detector) Open() []feed.Incident {
	out := make([]feed.Incident, len(d.open))
	for i, t := range d.open {
		out[i] = t.Incident
	}
	return out
}

// Lead is the open incidents' sentences, the one that caused the most
// waiting in the last leadWindow first.
func (d *Detector) Lead() []string {
	ts := slices.Clone(d.open)
	slices.SortStableFunc(ts, func(x, y *tracked) int {
		a, b := x.waited(), y.waited()
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Text
	}
	return out
}

func (t *tracked) waited() time.Duration {
	var w time.Duration
	for _, c := range t.recent {
		w += c.wait
	}
	return w
}

// Close ends every open incident at the end of a run: a close line each.
func (d *Detector) Close(dst []feed.Incident, in Input) []feed.Incident {
	for _, t := range d.open {
		t.Phase = vocab.IncidentClose
		ms, f := units.Millis(in.At), in.Frame
		t.ClosedMs, t.ClosedFrame = &ms, &f
		t.Text = closedText(in, t)
		d.all = append(d.all, t.Incident)
		dst = append(dst, t.Incident)
	}
	d.open = nil
	return dst
}

// All is every incident that has closed, as its last line.
func (d *Detector) All() []feed.Incident { return slices.Clone(d.all) }
