package diagnosis

import (
	"github.com/lagscope/lagscope/vocab"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/rungs"
)

// The tests below exercise the steps of Diagnose one by one on small
// hand-built inputs, so that a change in one step's logic fails that
// step's test rather than only an end-to-end one.

var nan = math.NaN()

const ms = time.Millisecond

// sameFloat reports whether got is want within tol, NaN matching NaN only.
func sameFloat(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol
}

func sameFloats(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !sameFloat(got[i], want[i], tol) {
			return false
		}
	}
	return true
}

// measuredPlayers returns n players a, b, c, … all measured.
func measuredPlayers(n int) []Player {
	out := make([]Player, n)
	for i := range out {
		out[i] = Player{Name: string(rune('a' + i)), Measured: true}
	}
	return out
}

// rungFor is the rung a worst round trip of rtt ms needs with headroom.
func rungFor(rtt float64, fps int) int {
	return rungs.Need(rungs.WithHeadroom(dur(rtt)), fps).Rung()
}

func TestSanitisePairs(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		pairs []Pair
		want  []Pair
	}{
		{"out of range and self pairs are dropped", 3,
			[]Pair{{A: -1, B: 1}, {A: 0, B: 3}, {A: 3, B: 0}, {A: 1, B: 1}, {A: 0, B: 2, RTT: 5}},
			[]Pair{{A: 0, B: 2, RTT: 5}}},
		{"B before A swaps the directions with the ends", 3,
			[]Pair{{A: 2, B: 0, RTT: 7, ExpectedAB: 10, MissingAB: 1, ExpectedBA: 20, MissingBA: 2}},
			[]Pair{{A: 0, B: 2, RTT: 7, ExpectedAB: 20, MissingAB: 2, ExpectedBA: 10, MissingBA: 1}}},
		{"sorted into house order", 3,
			[]Pair{{A: 1, B: 2}, {A: 2, B: 0}, {A: 0, B: 1}},
			[]Pair{{A: 0, B: 1}, {A: 0, B: 2}, {A: 1, B: 2}}},
		{"duplicates keep their order", 3,
			[]Pair{{A: 0, B: 2}, {A: 1, B: 0, RTT: 5}, {A: 0, B: 1, RTT: 7}},
			[]Pair{{A: 0, B: 1, RTT: 5}, {A: 0, B: 1, RTT: 7}, {A: 0, B: 2}}},
		{"no players keep no pairs", 0, []Pair{{A: 0, B: 1}}, []Pair{}},
	}
	for _, c := range cases {
		in := slices.Clone(c.pairs)
		got := sanitisePairs(make([]Pair, 0, 1), in, c.n)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		if !slices.Equal(in, c.pairs) {
			t.Errorf("%s: the input pairs changed to %+v", c.name, in)
		}
	}
}

func TestParticipants(t *testing.T) {
	rt := 20 * ms
	triangle := []Pair{{A: 0, B: 1, RTT: rt}, {A: 0, B: 2, RTT: rt}, {A: 1, B: 2, RTT: rt}}
	cases := []struct {
		name       string
		unmeasured []int
		n          int
		pairs      []Pair
		want       []bool
	}{
		{"a triangle takes part", nil, 3, triangle, []bool{true, true, true}},
		{"a player with one pair does not", nil, 4,
			append(slices.Clone(triangle), Pair{A: 0, B: 3, RTT: rt}), []bool{true, true, true, false}},
		{"a four-cycle takes part", nil, 4,
			[]Pair{{A: 0, B: 1, RTT: rt}, {A: 1, B: 2, RTT: rt}, {A: 2, B: 3, RTT: rt}, {A: 0, B: 3, RTT: rt}},
			[]bool{true, true, true, true}},
		{"a chain falls apart from its ends", nil, 4,
			[]Pair{{A: 0, B: 1, RTT: rt}, {A: 1, B: 2, RTT: rt}, {A: 2, B: 3, RTT: rt}},
			[]bool{false, false, false, false}},
		{"an unmeasured player's pairs do not count", []int{2}, 4,
			append(slices.Clone(triangle), Pair{A: 0, B: 3, RTT: rt}, Pair{A: 1, B: 3, RTT: rt}),
			[]bool{true, true, false, true}},
		{"a pair without a round trip does not count", nil, 3,
			[]Pair{{A: 0, B: 1, RTT: rt}, {A: 0, B: 2}, {A: 1, B: 2, RTT: rt}},
			[]bool{false, false, false}},
		{"nobody measured", []int{0, 1, 2}, 3, triangle, []bool{false, false, false}},
	}
	for _, c := range cases {
		players := measuredPlayers(c.n)
		for _, i := range c.unmeasured {
			players[i].Measured = false
		}
		use, degree := make([]bool, c.n), make([]int, c.n)
		got := participants(use, degree, c.pairs, players)
		want := 0
		for _, u := range c.want {
			if u {
				want++
			}
		}
		if got != want || !slices.Equal(use, c.want) {
			t.Errorf("%s: %d in use %v, want %d %v", c.name, got, use, want, c.want)
		}
	}
}

