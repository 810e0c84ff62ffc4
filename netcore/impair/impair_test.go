package impair

import (
	"math"
	"slices"
	"testing"
	"time"
)

// decideN runs n datagrams through a path and returns every decision.
func decideN(p *Path, n int) [][]time.Duration {
	out := make([][]time.Duration, n)
	var dst []time.Duration
	for i := range out {
		dst = p.Decide(dst)
		out[i] = slices.Clone(dst)
	}
	return out
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.5f, want %.5f ± %.5f", what, got, want, tol)
	}
}

// The drop count is loss that was asked for and says so (L7): over many
// datagrams it matches the asked-for chance, and Stats names it Dropped, not
// anything a receiver measured.
func TestLossRateMatchesAskedFor_L7(t *testing.T) {
	const n = 200_000
	for _, loss := range []float64{0, 0.01, 0.05, 0.5, 1} {
		for _, seed := range []uint64{1, 2, 3} {
			p := NewPath(Profile{Delay: 10 * time.Millisecond, Loss: loss}, seed)
			dropped := 0
			for _, d := range decideN(p, n) {
				if len(d) == 0 {
					dropped++
				}
			}
			st := p.Stats()
			if st.Offered != n || st.Dropped != uint64(dropped) {
				t.Fatalf("loss %v seed %d: stats %+v, counted %d dropped of %d", loss, seed, st, dropped, n)
			}
			// Binomial standard deviation is at most 0.0012 at n = 200 000;
			// 0.005 is four of them.
			within(t, "loss rate", float64(dropped)/n, loss, 0.005)
		}
	}
}

func TestJitterIsUniformWithinBounds(t *testing.T) {
	const n = 100_000
	delay, jitter := 40*time.Millisecond, 5*time.Millisecond
	p := NewPath(Profile{Delay: delay, Jitter: jitter}, 7)
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	var sum, sumSq float64
	for _, d := range decideN(p, n) {
		if len(d) != 1 {
			t.Fatalf("no loss or dup asked for, got %d copies", len(d))
		}
		lo, hi = min(lo, d[0]), max(hi, d[0])
		x := float64(d[0] - delay)
		sum += x
		sumSq += x * x
	}
	if lo < delay-jitter || hi >= delay+jitter {
		t.Fatalf("delays span [%v, %v], want within [%v, %v)", lo, hi, delay-jitter, delay+jitter)
	}
	// Uniform over the whole range: the extremes are reached.
	if lo > delay-jitter+50*time.Microsecond || hi < delay+jitter-50*time.Microsecond {
		t.Errorf("delays span [%v, %v], want close to both ends of %v ± %v", lo, hi, delay, jitter)
	}
	mean := sum / n
	within(t, "mean offset (ms)", mean/1e6, 0, 0.05)
	// Variance of a uniform ±J is J²/3.
	sd := math.Sqrt(sumSq/n - mean*mean)
	within(t, "standard deviation (ms)", sd/1e6, float64(jitter)/1e6/math.Sqrt(3), 0.05)
}

func TestDelayNeverNegative(t *testing.T) {
	p := NewPath(Profile{Delay: time.Millisecond, Jitter: 5 * time.Millisecond}, 1)
	zeros := 0
	for _, d := range decideN(p, 10_000) {
		if d[0] < 0 {
			t.Fatalf("negative delay %v", d[0])
		}
		if d[0] == 0 {
			zeros++
		}
	}
	// (5-1)/10 of the draws fall below zero and are delivered at once.
	within(t, "share delivered at once", float64(zeros)/10_000, 0.4, 0.03)
}

func TestDuplicationRate(t *testing.T) {
	const n = 100_000
	p := NewPath(Profile{Delay: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Dup: 0.1}, 11)
	dups := 0
	for _, d := range decideN(p, n) {
		switch len(d) {
		case 1:
		case 2:
			dups++
			for _, c := range d {
				if c < 18*time.Millisecond || c >= 22*time.Millisecond {
					t.Fatalf("copy delay %v outside 20ms ± 2ms", c)
				}
			}
		default:
			t.Fatalf("%d copies", len(d))
		}
	}
	if st := p.Stats(); st.Duplicated != uint64(dups) || st.Offered-st.Dropped+st.Duplicated != n+uint64(dups) {
		t.Fatalf("stats %+v, counted %d duplicates", st, dups)
	}
	within(t, "duplication rate", float64(dups)/n, 0.1, 0.005)
}

