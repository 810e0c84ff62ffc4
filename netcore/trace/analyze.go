package trace

import (
	"math"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// The rules (docs/path.md says why each is so).
const (
	// minJudged is how many outcomes (answers and timeouts) a hop needs
	// before the path's structure judges it: an unjudged hop is reported
	// but neither starts a steady delay nor stands as evidence for or
	// against another hop. A hop with a baseline is judged by it instead.
	minJudged = 10
	// minJudgedSince is minJudged for a stretch since a mark (a few
	// seconds at a probe a second): fewer outcomes, all of the same line.
	minJudgedSince = 3
	// minAddedMS is the least added delay that starts delay, whatever the
	// noise before it.
	minAddedMS = 5.0
	// madFactor times the spread (the median absolute deviation) is the
	// other bound on a hop's added delay.
	madFactor = 3.0
	// madSigma turns a median absolute deviation into a standard
	// deviation's worth for normal noise.
	madSigma = 1.4826
	// lossThreshold is the least loss, over the loss before a hop, that
	// counts as losing.
	lossThreshold = 0.02
	// lossFloor is the loss a path's first hop is held against: the
	// machine itself loses nothing, but a router's answers from its slow
	// path may be dropped now and then.
	lossFloor = 0.01
	// minPlaceProbes is the least number of probes with an outcome that
	// the hop a loss starts at, and the hop just before it, each need
	// before the start is named. The test is asked again every second as
	// the counts grow, and a 95 % test asked that often, on a couple of
	// dozen probes a hop, names a hop that lost a few more by chance (the
	// peer's own kernel, answering at its default ICMP rate, loses a few
	// more than routers do): fifty each keeps those early starts from
	// being named, and costs a burst under a minute.
	minPlaceProbes = 50
	// riseKeep: a rise persists to a later hop that rose by at least this
	// share of it, less the margins (a queue's wait varies from probe to
	// probe).
	riseKeep = 0.75
)

// Label names the link into a hop: the words every reader shares
// (package vocab).
type Label = vocab.HopLink

const (
	labelLAN    = vocab.HopLAN    // this machine to its home router: hop 1
	labelUplink = vocab.HopUplink // the home router to the first hop beyond it: hop 2
	labelISP    = vocab.HopISP    // private and CGNAT hops after it, and the first two public ones
	labelBeyond = vocab.HopBeyond // the rest of the way
	labelPeer   = vocab.HopPeer   // the last link, into the peer
)

// Result is a path's analysis.
type Result struct {
	Hops        []Hop
	DelayStarts *DelayStart
	LossStarts  *LossStart
	// Complete: the peer answered, so the last hop is the peer.
	Complete bool
	// OneHop: the peer is the only hop (the same machine or one LAN): a
	// trace cannot tell this machine, its LAN and the peer's machine
	// apart, so it places nothing.
	OneHop bool
	// Bursting: the link is looked at closely, a round a second.
	Bursting bool
	// LossPending: the peer loses, and too few probes say yet where it
	// starts; nil otherwise.
	LossPending *LossPending
}

// Hop is one hop's figures. Round trips are rounded to 0.1 ms (tenth), as
// the path event writes them; Addr is nil for a hop that never answered.
type Hop struct {
	TTL  int
	Addr *netip.Addr
	Link Label
	// Sent counts the probes with an outcome, answered or timed out, over
	// the last lossSpan.
	Sent int
	Loss float64
	// LossCI is the 95 % interval of Loss.
	LossCI [2]float64
	// Answered: the hop answered within the window, and Best, Median,
	// Worst and Last are its round trips; all four are 0 otherwise.
	Answered bool
	Best     time.Duration
	// Median is the median of the recent answers (of the whole window for
	// a stretch since a mark).
	Median time.Duration
	Worst  time.Duration
	// Last is the latest answer's round trip, for a live view.
	Last time.Duration
	// HasBase: the hop has a baseline, Base, the median of its answers
	// over the minutes before the recent ones.
	HasBase bool
	Base    time.Duration
	// RateLimited: the hop loses probes while the hops after it
	// significantly do not.
	RateLimited bool
	// Judged: the hop has enough evidence for the rules.
	Judged bool
}

// tenth is what a Result's round trips and added delay are rounded to.
const tenth = 100 * time.Microsecond

// DelayStart is the hop delay starts at and the delay it adds, rounded to
// tenth.
type DelayStart struct {
	TTL   int
	Link  Label
	Added time.Duration
}

// LossStart is the hop loss starts at and its loss.
type LossStart struct {
	TTL  int
	Link Label
	Loss float64
}

// LossPending is the peer's loss while no hop is placed yet, and about how
// many more probes a hop needs before the test can place it at the rate
// seen so far (0: no estimate — the hops before lose as much).
type LossPending struct {
	Loss float64
	More int
}

// hopSamples is what one hop limit gathered: who answered there last, the
// round trips of the answers in the window oldest first, how many probes
// timed out, and — for the rule against a baseline — its recent answers
// (ms, oldest first) and its baseline.
type hopSamples struct {
	TTL    int
	Addr   netip.Addr
	RTTs   []time.Duration
	Lost   int
	Recent []float64
	Base   *baseline
}

// baseline is a hop's answers over the minutes before its recent ones.
type baseline struct {
	sorted      []float64 // ms
	med, margin float64
	dev         []float64 // setFrom's scratch
}

// setFrom makes the baseline of sorted answers (ms), which it keeps. It
// allocates only while its scratch grows.
func (b *baseline) setFrom(sorted []float64) {
	b.sorted = sorted
	b.med = median(sorted)
	b.dev = b.dev[:0]
	for _, x := range sorted {
		b.dev = append(b.dev, math.Abs(x-b.med))
	}
	slices.Sort(b.dev)
	b.margin = max(minAddedMS, madFactor*madSigma*median(b.dev))
}

// above is the chance that one of the baseline's own answers lies above
// thr, counted with one more above and one more in all so that a clean
// baseline still leaves room for chance.
func (b *baseline) above(thr float64) float64 {
	n := len(b.sorted)
	k := n - sort.SearchFloat64s(b.sorted, math.Nextafter(thr, math.Inf(1)))
	return float64(k+1) / float64(n+2)
}

// calc is a hop's figures as the rules use them: unrounded, in ms.
type calc struct {
	sorted    []float64 // the window's answers (the structure: the baseline's when there is one)
	med, loss float64
	judged    bool
	k, n      int // lost and outcomes in the window
	got       int // answers in the window
	// The rule against the baseline: the recent answers' median over the
	// baseline's (rise), with riseOK when there are enough of them.
	base   *baseline
	recent []float64
	rise   float64
	riseOK bool
}

func (c calc) answers() bool { return len(c.sorted) > 0 }
func (c calc) counts() bool  { return c.judged && c.answers() }
func (c calc) silent() bool  { return c.n > 0 && c.k == c.n }

// analyze applies the rules to hops, ordered by hop limit; complete says
// the last of them is the peer.
func analyze(hops []hopSamples, complete bool) Result { return analyzeTo(hops, complete, netip.Addr{}) }

// analyzeTo is analyze for a path toward the address peer (the zero Addr
// when not known): a hop that answers from it is the peer's link, before
// the peer itself answered too.
func analyzeTo(hops []hopSamples, complete bool, peer netip.Addr) Result {
	return analyzeWith(hops, complete, peer, minJudged)
}

// analyzeWith is analyzeTo with a hop judged by the structure from judge
// outcomes.
func analyzeWith(hops []hopSamples, complete bool, peer netip.Addr, judge int) Result {
	r := Result{Complete: complete, Hops: make([]Hop, len(hops))}
	cs := make([]calc, len(hops))
	for i, h := range hops {
		cs[i] = measure(h, judge)
		r.Hops[i] = hopOf(h, cs[i])
	}
	labelHops(r.Hops, hops, complete, peer)
	// One hop, the peer: nothing between this machine and the peer's to
	// tell a delay or a loss by.
	if r.OneHop = complete && len(hops) == 1; r.OneHop {
		return r
	}
	if i, added, ok := riseStarts(cs); ok {
		r.DelayStarts = &DelayStart{TTL: r.Hops[i].TTL, Link: r.Hops[i].Link, Added: tenthOf(added)}
	} else if ready(cs) {
		if i, added := delayStarts(cs); i >= 0 {
			r.DelayStarts = &DelayStart{TTL: r.Hops[i].TTL, Link: r.Hops[i].Link, Added: tenthOf(added)}
		}
	}
	judgeLoss(cs, &r)
	return r
}

// ready: the farthest hop that answers is judged. Until it is, nothing
// after a hop can show whether its delay persists.
func ready(cs []calc) bool {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].answers() {
			return cs[i].judged
		}
	}
	return false
}