// exactTriangle is three players whose round trips are exactly share +
// share: 10, 20, 40 ms; variation 3, 4, 12 ms (RTTVAR² adds); c loses 5 %
// of what it sends (its two pairs' B→A direction).
func exactTriangle() []Pair {
	ps := []Pair{{A: 0, B: 1}, {A: 0, B: 2}, {A: 1, B: 2}}
	share, jit := []float64{10, 20, 40}, []float64{3, 4, 12}
	for k := range ps {
		p := &ps[k]
		p.RTT = dur(share[p.A] + share[p.B])
		p.RTTVar = dur(math.Hypot(jit[p.A], jit[p.B]))
		p.ExpectedAB, p.ExpectedBA = 10000, 10000
		if p.B == 2 {
			p.MissingBA = 500
		}
	}
	return ps
}

// triangleAndD adds a fourth player d with a share of 30 ms and no loss
// judged to exactTriangle.
func triangleAndD() []Pair {
	ps := exactTriangle()
	for _, p := range []Pair{{A: 0, B: 3}, {A: 1, B: 3}, {A: 2, B: 3}} {
		p.RTT = dur([]float64{10, 20, 40}[p.A] + 30)
		ps = append(ps, p)
	}
	return ps
}

// fourWithThreeJudged is four players at 20 ms each whose loss is judged
// on 0–1, 0–2 and 1–3 only: only a and b have two judged pairs.
func fourWithThreeJudged() []Pair {
	ps := []Pair{{A: 0, B: 1}, {A: 0, B: 2}, {A: 0, B: 3}, {A: 1, B: 2}, {A: 1, B: 3}, {A: 2, B: 3}}
	for k := range ps {
		ps[k].RTT = 40 * ms
		if k == 0 || k == 1 || k == 4 {
			ps[k].ExpectedAB, ps[k].ExpectedBA, ps[k].MissingAB = 1000, 1000, 100
		}
	}
	return ps
}

func TestFitShares(t *testing.T) {
	three := exactTriangle
	cLoss := -math.Log(0.95)
	cases := []struct {
		name        string
		pairs       []Pair
		use         []bool
		measured    int
		wantKnown   bool
		wantExcess  bool
		rtt         []float64
		jit         []float64 // nil: not checked
		lossExp     []float64
		lossPair    []float64 // nil: not checked
		medRTT      float64
		medJit      float64
		rttTol, tol float64
	}{
		{"three players fit exactly", three(), []bool{true, true, true}, 3, true, false,
			[]float64{10, 20, 40}, []float64{3, 4, 12}, []float64{0, 0, cLoss},
			[]float64{0, cLoss, cLoss}, 20, 4, 0.2, 0.002},
		{"a pair not judged leaves too few for the loss fit", func() []Pair {
			ps := three()
			ps[0].ExpectedAB = minExpected - 1
			return ps
		}(), []bool{true, true, true}, 3, true, false,
			[]float64{10, 20, 40}, []float64{3, 4, 12}, []float64{nan, nan, nan},
			[]float64{nan, cLoss, cLoss}, 20, 4, 0.2, 0.002},
		{"two players are not split", three()[:1], []bool{true, true, false}, 2, false, false,
			[]float64{nan, nan, nan}, []float64{nan, nan, nan}, []float64{nan, nan, nan},
			nil, nan, nan, 0, 0},
		{"four players know the excess", triangleAndD(), []bool{true, true, true, true}, 4, true, true,
			[]float64{10, 20, 40, 30}, nil, []float64{0, 0, cLoss, nan},
			nil, 25, nan, 0.2, 0.002},
		{"two players with two judged pairs are too few for the loss fit", fourWithThreeJudged(), []bool{true, true, true, true}, 4, true, true,
			[]float64{20, 20, 20, 20}, nil, []float64{nan, nan, nan, nan},
			nil, 20, nan, 0.2, 0},
	}
	for _, c := range cases {
		var g Diagnoser
		sh := g.fitShares(c.pairs, c.use, c.measured)
		if sh.known != c.wantKnown || sh.excessKnown != c.wantExcess || sh.measured != c.measured {
			t.Errorf("%s: known %v excess %v measured %d", c.name, sh.known, sh.excessKnown, sh.measured)
		}
		if !sameFloats(sh.rtt, c.rtt, c.rttTol) {
			t.Errorf("%s: rtt shares %v, want %v", c.name, sh.rtt, c.rtt)
		}
		if c.jit != nil && !sameFloats(sh.jit, c.jit, c.rttTol) {
			t.Errorf("%s: jitter shares %v, want %v", c.name, sh.jit, c.jit)
		}
		if !sameFloats(sh.lossExp, c.lossExp, c.tol) {
			t.Errorf("%s: loss exponents %v, want %v", c.name, sh.lossExp, c.lossExp)
		}
		if c.lossPair != nil && !sameFloats(sh.lossExpPair, c.lossPair, 1e-9) {
			t.Errorf("%s: pair loss exponents %v, want %v", c.name, sh.lossExpPair, c.lossPair)
		}
		if !sameFloat(sh.medRTT, c.medRTT, c.rttTol) || (c.jit != nil && !sameFloat(sh.medJit, c.medJit, c.rttTol)) {
			t.Errorf("%s: medians %v %v, want %v %v", c.name, sh.medRTT, sh.medJit, c.medRTT, c.medJit)
		}
	}
}

