package incident

// Who holds the match back, from one evaluation's evidence: the waits
// between every two machines, followed along knock-on chains to their
// root; the round trips that left their baselines; the loss.

import (
	"math"
	"time"
)

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
	sc := &d.sc
	sc.w, sc.wn, sc.f, sc.fst = grow(sc.w, n*n), grow(sc.wn, n*n), grow(sc.f, n*n), grow(sc.fst, n*n)
	W, Wn, F, Fst := sc.w, sc.wn, sc.f, sc.fst
	for i := range n {
		for j := range n {
			if l := d.idx[i*n+j]; l != nil && i != j {
				W[i*n+j], F[i*n+j], _, _ = l.window(since)
				Fst[i*n+j] = l.firstWait(since)
				Wn[i*n+j] = l.last().wait
			}
		}
	}
	sc.out = grow(sc.out, n)
	out := sc.out
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
	sc.used = grow(sc.used, n*n)
	used := sc.used
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
		// With three players or more, an end whose round trips rose to
		// most others is slow on its own side: the other end, stalled on
		// it, sends it late in turn.
		if n >= 3 && (ownNow[i] || ownNow[j]) {
			return false
		}
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
	sc.und = grow(sc.und, n)
	undisputed := sc.und
	for y := range n {
		for m := range n {
			if m != y && !used[m*n+y] && float64(W[y*n+m]) < chainWait*float64(W[m*n+y]) {
				undisputed[y] += W[m*n+y]
			}
		}
	}
	// A player is another's knock-on when it waited, mostly for that
	// other, about as long as it made any third machine wait (knockOn): a
	// machine stalled on another sends its own commands late by as much,
	// and no more; a player that makes the others wait longer than it
	// waited itself is slow on its own side. The root's own waits for it
	// do not count there, nor those of any machine whose own round trips
	// rose to most others: a machine whose side is slow gets everyone's
	// commands late, a knock-on's too, and may wait for it longer than
	// the knock-on waited (its own delay, come round). Chains follow to
	// their end.
	maxIn := func(y, root int) time.Duration {
		var w time.Duration
		for m := range n {
			if m != y && m != root && !ownNow[m] {
				w = max(w, W[m*n+y])
			}
		}
		return w
	}
	sc.root = grow(sc.root, n)
	rootOf := sc.root
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
		// y's own links rising to most others is y's own delay. A root
		// that waits for y in turn is a pair held up both ways, which the
		// undisputed waits below settle — unless the root's own links
		// rose: its side is slow, and y, stalled on it, sends it late in
		// turn, as it does everyone.
		w := W[y*n+best]
		if w >= waitOpen/2 && float64(w) >= knockOn*float64(maxIn(y, best)) && float64(w) >= chainShare*float64(out[y]) &&
			!ownNow[y] && (float64(W[best*n+y]) < chainWait*float64(w) || ownNow[best]) {
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
	// toChain is how long j waited for the machines whose chain ends at
	// root, root included.
	toChain := func(j, root int) time.Duration {
		var w time.Duration
		for m := range n {
			if m != j && follow(m) == root {
				w += W[j*n+m]
			}
		}
		return w
	}
	// A player left a root may have waited for one chain through several
	// of its machines — now for the root, now for a knock-on whose late
	// commands came last — and for no one of them long enough alone: the
	// same tests, on its waits for the whole chain.
	for y := range n {
		// A whole chain's waits are at most all of y's (out).
		if out[y] < waitOpen/2 || follow(y) != y || ownNow[y] {
			continue
		}
		best, bw := -1, time.Duration(0)
		for r := range n {
			if r != y && follow(r) == r {
				if w := toChain(y, r); w > bw {
					best, bw = r, w
				}
			}
		}
		if best >= 0 && bw >= waitOpen/2 && float64(bw) >= knockOn*float64(maxIn(y, best)) && float64(bw) >= chainShare*float64(out[y]) &&
			(float64(W[best*n+y]) < chainWait*float64(bw) || ownNow[best]) {
			rootOf[y] = best
		}
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
			// This step's waits, recorded for j, were r's delay: passed
			// on from the root of j's chain, or the waiting machine's own
			// come round (PassedOn).
			if r != j && Wn[i*n+j] > 0 {
				if d.passed == nil {
					d.passed = map[string]time.Duration{}
				}
				d.passed[names[j]] -= Wn[i*n+j]
				d.passed[names[r]] += Wn[i*n+j]
			}
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
	// jit[i*n+j]: the link names[i] → names[j] varies beyond its
	// baseline; a pair is jittery when either direction is.
	sc := &d.sc
	sc.jit = grow(sc.jit, n*n)
	for x, l := range d.idx[:n*n] {
		if l != nil {
			if _, v, ok := l.baseline(); ok && l.rttvar >= jitterMin && float64(l.rttvar) >= jitterRatio*float64(v) {
				sc.jit[x] = true
			}
		}
	}
	jittery := func(i, j int) bool { return sc.jit[i*n+j] || sc.jit[j*n+i] }
	d.lossWindows(in.At, n)
	others := n - 1
	sc.own2 = grow(sc.own2, n)
	own := sc.own2
	for i, a := range names {
		e := get(subject{a: a})
		var risen, long, up, jit int
		var sum pairRise
		for j := range names {
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
			if jittery(i, j) {
				jit++
			}
		}
		own[i] = most(risen, others) || most(long, others)
		e.jitter = most(jit, others)
		if most(up, others) {
			e.rise, e.added, e.unacked = sum.rise, sum.added, sum.unacked
		}
		e.risen, e.riseLong = most(risen, others), most(long, others)
		e.loss, e.lossOK, e.lossSeen = d.lossOf(i, names)
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
	d.sc.pairs = grow(d.sc.pairs, n*n)
	pairs := d.sc.pairs
	for i := range n {
		for j := i + 1; j < n; j++ {
			p := &pairs[i*n+j]
			if l := d.idx[i*n+j]; l != nil {
				p.take(l)
			}
			if l := d.idx[j*n+i]; l != nil {
				p.take(l)
			}
		}
	}
	d.sc.own = grow(d.sc.own, n)
	own := d.sc.own
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

// lossWindows works out, for every link between the n players of idx,
// the datagrams judged and missed in the last lossWindow before at.
func (d *Detector) lossWindows(at time.Duration, n int) {
	since := at - lossWindow + time.Millisecond
	sc := &d.sc
	sc.lossE, sc.lossM = grow(sc.lossE, n*n), grow(sc.lossM, n*n)
	for x, l := range d.idx[:n*n] {
		if l != nil {
			_, _, sc.lossE[x], sc.lossM[x] = l.window(since)
		}
	}
}

// lossOf is the share of the datagrams to and from names[i] lost in the
// last lossWindow (lossWindows), over every other player, and whether it
// has left the baseline: lossOpen at least, lossOpen above the loss its
// links had before, over lossMinDatagrams.
func (d *Detector) lossOf(i int, names []string) (share float64, ok, seen bool) {
	n := len(names)
	sc := &d.sc
	var exp, miss, allExp, allMiss uint64
	for j, b := range names {
		if b == names[i] {
			continue
		}
		for _, x := range [2]int{i*n + j, j*n + i} {
			l := d.idx[x]
			if l == nil {
				continue
			}
			exp, miss = exp+sc.lossE[x], miss+sc.lossM[x]
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