func measure(h hopSamples, judge int) calc {
	c := calc{k: h.Lost, n: len(h.RTTs) + h.Lost, got: len(h.RTTs), base: h.Base}
	if h.Base != nil {
		c.sorted, c.med, c.judged = h.Base.sorted, h.Base.med, true
	} else {
		c.sorted = make([]float64, len(h.RTTs))
		for i, d := range h.RTTs {
			c.sorted[i] = units.Millis(d)
		}
		slices.Sort(c.sorted)
		c.judged = c.n >= judge
		if c.answers() {
			c.med = median(c.sorted)
		}
	}
	if c.n > 0 {
		c.loss = float64(h.Lost) / float64(c.n)
	}
	if h.Base != nil && len(h.Recent) >= recentMin {
		c.recent = slices.Sorted(slices.Values(h.Recent))
		c.rise = median(c.recent) - h.Base.med
		c.riseOK = true
	}
	return c
}

func hopOf(h hopSamples, c calc) Hop {
	out := Hop{TTL: h.TTL, Sent: c.n, Loss: round4(c.loss), Judged: c.judged || c.riseOK}
	if c.n > 0 {
		lo, hi := wilson(c.k, c.n)
		out.LossCI = [2]float64{round4(lo), round4(hi)}
	} else {
		out.LossCI = [2]float64{0, 1}
	}
	if h.Addr.IsValid() {
		a := h.Addr
		out.Addr = &a
	}
	if len(h.RTTs) > 0 {
		best, worst := h.RTTs[0], h.RTTs[0]
		for _, d := range h.RTTs {
			best, worst = min(best, d), max(worst, d)
		}
		out.Answered = true
		out.Best, out.Worst, out.Last = best.Round(tenth), worst.Round(tenth), h.RTTs[len(h.RTTs)-1].Round(tenth)
		switch {
		case len(h.Recent) > 0:
			out.Median = tenthOf(median(slices.Sorted(slices.Values(h.Recent))))
		default:
			all := make([]float64, len(h.RTTs))
			for i, d := range h.RTTs {
				all[i] = units.Millis(d)
			}
			slices.Sort(all)
			out.Median = tenthOf(median(all))
		}
	}
	if h.Base != nil {
		out.Base, out.HasBase = tenthOf(h.Base.med), true
	}
	return out
}