func TestDiagnoseLinks(t *testing.T) {
	players := measuredPlayers(4)
	base := func() shares {
		return shares{measured: 4, known: true, excessKnown: true, use: []bool{true, true, true, true},
			rtt: []float64{20, 20, 20, 20}, jit: make([]float64, 4), lossExp: make([]float64, 4),
			lossExpPair: []float64{nan}}
	}
	edit := func(change func(*shares)) func() shares {
		return func() shares { sh := base(); change(&sh); return sh }
	}
	judged := func(p Pair) Pair { p.ExpectedAB, p.ExpectedBA, p.MissingAB = 100, 300, 40; return p }
	cases := []struct {
		name   string
		sh     func() shares
		pair   Pair
		lossP  float64
		want   LinkDiagnosis
		wantWA float64
	}{
		{"a path slower than its players explain", base, Pair{A: 0, B: 1, RTT: 100 * ms}, nan,
			LinkDiagnosis{[2]string{"a", "b"}, 100, 40, 60, nan, []vocab.Cause{CauseLatency}}, 100},
		{"an excess under 30 ms is not slow", base, Pair{A: 0, B: 2, RTT: 69 * ms}, nan,
			LinkDiagnosis{[2]string{"a", "c"}, 69, 40, 29, nan, []vocab.Cause{}}, 69},
		{"an excess under a quarter of the expected is not slow", edit(func(sh *shares) { sh.rtt = []float64{100, 100, 100, 100} }), Pair{A: 0, B: 1, RTT: 249 * ms}, nan,
			LinkDiagnosis{[2]string{"a", "b"}, 249, 200, 49, nan, []vocab.Cause{}}, 249},
		{"a negative share counts as 0", edit(func(sh *shares) { sh.rtt[0] = -10 }), Pair{A: 0, B: 1, RTT: 30 * ms}, nan,
			LinkDiagnosis{[2]string{"a", "b"}, 30, 20, 10, nan, []vocab.Cause{}}, 30},
		{"an unmeasured round trip", base, judged(Pair{A: 0, B: 3}), nan,
			LinkDiagnosis{[2]string{"a", "d"}, nan, 40, nan, 0.1, []vocab.Cause{}}, 0},
		{"a path losing beyond its players' sides", base, judged(Pair{A: 1, B: 2, RTT: 40 * ms}), 0.05,
			LinkDiagnosis{[2]string{"b", "c"}, 40, 40, 0, 0.1, []vocab.Cause{CauseLoss}}, 40},
		{"a loss its players explain", edit(func(sh *shares) { sh.lossExp[1] = 0.02 }), judged(Pair{A: 1, B: 2, RTT: 40 * ms}), 0.05,
			LinkDiagnosis{[2]string{"b", "c"}, 40, 40, 0, 0.1, []vocab.Cause{}}, 40},
		{"a negative loss share counts as 0", edit(func(sh *shares) { sh.lossExp[1] = -0.02 }), judged(Pair{A: 1, B: 2, RTT: 40 * ms}), 0.03,
			LinkDiagnosis{[2]string{"b", "c"}, 40, 40, 0, 0.1, []vocab.Cause{}}, 40},
		{"a player's unknown loss share names no lossy path", edit(func(sh *shares) { sh.lossExp[2] = nan }), judged(Pair{A: 1, B: 2, RTT: 40 * ms}), 0.05,
			LinkDiagnosis{[2]string{"b", "c"}, 40, 40, 0, 0.1, []vocab.Cause{}}, 40},
		{"with three players no excess", edit(func(sh *shares) { sh.excessKnown = false }), Pair{A: 0, B: 1, RTT: 100 * ms}, 0.05,
			LinkDiagnosis{[2]string{"a", "b"}, 100, 40, nan, nan, []vocab.Cause{}}, 100},
		{"a player out of the fit gives no expectation", edit(func(sh *shares) { sh.use[1] = false }), Pair{A: 0, B: 1, RTT: 100 * ms}, 0.05,
			LinkDiagnosis{[2]string{"a", "b"}, 100, nan, nan, nan, []vocab.Cause{}}, 100},
		{"shares not fitted give no expectation", edit(func(sh *shares) { sh.known, sh.excessKnown = false, false }), Pair{A: 0, B: 1, RTT: 100 * ms}, nan,
			LinkDiagnosis{[2]string{"a", "b"}, 100, nan, nan, nan, []vocab.Cause{}}, 100},
	}
	for _, c := range cases {
		sh := c.sh()
		sh.lossExpPair = []float64{3, c.lossP} // the pair under test is the second
		pairs := []Pair{{A: 2, B: 3, RTT: ms}, c.pair}
		links, worst := diagnoseLinks(pairs, players, &sh)
		if len(links) != 2 {
			t.Fatalf("%s: %d links", c.name, len(links))
		}
		l := links[1]
		if l.Between != c.want.Between || !sameFloat(l.RTTMs, c.want.RTTMs, 1e-9) ||
			!sameFloat(l.ExpectedRTTMs, c.want.ExpectedRTTMs, 1e-9) || !sameFloat(l.ExcessRTTMs, c.want.ExcessRTTMs, 1e-9) ||
			!sameFloat(l.Loss, c.want.Loss, 1e-9) || !slices.Equal(l.Causes, c.want.Causes) || l.Causes == nil {
			t.Errorf("%s: link %+v, want %+v", c.name, l, c.want)
		}
		if want := math.Max(c.wantWA, 1); worst != want {
			t.Errorf("%s: worst round trip %v, want %v", c.name, worst, want)
		}
	}
}

