package incident

import (
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
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
	// At is this machine's clock (t_ms); Start is when the game started
	// on it.
	At, Start time.Duration
	// Game is the session time of a frame: the game's time since it
	// started, the same on every machine, which the texts say "since
	// mm:ss" on, as every screen shows it. Nil: the texts use At.
	Game func(frame int) time.Duration
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
	// passed is, by player, the waits moved to it (PassedOn).
	passed map[string]time.Duration

	// The links by position, so that an evaluation looks each up once,
	// not once per question (links are never forgotten, so a pointer
	// once found stays right): rows[i] holds row i's links in the order
	// of its matrix row, checked by name; idx[i*n+j] is the link
	// names[i] → names[j] (nil when there is none), built again when the
	// players or the set of links change.
	rows     []rowLinks
	idxNames []string
	idx      []*link
	idxStale bool
	names    []string
	sc       scratch
}

// PassedOn is the net of what the detector moved to player since its
// first evaluation, from the waits the machines recorded against others (in
// each step, as that evaluation judged whose side they were): positive for
// a root, which gets the waits recorded for the knock-ons of its chains and
// for the machines stalled on it that it waited for in turn (its own delay,
// come round); negative for the player they were recorded against. It
// moves them whether or not an incident is open. The waits recorded for a
// player (what every row's Caused adds up) plus PassedOn are the waits its
// own delay made, and their difference between two moments is the
// stretch's between them.
func (d *Detector) PassedOn(player string) time.Duration { return d.passed[player] }

// rowLinks is one matrix row's links as read last: the row's name and,
// for each of its entries, the name it goes to and its link.
type rowLinks struct {
	name string
	to   []string
	l    []*link
}

// scratch is an evaluation's working memory, kept between evaluations
// so that one allocates little.
type scratch struct {
	w, wn, fst []time.Duration
	f          []int
	used       []bool
	out, und   []time.Duration
	root       []int
	pairs      []pairRise
	own, own2  []bool
	jit        []bool
	lossE      []uint64
	lossM      []uint64
	med        []int32
	med16      []uint16
}

// grow returns s resized to n, zeroed.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
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
	names := d.names[:0]
	if len(d.rows) < len(in.Matrix.Players) {
		d.rows = append(d.rows, make([]rowLinks, len(in.Matrix.Players)-len(d.rows))...)
	}
	for i := range in.Matrix.Players {
		row := &in.Matrix.Players[i]
		names = append(names, row.Name)
		if row.Process != nil {
			d.process[row.Name] = *row.Process
		}
		if !row.Known {
			continue
		}
		rc := &d.rows[i]
		if rc.name != row.Name {
			rc.name, rc.to, rc.l = row.Name, rc.to[:0], rc.l[:0]
		}
		for k := range row.Links {
			ml := &row.Links[k]
			if ml.Observer {
				continue
			}
			var l *link
			if k < len(rc.to) && rc.to[k] == ml.To {
				l = rc.l[k]
			} else {
				l = d.linkOf(row.Name, ml.To)
				for len(rc.to) <= k {
					rc.to, rc.l = append(rc.to, ""), append(rc.l, nil)
				}
				rc.to[k], rc.l[k] = ml.To, l
			}
			if first {
				dt = 0
			}
			l.observe(in.At, dt, ml)
		}
	}
	d.names = names
	d.index(names)
	return names
}

// linkOf is the link a → b, made when there is none yet.
func (d *Detector) linkOf(a, b string) *link {
	key := [2]string{a, b}
	l := d.links[key]
	if l == nil {
		l = &link{}
		d.links[key] = l
		d.idxStale = true
	}
	return l
}

// index makes idx the links between names, unless it already is.
func (d *Detector) index(names []string) {
	if !d.idxStale && slices.Equal(d.idxNames, names) {
		return
	}
	n := len(names)
	d.idx = grow(d.idx, n*n)
	for i, a := range names {
		for j, b := range names {
			d.idx[i*n+j] = d.links[[2]string{a, b}]
		}
	}
	d.idxNames = append(d.idxNames[:0], names...)
	d.idxStale = false
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
		l.calm(&d.sc.med, &d.sc.med16)
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