// riseStarts applies the rule against the hops' own baselines: the first
// hop with a baseline and enough recent answers whose rise — its recent
// median over its baseline's, less the largest rise of such hops before
// it — reaches its margin (max(minAddedMS, madFactor × its baseline's
// spread)), is significant (recent answers above the baseline by that
// much are more than its own answers' chance of being so explains, at
// 95 %), and persists: every such hop after it rose by at least riseKeep
// of its rise, less the margins. ok is false when the farthest hop that
// answers has no baseline or too few recent answers (nothing can show
// yet whether a rise persists), or when no hop rose so.
func riseStarts(cs []calc) (int, float64, bool) {
	last := -1
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].got > 0 {
			last = i
			break
		}
	}
	if last < 0 || !cs[last].riseOK {
		return -1, 0, false
	}
	base := 0.0
	for i, c := range cs {
		if !c.riseOK {
			continue
		}
		added := c.rise - base
		if added >= c.base.margin && risen(c, base+c.base.margin) && risePersists(cs, i) {
			return i, added, true
		}
		base = max(base, c.rise)
	}
	return -1, 0, false
}

// risen: c's recent answers above its baseline's median by by are too
// many for chance, at 95 %.
func risen(c calc, by float64) bool {
	thr := c.base.med + by
	k := len(c.recent) - sort.SearchFloat64s(c.recent, math.Nextafter(thr, math.Inf(1)))
	return binomTail(k, len(c.recent), c.base.above(thr)) <= significance
}