func TestCulpritLink(t *testing.T) {
	slow := func(excess float64) LinkDiagnosis {
		return LinkDiagnosis{ExcessRTTMs: excess, Causes: []vocab.Cause{CauseLatency}}
	}
	fast := func(excess float64) LinkDiagnosis {
		return LinkDiagnosis{ExcessRTTMs: excess, Causes: []vocab.Cause{CauseLoss}}
	}
	cases := []struct {
		name  string
		links []LinkDiagnosis
		want  int
	}{
		{"no links", nil, -1},
		{"no slow path", []LinkDiagnosis{fast(10), fast(500)}, -1},
		{"one slow path", []LinkDiagnosis{fast(10), slow(40)}, 1},
		{"a larger excess without the cause does not count", []LinkDiagnosis{fast(500), slow(40)}, 1},
		{"clearly the worst of two", []LinkDiagnosis{slow(60), slow(90)}, 1},
		{"not clearly the worst of two", []LinkDiagnosis{slow(100), slow(70)}, -1},
		{"the replaced worst becomes the second", []LinkDiagnosis{slow(140), slow(200), slow(50)}, -1},
		{"clearly the worst of three", []LinkDiagnosis{slow(120), slow(200), slow(50)}, 1},
		{"the second found after the worst", []LinkDiagnosis{slow(200), slow(50), slow(140)}, -1},
	}
	for _, c := range cases {
		if got := culpritLink(c.links); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDiagnosePlayers(t *testing.T) {
	sh := shares{measured: 5, known: true, excessKnown: true, use: []bool{true, true, true, true, false},
		rtt:     []float64{20, -5, 60, 20, 20},
		jit:     []float64{2, 2, 2, 15, 2},
		lossExp: []float64{0, -0.1, 0, 0.03, nan},
		medRTT:  20, medJit: 2}
	players := []Player{
		{Name: "a", Measured: true, Process: 5 * ms, CausedWait: 70 * ms},
		{Name: "b", Measured: true, Process: -ms, CausedWait: -ms, Stale: true},
		{Name: "c", Measured: true, Process: 50 * ms, Bad: true},
		{Name: "d", Measured: true},
		{Name: "e", Measured: true},
	}
	want := []PlayerDiagnosis{
		{Player: "a", AccessRTTMs: 20, AccessLoss: 0, JitterMs: 2, ProcessMs: 5, CausedWaitMs: 70, Causes: []vocab.Cause{}},
		{Player: "b", AccessRTTMs: 0, AccessLoss: 0, JitterMs: 2, Causes: []vocab.Cause{CauseStale}},
		{Player: "c", AccessRTTMs: 60, AccessLoss: 0, JitterMs: 2, ProcessMs: 50, Causes: []vocab.Cause{CauseLatency, CauseProcessing, CauseBad}},
		{Player: "d", AccessRTTMs: 20, AccessLoss: 1 - math.Exp(-0.03), JitterMs: 15, Causes: []vocab.Cause{CauseJitter, CauseLoss}},
		{Player: "e", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, Causes: []vocab.Cause{CauseUnmeasured}},
	}
	check := func(name string, got, want []PlayerDiagnosis) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d players, want %d", name, len(got), len(want))
		}
		for i, w := range want {
			p := got[i]
			if p.Player != w.Player || !sameFloat(p.AccessRTTMs, w.AccessRTTMs, 1e-9) || !sameFloat(p.AccessLoss, w.AccessLoss, 1e-9) ||
				!sameFloat(p.JitterMs, w.JitterMs, 1e-9) || p.ProcessMs != w.ProcessMs || p.CausedWaitMs != w.CausedWaitMs ||
				p.RungWithout != 0 || p.FPSWithout != 0 || !slices.Equal(p.Causes, w.Causes) || p.Causes == nil {
				t.Errorf("%s: player %+v, want %+v", name, p, w)
			}
		}
	}
	check("fitted", diagnosePlayers(players, &sh, nil, 30), want)

	// Without a fit nobody has shares, and only the players without a
	// report are unmeasured.
	sh.known = false
	players[3].Measured = false
	want = []PlayerDiagnosis{
		{Player: "a", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, ProcessMs: 5, CausedWaitMs: 70, Causes: []vocab.Cause{}},
		{Player: "b", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, Causes: []vocab.Cause{CauseStale}},
		{Player: "c", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, ProcessMs: 50, Causes: []vocab.Cause{CauseProcessing, CauseBad}},
		{Player: "d", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, Causes: []vocab.Cause{CauseUnmeasured}},
		{Player: "e", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, Causes: []vocab.Cause{}},
	}
	check("not fitted", diagnosePlayers(players, &sh, nil, 30), want)
}