func TestReorderHoldsBackTheAskedShare(t *testing.T) {
	const n = 100_000
	p := NewPath(Profile{Delay: 10 * time.Millisecond, Reorder: 0.05, ReorderDelay: 30 * time.Millisecond}, 5)
	held := 0
	for _, d := range decideN(p, n) {
		switch d[0] {
		case 10 * time.Millisecond:
		case 40 * time.Millisecond:
			held++
		default:
			t.Fatalf("delay %v, want 10ms or 40ms", d[0])
		}
	}
	if p.Stats().Reordered != uint64(held) {
		t.Fatalf("stats %+v, counted %d held back", p.Stats(), held)
	}
	within(t, "reorder rate", float64(held)/n, 0.05, 0.004)
}

// Gilbert–Elliott: with a lossless good state and a lossy bad state, losses
// come in runs whose mean length is 1/PBadToGood, and the long-run loss is
// the bad state's share.
func TestBurstLossLengthsAndRate(t *testing.T) {
	const n = 400_000
	g := GilbertElliott{PGoodToBad: 0.02, PBadToGood: 0.25, LossBad: 1}
	p := NewPath(Profile{Burst: &g}, 3)
	dropped, runs, run := 0, 0, 0
	longest := 0
	for _, d := range decideN(p, n) {
		if len(d) == 0 {
			dropped++
			run++
			continue
		}
		if run > 0 {
			runs++
			longest = max(longest, run)
			run = 0
		}
	}
	within(t, "burst loss rate", float64(dropped)/n, g.meanLoss(), 0.004)
	within(t, "mean burst length", float64(dropped)/float64(runs), 4, 0.15)
	if longest < 20 {
		t.Errorf("longest burst %d: geometric run lengths of mean 4 should reach 20 in %d runs", longest, runs)
	}

	// Independent loss at the same rate has mean runs of 1/(1-loss), near 1.
	q := NewPath(Profile{Loss: g.meanLoss()}, 3)
	dropped, runs, run = 0, 0, 0
	for _, d := range decideN(q, n) {
		if len(d) == 0 {
			dropped++
			run++
		} else if run > 0 {
			runs++
			run = 0
		}
	}
	within(t, "independent mean run", float64(dropped)/float64(runs), 1/(1-g.meanLoss()), 0.05)
}

func TestMeanLoss(t *testing.T) {
	within(t, "mean loss", GilbertElliott{PGoodToBad: 0.1, PBadToGood: 0.3, LossGood: 0.01, LossBad: 0.5}.meanLoss(),
		0.25*0.5+0.75*0.01, 1e-12)
	within(t, "mean loss, frozen good", GilbertElliott{LossGood: 0.2, LossBad: 1}.meanLoss(), 0.2, 1e-12)
}

func TestSameSeedSameDecisions(t *testing.T) {
	prof := Profile{Delay: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1, Dup: 0.05,
		Reorder: 0.05, ReorderDelay: 20 * time.Millisecond, Burst: &GilbertElliott{PGoodToBad: 0.05, PBadToGood: 0.3, LossBad: 0.7}}
	a := decideN(NewPath(prof, 42), 5000)
	b := decideN(NewPath(prof, 42), 5000)
	c := decideN(NewPath(prof, 43), 5000)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Fatal("same seed, same profile: decisions differ")
	}
	if slices.EqualFunc(a, c, slices.Equal) {
		t.Fatal("different seeds gave identical decisions")
	}
}

// Every datagram draws the same amount of randomness whatever the profile, so
// two profiles that differ only in delay lose the same datagrams.
func TestProfilesDifferingInDelayLoseTheSameDatagrams(t *testing.T) {
	a := decideN(NewPath(Profile{Delay: 5 * time.Millisecond, Loss: 0.2}, 9), 2000)
	b := decideN(NewPath(Profile{Delay: 80 * time.Millisecond, Jitter: 3 * time.Millisecond, Loss: 0.2}, 9), 2000)
	for i := range a {
		if (len(a[i]) == 0) != (len(b[i]) == 0) {
			t.Fatalf("datagram %d: dropped in one profile and not the other", i)
		}
	}
}

func TestSetProfileKeepsTheRandomStream(t *testing.T) {
	prof := Profile{Delay: 10 * time.Millisecond, Jitter: 4 * time.Millisecond, Loss: 0.1}
	whole := decideN(NewPath(prof, 8), 2000)

	p := NewPath(prof, 8)
	first := decideN(p, 1000)
	p.SetProfile(prof) // a timeline entry that changes nothing
	second := decideN(p, 1000)
	if !slices.EqualFunc(whole, append(first, second...), slices.Equal) {
		t.Fatal("SetProfile restarted or skipped the random stream")
	}

	p.SetProfile(Profile{Loss: 1})
	for i, d := range decideN(p, 100) {
		if len(d) != 0 {
			t.Fatalf("datagram %d after switching to loss 1 was delivered", i)
		}
	}
	if st := p.Stats(); st.Offered != 2100 || st.Dropped < 100 {
		t.Fatalf("stats carried over wrongly: %+v", st)
	}
}