func risePersists(cs []calc, i int) bool {
	for _, c := range cs[i+1:] {
		if c.riseOK && c.rise < riseKeep*cs[i].rise-max(cs[i].base.margin, c.base.margin) {
			return false
		}
	}
	return true
}

// delayStarts is the rule of the path's structure: the first counted hop
// whose added delay — its median minus the largest median before it, this
// machine being hop 0 at 0 ms — reaches its margin, max(MinAddedMS,
// MADFactor × the median absolute deviation before it), and after which
// no counted hop's median falls below its median minus that margin. The
// deviation before a hop pools every answer of every counted hop before
// it, each measured from its own hop's median: the spread of round trips
// at a hop, not the distance between hops. It returns the hop's index and
// added delay, or -1.
func delayStarts(cs []calc) (int, float64) {
	base := 0.0
	var devs []float64
	for i, c := range cs {
		if !c.counts() {
			continue
		}
		margin, added := minAddedMS, c.med-base
		if len(devs) > 0 {
			margin = max(margin, madFactor*median(devs))
		}
		if added >= margin && delayPersists(cs, i, margin) {
			return i, added
		}
		base = max(base, c.med)
		for _, x := range c.sorted {
			devs = append(devs, math.Abs(x-c.med))
		}
		slices.Sort(devs)
	}
	return -1, 0
}

func delayPersists(cs []calc, i int, margin float64) bool {
	for _, c := range cs[i+1:] {
		if c.counts() && c.med < cs[i].med-margin {
			return false
		}
	}
	return true
}

// lossPool is lost outcomes k of n.
type lossPool struct{ k, n int }

func (p *lossPool) add(c calc) { p.k, p.n = p.k+c.k, p.n+c.n }
func (p lossPool) share() float64 {
	if p.n == 0 {
		return 0
	}
	return float64(p.k) / float64(p.n)
}

// excess: k of n lost is significantly more, by at least lossThreshold,
// than the pool before (lossFloor when the pool is empty).
func excess(k, n int, before lossPool) bool { return excessAt(k, n, before, significance) }

// excessAt is excess at the p-value level.
func excessAt(k, n int, before lossPool, level float64) bool {
	if n == 0 {
		return false
	}
	p := float64(k) / float64(n)
	if before.n == 0 {
		return p >= lossThreshold && binomTail(k, n, lossFloor) <= level
	}
	return p-before.share() >= lossThreshold && moreLoss(k, n, before.k, before.n) <= level
}