func TestPlayerCauses(t *testing.T) {
	cases := []struct {
		name          string
		pl            Player
		rtt, jit, los float64
		fitted, inFit bool
		speed         int
		want          []vocab.Cause
	}{
		{"nothing wrong", Player{Measured: true}, 20, 2, 0, true, true, 30, []vocab.Cause{}},
		{"no report", Player{}, nan, nan, nan, false, false, 30, []vocab.Cause{CauseUnmeasured}},
		{"left out of the fit", Player{Measured: true}, nan, nan, nan, true, false, 30, []vocab.Cause{CauseUnmeasured}},
		{"latency 25 ms above and twice the median", Player{Measured: true}, 45, 2, 0, true, true, 30, []vocab.Cause{CauseLatency}},
		{"latency 24 ms above is not", Player{Measured: true}, 44, 2, 0, true, true, 30, []vocab.Cause{}},
		{"jitter 10 ms above and twice the median", Player{Measured: true}, 20, 12, 0, true, true, 30, []vocab.Cause{CauseJitter}},
		{"jitter 9 ms above is not", Player{Measured: true}, 20, 11, 0, true, true, 30, []vocab.Cause{}},
		{"loss of 2 %", Player{Measured: true}, 20, 2, 0.02, true, true, 30, []vocab.Cause{CauseLoss}},
		{"loss under 2 %", Player{Measured: true}, 20, 2, 0.0199, true, true, 30, []vocab.Cause{}},
		{"shares out of the fit are not judged", Player{Measured: true}, 200, 50, 0.5, false, false, 30, []vocab.Cause{}},
		{"a machine slower than the speed", Player{Measured: true, Process: 34 * ms}, 20, 2, 0, true, true, 30, []vocab.Cause{CauseProcessing}},
		{"a machine just fast enough", Player{Measured: true, Process: 33 * ms}, 20, 2, 0, true, true, 30, []vocab.Cause{}},
		{"the same machine at a lower speed", Player{Measured: true, Process: 40 * ms}, 20, 2, 0, true, true, 25, []vocab.Cause{}},
		{"all in the contract's order", Player{Process: 50 * ms, Stale: true, Bad: true}, 200, 50, 0.5, true, true, 30,
			[]vocab.Cause{CauseUnmeasured, CauseLatency, CauseJitter, CauseLoss, CauseProcessing, CauseStale, CauseBad}},
	}
	for _, c := range cases {
		pd := &PlayerDiagnosis{AccessRTTMs: c.rtt, JitterMs: c.jit, AccessLoss: c.los}
		if got := playerCauses(c.pl, pd, c.fitted, c.inFit, 20, 2, c.speed); !slices.Equal(got, c.want) || got == nil {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Far enough above the median but not twice it does not stand out.
	for _, c := range []struct {
		rtt, jit float64
		want     []vocab.Cause
	}{{70, 12, []vocab.Cause{}}, {80, 12, []vocab.Cause{CauseLatency}}, {40, 23, []vocab.Cause{}}, {40, 24, []vocab.Cause{CauseJitter}}} {
		pd := &PlayerDiagnosis{AccessRTTMs: c.rtt, JitterMs: c.jit}
		if got := playerCauses(Player{Measured: true}, pd, true, true, 40, 12, 30); !slices.Equal(got, c.want) {
			t.Errorf("share %v, jitter %v against medians 40, 12: %v, want %v", c.rtt, c.jit, got, c.want)
		}
	}
	// With the medians unknown nothing stands out.
	pd := &PlayerDiagnosis{AccessRTTMs: 500, JitterMs: 500}
	if got := playerCauses(Player{Measured: true}, pd, true, true, nan, nan, 30); len(got) != 0 {
		t.Errorf("unknown medians: %v", got)
	}
}

func TestSessionCosts(t *testing.T) {
	if rungFor(200, 30) == rungFor(300, 30) || rungFor(300, 30) == rungFor(400, 30) || rungFor(400, 20) == rungFor(400, 30) {
		t.Fatal("the round trips below need distinct rungs for this test to tell them apart")
	}
	pairs := []Pair{{A: 0, B: 1, RTT: 400 * ms}, {A: 0, B: 2, RTT: 300 * ms}, {A: 1, B: 2}, {A: 1, B: 3, RTT: 200 * ms}}
	links := []LinkDiagnosis{{ExpectedRTTMs: 100}, {ExpectedRTTMs: nan}, {ExpectedRTTMs: 50}, {ExpectedRTTMs: 100}}
	fast := measuredPlayers(4)
	slow := measuredPlayers(4)
	slow[2].Process = 50 * ms
	cases := []struct {
		name        string
		players     []Player
		pairs       []Pair
		linkIdx     int
		wantFPS     int
		wantRung    int
		wantCounted []float64
		wantWorst   int
	}{
		{"the worst round trip sets the rung", fast, pairs, -1, 30, rungFor(400, 30), []float64{400, 300, 0, 200}, 0},
		{"the culprit path counts at its expected value", fast, pairs, 0, 30, rungFor(300, 30), []float64{100, 300, 0, 200}, 1},
		{"a culprit path with no expected value counts as measured", fast, pairs, 1, 30, rungFor(400, 30), []float64{400, 300, 0, 200}, 0},
		{"the slowest machine sets the frame rate", slow, pairs, -1, 20, rungFor(400, 20), []float64{400, 300, 0, 200}, 0},
		{"nothing measured", fast, pairs[2:3], -1, 30, 0, []float64{0}, -1},
	}
	for _, c := range cases {
		counted := make([]float64, len(c.pairs))
		got := sessionCosts(counted, c.players, c.pairs, links, c.linkIdx, 30)
		if got.fpsAll != c.wantFPS || got.rungAll != c.wantRung || got.worstIdx != c.wantWorst || !slices.Equal(got.counted, c.wantCounted) {
			t.Errorf("%s: fps %d rung %d worst %d counted %v, want %d %d %d %v",
				c.name, got.fpsAll, got.rungAll, got.worstIdx, got.counted, c.wantFPS, c.wantRung, c.wantWorst, c.wantCounted)
		}
	}

	// worstWithout: the worst pair's players leave the next worst without
	// them; everybody else leaves the worst.
	c := costs{counted: []float64{400, 300, 0, 200}, worstIdx: 0}
	for who, want := range []float64{200, 300, 400, 400} {
		if got := c.worstWithout(pairs, who); got != want {
			t.Errorf("worst without %d: %v, want %v", who, got, want)
		}
	}
	if got := (&costs{worstIdx: -1}).worstWithout(pairs, 0); got != 0 {
		t.Errorf("worst without anything measured: %v", got)
	}
}

func TestPlayerCosts(t *testing.T) {
	pairs := []Pair{{A: 0, B: 1}, {A: 0, B: 2}, {A: 1, B: 2}, {A: 1, B: 3}}
	players := measuredPlayers(4)
	players[1].Process = 50 * ms
	players[3].Process = 40 * ms
	players[2].RecentWait = 300 * ms
	c := &costs{fpsAll: 20, rungAll: rungFor(400, 20), counted: []float64{400, 300, 0, 200}, worstIdx: 0}
	out := make([]PlayerDiagnosis, 4)
	cands := playerCosts(out, players, pairs, c, 30)
	wantFPS := []int{20, 25, 20, 20}
	wantRung := []int{rungFor(200, 20), rungFor(300, 20), rungFor(400, 20), rungFor(400, 20)}
	wantCands := []candidate{
		{idx: 0, rungGain: c.rungAll - rungFor(200, 20), fpsGain: 0, worstLeft: 200},
		{idx: 1, rungGain: c.rungAll - rungFor(300, 20), fpsGain: 5, worstLeft: 300},
		{idx: 2, rungGain: 0, fpsGain: 0, worstLeft: 400, recent: 300},
		{idx: 3, rungGain: 0, fpsGain: 0, worstLeft: 400},
	}
	if wantCands[0].rungGain <= wantCands[1].rungGain || wantCands[1].rungGain <= 0 {
		t.Fatal("the round trips below need distinct rungs for this test to tell them apart")
	}
	for i := range out {
		if out[i].FPSWithout != wantFPS[i] || out[i].RungWithout != wantRung[i] {
			t.Errorf("player %d: fps_without %d rung_without %d, want %d %d", i, out[i].FPSWithout, out[i].RungWithout, wantFPS[i], wantRung[i])
		}
	}
	if !slices.Equal(cands, wantCands) {
		t.Errorf("candidates %+v, want %+v", cands, wantCands)
	}

	// Two players: removing one leaves one, so no rung without it; and no
	// rung now means no rung gain.
	two := measuredPlayers(2)
	out = make([]PlayerDiagnosis, 2)
	c = &costs{fpsAll: 30, counted: []float64{400}, worstIdx: 0}
	cands = playerCosts(out, two, pairs[:1], c, 30)
	if out[0].RungWithout != 0 || out[1].RungWithout != 0 || out[0].FPSWithout != 30 || cands[0].rungGain != 0 {
		t.Errorf("two players: %+v %+v", out, cands)
	}
	three := measuredPlayers(3)
	out = make([]PlayerDiagnosis, 3)
	c = &costs{fpsAll: 30, counted: []float64{400, 300, 200}, worstIdx: 0}
	cands = playerCosts(out, three, pairs[:3], c, 30)
	if out[0].RungWithout != rungFor(200, 30) || cands[0].rungGain != 0 {
		t.Errorf("no rung now: %+v %+v", out, cands)
	}
}

func TestNameCulprit(t *testing.T) {
	players := measuredPlayers(4)
	window := 2 * time.Second // a tenth is 200 ms
	cases := []struct {
		name       string
		measured   int
		cands      []candidate
		wantName   string
		wantReason string
	}{
		{"too few measured name nobody", 2, []candidate{{idx: 1, rungGain: 3}}, "", ""},
		{"the largest rung gain", 3, []candidate{{idx: 0, rungGain: 1}, {idx: 1, rungGain: 3}, {idx: 2, fpsGain: 10}}, "b", "rung"},
		{"a rung tie told apart by the worst round trip left", 4,
			[]candidate{{idx: 0, rungGain: 2, worstLeft: 100}, {idx: 1, rungGain: 2, worstLeft: 120}}, "a", "rung"},
		{"a rung tie too close to tell", 4,
			[]candidate{{idx: 0, rungGain: 2, worstLeft: 100}, {idx: 1, rungGain: 2, worstLeft: 104}}, "", ""},
		{"a rung tie under a tenth apart", 4,
			[]candidate{{idx: 0, rungGain: 2, worstLeft: 100}, {idx: 1, rungGain: 2, worstLeft: 110}}, "", ""},
		{"the frame rate when no rung is gained", 4,
			[]candidate{{idx: 0, fpsGain: 5}, {idx: 2, fpsGain: 10}}, "c", "fps"},
		{"a frame-rate tie names nobody", 4,
			[]candidate{{idx: 0, fpsGain: 10}, {idx: 2, fpsGain: 10}}, "", ""},
		{"a frame-rate tie falls to the waits", 4,
			[]candidate{{idx: 0, fpsGain: 10}, {idx: 2, fpsGain: 10, recent: 900}}, "c", "waits"},
		{"waits of at least a tenth", 4,
			[]candidate{{idx: 0, recent: 150}, {idx: 3, recent: 200}}, "d", "waits"},
		{"waits under a tenth", 4, []candidate{{idx: 3, recent: 199}}, "", ""},
		{"no gain at all", 4, []candidate{{idx: 0}, {idx: 1}}, "", ""},
	}
	for _, c := range cases {
		name, reason := nameCulprit(c.cands, players, c.measured, window)
		if name != c.wantName || reason != c.wantReason {
			t.Errorf("%s: %q (%s), want %q (%s)", c.name, name, reason, c.wantName, c.wantReason)
		}
	}
	if name, _ := nameCulprit([]candidate{{idx: 3, recent: 5000}}, players, 4, 0); name != "" {
		t.Errorf("no window: waits named %q", name)
	}
}

func TestVerdict(t *testing.T) {
	if rungs.RungTiming(3).Label() == rungs.RungTiming(4).Label() || rungs.RungTiming(1).Label() == rungs.RungTiming(2).Label() {
		t.Fatal("the rungs below need distinct labels for this test to tell them apart")
	}
	ada := PlayerDiagnosis{Player: "ada", AccessRTTMs: 149.6, AccessLoss: 0.0312, ProcessMs: 50, RungWithout: 1, FPSWithout: 30,
		Causes: []vocab.Cause{CauseLatency, CauseLoss, CauseProcessing}}
	bob := PlayerDiagnosis{Player: "bob", AccessRTTMs: 20, RungWithout: 2, Causes: []vocab.Cause{}}
	slowLink := LinkDiagnosis{Between: [2]string{"bob", "dave"}, ExcessRTTMs: 99.2}
	in := Input{Players: []Player{{Name: "bob"}, {Name: "ada", RecentWait: 300 * ms}, {Name: "cyd"}, {Name: "dave"}, {Name: "erin"}},
		Target: rungs.RungTiming(3)}
	noTarget := Input{Players: in.Players}
	cases := []struct {
		name     string
		d        Diagnosis
		in       Input
		rungAll  int
		fpsAll   int
		worstAll float64
		want     string
	}{
		{"nothing measured", Diagnosis{Measured: 4}, in, 3, 30, 0,
			"Nothing is measured yet: no round trip between two players is known."},
		{"too few measured", Diagnosis{Measured: 2}, in, 3, 30, 100,
			"Fewer than three players are measured, so a slow round trip cannot be split between the two players on it."},
		{"a culprit by rung with loss and a slow machine, at the target", Diagnosis{Measured: 5, Culprit: "ada", Reason: "rung", Players: []PlayerDiagnosis{bob, ada}}, in, 4, 20, 200,
			"ada's connection adds 150 ms to every round trip with ada and loses 3.1 % of its packets; it holds the match at " +
				rungs.RungTiming(3).Label() + " — without it: " + rungs.RungTiming(1).Label() +
				". Its machine also needs 50 ms per frame, which holds the game at 20 fps — without it: 30 fps."},
		{"a culprit by rung, the rung standing in for the target", Diagnosis{Measured: 5, Culprit: "bob", Reason: "rung", Players: []PlayerDiagnosis{bob, ada}}, noTarget, 4, 30, 200,
			"bob's connection adds 20 ms to every round trip with bob; it holds the match at " +
				rungs.RungTiming(4).Label() + " — without it: " + rungs.RungTiming(2).Label() + "." +
				" ada loses 3.1 % of its packets and its machine needs 50 ms of every 33 ms frame; so far it costs the match no waiting."},
		{"a culprit by rung among three", Diagnosis{Measured: 3, Culprit: "bob", Reason: "rung", Players: []PlayerDiagnosis{bob}}, in, 3, 30, 200,
			"bob's connection adds 20 ms to every round trip with bob; it holds the match at " +
				rungs.RungTiming(3).Label() + " — without it: " + rungs.RungTiming(2).Label() +
				". With three players a slow path cannot be told from two slow players."},
		{"a culprit by fps", Diagnosis{Measured: 5, Culprit: "ada", Reason: "fps", Players: []PlayerDiagnosis{bob, ada}}, in, 3, 20, 200,
			"ada's machine needs 50 ms per frame; it holds the match at 20 fps — without it: 30 fps."},
		{"a culprit by fps among three", Diagnosis{Measured: 3, Culprit: "ada", Reason: "fps", Players: []PlayerDiagnosis{bob, ada}}, in, 3, 20, 200,
			"ada's machine needs 50 ms per frame; it holds the match at 20 fps — without it: 30 fps."},
		{"a culprit by waits", Diagnosis{Measured: 5, Culprit: "ada", Reason: "waits", Players: []PlayerDiagnosis{bob, ada}}, in, 3, 30, 200,
			"Others waited for ada 300 ms over the match's last two timing checks."},
		{"a slow path alone", Diagnosis{Measured: 5, CulpritLink: &slowLink.Between, Links: []LinkDiagnosis{{}, slowLink}}, in, 3, 30, 200,
			"The path between bob and dave is slow (99 ms more than their connections explain); neither player's own link is at fault."},
		{"a culprit and a slow path", Diagnosis{Measured: 5, Culprit: "ada", Reason: "fps", Players: []PlayerDiagnosis{ada},
			CulpritLink: &slowLink.Between, Links: []LinkDiagnosis{slowLink}}, in, 3, 20, 200,
			"ada's machine needs 50 ms per frame; it holds the match at 20 fps — without it: 30 fps. " +
				"The path between bob and dave is slow (99 ms more than their connections explain)."},
		{"nobody among three", Diagnosis{Measured: 3}, in, 3, 30, 200,
			"No one's connection or machine holds the match back; it runs at " + rungs.RungTiming(3).Label() + "."},
		{"two slow of three", Diagnosis{Measured: 3, Players: []PlayerDiagnosis{
			{Player: "ada", AccessRTTMs: 150}, {Player: "bob", AccessRTTMs: 20}, {Player: "cyd", AccessRTTMs: 140}}}, in, 3, 30, 200,
			"With three players lagscope cannot tell whether ada and cyd are both slow or bob is slow together with the path between ada and cyd; a fourth player would tell them apart."},
		{"nobody, with a target", Diagnosis{Measured: 4}, in, 0, 30, 200,
			"No one's connection or machine holds the match back; it runs at " + rungs.RungTiming(3).Label() + "."},
		{"nobody, with neither target nor rung", Diagnosis{Measured: 4}, noTarget, 0, 30, 200,
			"No one's connection or machine holds the match back."},
	}
	for _, c := range cases {
		if got := verdictOf(c.d, c.in, c.rungAll, c.fpsAll, c.worstAll); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// verdictOf words d's verdict as Diagnose does, from in and the costs.
func verdictOf(d Diagnosis, in Input, rungAll, fpsAll int, worstAll float64) string {
	d.facts = newFacts(in, rungAll, fpsAll, worstAll)
	return d.reword(Timings{Target: in.Target, InForce: in.InForce, Frame: in.Frame, FPS: in.FPS})
}

// TestFitterStart checks the fit's first guess: each player's median pair
// value less half the median of those medians, over the pairs between
// players in use only.
func TestFitterStart(t *testing.T) {
	// Exact shares 10, 20, 40: pairs 30, 50, 60; medians 40, 45, 55; their
	// median 45.
	y := map[[2]int]float64{{0, 1}: 30, {0, 2}: 50, {1, 2}: 60, {2, 3}: 10}
	cases := []struct {
		name       string
		use        []bool
		want       []float64 // NaN: not active
		wantActive int
	}{
		{"a triangle and a player out of use", []bool{true, true, true, false}, []float64{17.5, 22.5, 32.5, nan}, 3},
		{"a pair alone", []bool{true, true, false, false}, []float64{15, 15, nan, nan}, 2},
		{"nobody in use", []bool{false, false, false, false}, []float64{nan, nan, nan, nan}, 0},
	}
	for _, c := range cases {
		var f fitter
		f.reset(4)
		for k, v := range y {
			f.set(k[0], k[1], v)
		}
		f.restrict(c.use)
		s := make([]float64, 4)
		active := f.start(s)
		for i := range s {
			if !f.active[i] {
				s[i] = nan
			}
		}
		if active != c.wantActive || !sameFloats(s, c.want, 1e-9) {
			t.Errorf("%s: %d active, guess %v, want %d %v", c.name, active, s, c.wantActive, c.want)
		}
	}
}