func TestSetProfileCopiesTheBurstModel(t *testing.T) {
	g := &GilbertElliott{PGoodToBad: 0.5, PBadToGood: 0.5, LossBad: 1}
	p := NewPath(Profile{Burst: g}, 1)
	g.LossBad = 0 // the caller reuses its value; the path must not see it
	dropped := 0
	for _, d := range decideN(p, 1000) {
		if len(d) == 0 {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("the path followed a change to the caller's GilbertElliott")
	}
	if got := p.Profile().Burst; got == nil || got.LossBad != 1 || got == g {
		t.Fatalf("Profile().Burst = %+v, want a copy with LossBad 1", got)
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]Profile{
		"negative delay":       {Delay: -1},
		"negative jitter":      {Jitter: -1},
		"loss above 1":         {Loss: 1.5},
		"negative dup":         {Dup: -0.1},
		"NaN reorder":          {Reorder: math.NaN(), ReorderDelay: time.Millisecond},
		"reorder without hold": {Reorder: 0.1},
		"negative hold":        {ReorderDelay: -time.Millisecond},
		"burst chance above 1": {Burst: &GilbertElliott{PGoodToBad: 2}},
		"burst loss negative":  {Burst: &GilbertElliott{LossBad: -1}},
	}
	for name, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, p)
		}
	}
	for _, np := range Profiles() {
		if err := np.Profile.Validate(); err != nil {
			t.Errorf("profile %s: %v", np.Name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewPath accepted an invalid profile")
		}
	}()
	NewPath(Profile{Loss: 2}, 1)
}

func TestProfileString(t *testing.T) {
	got := Profile{Delay: 40 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.02, Dup: 0.001,
		Reorder: 0.01, ReorderDelay: 10 * time.Millisecond,
		Burst: &GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.25, LossBad: 0.5}}.String()
	want := "delay 40ms ± 5ms, loss 2%, dup 0.1%, reorder 1% (held 10ms), burst loss 1.923% (bad spells of 4.0 datagrams losing 50%)"
	if got != want {
		t.Errorf("String() =\n %q, want\n %q", got, want)
	}
	if got := (Profile{}).String(); got != "delay 0s" {
		t.Errorf("zero profile String() = %q", got)
	}
}

func TestNamedProfiles(t *testing.T) {
	seen := map[string]bool{}
	for _, np := range Profiles() {
		if seen[np.Name] || np.Description == "" {
			t.Errorf("profile %q duplicated or undescribed", np.Name)
		}
		seen[np.Name] = true
	}
	for _, name := range []string{"lan", "cable", "dsl", "wifi"} {
		if !seen[name] {
			t.Errorf("missing profile %q", name)
		}
	}
	dsl, _ := ProfileByName("dsl")
	if dsl.Loss != 0.01 {
		t.Errorf("dsl loss %v, want 1 %%", dsl.Loss)
	}
	wifi, _ := ProfileByName("wifi")
	if wifi.Burst == nil || wifi.Jitter < 10*time.Millisecond {
		t.Errorf("wifi %v: want heavy jitter and burst loss", wifi)
	}
	wifi.Burst.LossBad = 0
	if again, _ := ProfileByName("wifi"); again.Burst.LossBad == 0 {
		t.Error("ProfileByName handed out a shared GilbertElliott")
	}
	if _, ok := ProfileByName("dial-up"); ok {
		t.Error("ProfileByName found a profile that does not exist")
	}
}

func TestStatsAdd(t *testing.T) {
	s := Stats{1, 2, 3, 4}.Add(Stats{10, 20, 30, 40})
	if s != (Stats{11, 22, 33, 44}) {
		t.Fatalf("Add = %+v", s)
	}
}

func BenchmarkDecide(b *testing.B) {
	for _, c := range []struct {
		name string
		prof Profile
	}{
		{"clean", Profile{Delay: 20 * time.Millisecond}},
		{"wifi", Profiles()[3].Profile},
		{"everything", Profile{Delay: 40 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.02, Dup: 0.01,
			Reorder: 0.01, ReorderDelay: 10 * time.Millisecond, Burst: &GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.3, LossBad: 0.5}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := NewPath(c.prof, 1)
			dst := make([]time.Duration, 0, 2)
			b.ReportAllocs()
			for b.Loop() {
				dst = p.Decide(dst)
			}
		})
	}
}