// judgeLoss marks the rate-limited hops and places the start of the loss,
// each by a one-sided test, and says what placing it waits for.
// A hop that never answered in the window is silent: its silence is its
// own, and it is no evidence either way.
//
//   - rate_limited: the hop loses more than the hops after it, pooled,
//     at limitSignificance, and limitRatio times their share at least;
//   - loss_starts: of the hops neither silent nor rate-limited, the split
//     into those before and those from a hop on that the counts favour
//     most (the largest likelihood ratio of two loss rates against one),
//     when the hops from it on, pooled, lose significantly more than
//     those before it, pooled — by at least lossThreshold — and than the
//     hop just before it alone (at prevLevel). Pooling the hops
//     past the start gives the test the probes of all of them; the split,
//     rather than the first hop that passes alone, keeps a later hop that
//     lost a few more by chance from being named before the one the loss
//     begins at, and the hop before it, held alone, keeps a hop that lost
//     a few less by chance from being passed over.
func judgeLoss(cs []calc, r *Result) {
	// A hop answering from the address of the hop before it is, as far as
	// probes tell, the same machine reached at two hop limits (a peer
	// behind its NAT router, which answers with the address the peer is
	// reached at): both are past whatever the first is past, their counts
	// differ by chance, and the loss is not split between them. When the
	// first is left out (rate-limited: it lost more than the second), the
	// second's loss is still past the first's link in, and a start found
	// at the second is named as the first.
	again := make([]bool, len(cs))
	for i := 1; i < len(r.Hops); i++ {
		a, b := r.Hops[i-1].Addr, r.Hops[i].Addr
		again[i] = a != nil && b != nil && *a == *b
	}
	limited := make([]bool, len(cs))
	for i, c := range cs {
		if c.silent() || c.n == 0 {
			continue
		}
		var after lossPool
		for _, d := range cs[i+1:] {
			if !d.silent() {
				after.add(d)
			}
		}
		if after.n > 0 && excessAt(c.k, c.n, after, limitSignificance) && float64(c.k)/float64(c.n) >= limitRatio*after.share() {
			limited[i] = true
			r.Hops[i].RateLimited = true
		}
	}
	start, before, after := lossSplit(cs, limited, again)
	prev := prevPool(cs, limited, start)
	if start >= 0 && placeable(before, after, prev, lossPool{cs[start].k, cs[start].n}) {
		first := start
		for first > 0 && again[first] {
			first--
		}
		h := r.Hops[first]
		r.LossStarts = &LossStart{TTL: h.TTL, Link: h.Link, Loss: h.Loss}
		return
	}
	r.LossPending = lossPending(cs, start, before, after, prev)
}

// prevPool is the hop that counts just before start (neither silent nor
// rate-limited), an empty pool when there is none.
func prevPool(cs []calc, limited []bool, start int) lossPool {
	for i := start - 1; i >= 0; i-- {
		if c := cs[i]; !c.silent() && c.n > 0 && !limited[i] {
			return lossPool{c.k, c.n}
		}
	}
	return lossPool{}
}

// placeable: the start hop and the hop just before it (prev; none when
// empty) have minPlaceProbes outcomes each, and the hops from the start
// on, pooled (after), lose significantly more than those before it,
// pooled, and than prev alone: a start one hop late, the hop before it
// losing as much but by chance a little less so far, is not named.
func placeable(before, after, prev lossPool, start lossPool) bool {
	if start.n < minPlaceProbes || (prev.n > 0 && prev.n < minPlaceProbes) {
		return false
	}
	return excess(after.k, after.n, before) && (prev.n == 0 || moreLoss(after.k, after.n, prev.k, prev.n) <= prevLevel(start.n))
}

// lossSplit is the hop the counts of the hops that count (neither silent
// nor rate-limited) most favour as the start of a loss, with the pools
// before and from it; -1 when no split has the later hops losing more. A
// hop that answers again from the address before it (again) starts none
// unless the hop before it is rate-limited.
func lossSplit(cs []calc, limited, again []bool) (int, lossPool, lossPool) {
	var all lossPool
	for i, c := range cs {
		if !c.silent() && c.n > 0 && !limited[i] {
			all.add(c)
		}
	}
	best, bestLL := -1, 0.0
	var bestB, bestA, before lossPool
	for i, c := range cs {
		if c.silent() || c.n == 0 || limited[i] {
			continue
		}
		after := lossPool{all.k - before.k, all.n - before.n}
		// A hop answering again from the address before it starts no
		// loss of its own, unless the hop before it does not count
		// (rate-limited): then it stands for both.
		if again[i] && !limited[i-1] {
			before.add(c)
			continue
		}
		if after.share() > before.share() || (before.n == 0 && after.k > 0) {
			if ll := splitLL(before, after) - splitLL(lossPool{}, all); best < 0 || ll > bestLL {
				best, bestLL, bestB, bestA = i, ll, before, after
			}
		}
		before.add(c)
	}
	return best, bestB, bestA
}

// splitLL is the log-likelihood of two pools each at its own loss rate.
func splitLL(a, b lossPool) float64 {
	ll := func(p lossPool) float64 {
		if p.n == 0 || p.k == 0 || p.k == p.n {
			return 0
		}
		q := p.share()
		return float64(p.k)*math.Log(q) + float64(p.n-p.k)*math.Log(1-q)
	}
	return ll(a) + ll(b)
}

// lossPending: the farthest hop that answers loses at least
// lossThreshold, and no hop is placed yet. More is how many more probes
// each hop from the likeliest start on needs before the test places it,
// were the shares to hold: the least of a series of multiples of what
// they have that passes, rounded up to tens; 0 when there is no likely
// start, or the hops before it lose about as much.
func lossPending(cs []calc, start int, before, after, prev lossPool) *LossPending {
	last := -1
	for i := len(cs) - 1; i >= 0; i-- {
		if !cs[i].silent() && cs[i].n > 0 {
			last = i
			break
		}
	}
	if last < 0 || cs[last].loss < lossThreshold {
		return nil
	}
	lp := &LossPending{Loss: round4(cs[last].loss)}
	if start < 0 || after.share()-before.share() < lossThreshold {
		return lp
	}
	scale := func(p lossPool, f float64) lossPool {
		return lossPool{int(math.Round(f * float64(p.k))), int(math.Round(f * float64(p.n)))}
	}
	for _, f := range [...]float64{1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32} {
		if placeable(scale(before, f), scale(after, f), scale(prev, f), scale(lossPool{cs[start].k, cs[start].n}, f)) {
			lp.More = int(math.Ceil((f-1)*float64(cs[start].n)/10)) * 10
			return lp
		}
	}
	return lp
}

// labelHops names the link into each hop. Hop 1 is the LAN and hop 2 the
// uplink; from hop 3 on, private and CGNAT addresses are the ISP's, and so
// are the first two public ones; the rest is beyond. A silent hop takes
// the label of the stretch it is in. The last hop of a complete path is
// the peer, whatever it would be otherwise: a peer on the LAN is hop 1,
// labelled peer. So is a hop that answers from the peer's own address
// (peer, or the last hop's on a complete path): the NAT router in front of
// the peer, which sends its ICMP from the public address the peer is
// reached at, whether or not the peer has answered yet.
func labelHops(out []Hop, hops []hopSamples, complete bool, peer netip.Addr) {
	public := 0
	if !peer.IsValid() && complete && len(hops) > 0 {
		peer = hops[len(hops)-1].Addr
	}
	for i, h := range hops {
		switch {
		case complete && i == len(hops)-1, peer.IsValid() && h.Addr == peer:
			out[i].Link = labelPeer
		case h.TTL <= 1:
			out[i].Link = labelLAN
		case h.TTL == 2:
			out[i].Link = labelUplink
		case public >= 2:
			out[i].Link = labelBeyond
		default:
			if h.Addr.IsValid() && !isPrivate(h.Addr) {
				public++
			}
			out[i].Link = labelISP
		}
	}
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// isPrivate: an address no public network routes — RFC 1918, unique
// local, link-local — or carrier-grade NAT's shared space.
func isPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsPrivate() || a.IsLinkLocalUnicast() || cgnat.Contains(a)
}

// median of sorted values: the middle one, or the mean of the two middle.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// tenthOf is a figure of the rules' ms, rounded to 0.1 ms half away from
// zero, as a Duration. Duration.Round(tenth) rounds a round trip held as a
// Duration to the same figure, so hopOf rounds those with it.
func tenthOf(ms float64) time.Duration { return units.FromMillis(math.Round(ms*10) / 10) }

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
