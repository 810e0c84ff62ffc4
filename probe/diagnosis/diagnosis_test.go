package diagnosis

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// world is a known truth: each player's share of the round trip (ms), its
// share of the variation (ms), its up and down loss, and extra round trip
// on chosen paths. build turns it into what the pairs would measure.
type world struct {
	names    []string
	share    []float64
	jitter   []float64
	up, down []float64
	excess   map[[2]int]float64
	noise    float64 // ± ms of measurement noise per pair
	seed     uint64
	process  map[int]time.Duration
}

func (w world) build() Input {
	rng := rand.New(rand.NewPCG(w.seed, 99))
	in := Input{Speed: 30}
	for i, n := range w.names {
		in.Players = append(in.Players, Player{Name: n, Measured: true, Process: w.process[i]})
	}
	for a := range w.names {
		for b := a + 1; b < len(w.names); b++ {
			rtt := w.share[a] + w.share[b] + w.excess[[2]int{a, b}]
			if w.noise > 0 {
				rtt += (rng.Float64()*2 - 1) * w.noise
			}
			p := Pair{A: a, B: b, RTT: dur(rtt)}
			if w.jitter != nil {
				p.RTTVar = dur(math.Sqrt(w.jitter[a]*w.jitter[a] + w.jitter[b]*w.jitter[b]))
			}
			const sent = 20000
			p.ExpectedAB, p.ExpectedBA = sent, sent
			if w.up != nil {
				// Expected losses, rounded: the sampling noise of a real
				// count is added by the simulation tests, not here.
				pab := 1 - (1-w.up[a])*(1-w.down[b])
				pba := 1 - (1-w.up[b])*(1-w.down[a])
				p.MissingAB = uint64(math.Round(pab * sent * (1 + (rng.Float64()*2-1)*0.05)))
				p.MissingBA = uint64(math.Round(pba * sent * (1 + (rng.Float64()*2-1)*0.05)))
			}
			in.Pairs = append(in.Pairs, p)
		}
	}
	return in
}

func names(n int) []string {
	base := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	out := make([]string, n)
	for i := range out {
		if i < len(base) {
			out[i] = base[i]
		} else {
			out[i] = "p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
	}
	return out
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.2f, want %.2f ± %.2f", what, got, want, tol)
	}
}

// wantRungWithout is the rung of the others' worst round trip with headroom
// (S9), computed from the truth, not from the code under test.
func wantRungWithout(w world, who int, fps int) int {
	worst := 0.0
	for a := range w.names {
		for b := a + 1; b < len(w.names); b++ {
			if a == who || b == who {
				continue
			}
			worst = math.Max(worst, w.share[a]+w.share[b]+w.excess[[2]int{a, b}])
		}
	}
	return rungs.Need(rungs.WithHeadroom(dur(worst)), fps).Rung()
}

func TestSharesFromAllPairs_S9(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		w := world{names: names(5), share: []float64{20, 25, 30, 35, 150}, noise: 3, seed: seed}
		d := Diagnose(w.build())
		for i, p := range d.Players {
			near(t, p.Player+" access_rtt_ms", p.AccessRTTMs, w.share[i], math.Max(5, 0.1*w.share[i]))
		}
		if d.Culprit != "erin" || d.Reason != "rung" {
			t.Errorf("seed %d: culprit %q (%s), want erin by rung; verdict %q", seed, d.Culprit, d.Reason, d.Verdict)
		}
		if d.CulpritLink != nil {
			t.Errorf("seed %d: culprit_link %v, want none", seed, *d.CulpritLink)
		}
		if got, want := d.Players[4].RungWithout, wantRungWithout(w, 4, 30); got != want {
			t.Errorf("seed %d: erin's rung_without %d, want %d", seed, got, want)
		}
		if !has(d.Players[4].Causes, CauseLatency) || has(d.Players[0].Causes, CauseLatency) {
			t.Errorf("seed %d: causes %v / %v", seed, d.Players[4].Causes, d.Players[0].Causes)
		}
		if !strings.HasPrefix(d.Verdict, "erin's connection adds 1") || !strings.Contains(d.Verdict, "it holds the match at Fast (rung 2) — without it: Fast (rung 1)") {
			t.Errorf("seed %d: verdict %q", seed, d.Verdict)
		}
	}
}

func TestOutlierPathsDoNotInflateShares_S9(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		excess   map[[2]int]float64
		wantLink *[2]string
	}{
		// Four players on similar links: with four, a slow a–b path and a
		// fast c–d one trade along a line of equal fits, and the fit takes
		// the most ordinary shares (docs/diagnosis.md, limits).
		{"one slow path of four players", 4, map[[2]int]float64{{0, 1}: 400}, &[2]string{"alice", "bob"}},
		{"one slow path of six players", 6, map[[2]int]float64{{0, 1}: 400}, &[2]string{"alice", "bob"}},
		{"two equal slow paths of eight", 8, map[[2]int]float64{{0, 1}: 300, {2, 5}: 300}, nil},
		{"a slow path and a mild one of eight", 8, map[[2]int]float64{{1, 3}: 300, {2, 5}: 60}, &[2]string{"bob", "dave"}},
	}
	for _, c := range cases {
		for seed := uint64(1); seed <= 3; seed++ {
			w := world{names: names(c.n), share: make([]float64, c.n), excess: c.excess, noise: 2, seed: seed}
			for i := range w.share {
				w.share[i] = 15 + 3*float64(i)
				if c.n == 4 {
					w.share[i] = 20 + float64(i%2)
				}
			}
			d := Diagnose(w.build())
			for i, p := range d.Players {
				near(t, c.name+": "+p.Player, p.AccessRTTMs, w.share[i], 5)
			}
			switch {
			case c.wantLink == nil && d.CulpritLink != nil:
				t.Errorf("%s seed %d: culprit_link %v, want none", c.name, seed, *d.CulpritLink)
			case c.wantLink != nil && (d.CulpritLink == nil || *d.CulpritLink != *c.wantLink):
				t.Errorf("%s seed %d: culprit_link %v, want %v", c.name, seed, d.CulpritLink, *c.wantLink)
			}
			if d.Culprit != "" {
				t.Errorf("%s seed %d: culprit %q, want none: the cost is the path's; verdict %q", c.name, seed, d.Culprit, d.Verdict)
			}
			if c.wantLink != nil && !strings.Contains(d.Verdict, "neither player's own link is at fault") {
				t.Errorf("%s: verdict %q", c.name, d.Verdict)
			}
		}
	}
}

func TestLossShares_L2(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		w := world{names: names(5), share: []float64{20, 20, 20, 20, 20}, seed: seed,
			up: []float64{0, 0, 0.05, 0, 0.002}, down: []float64{0, 0.001, 0, 0, 0.002}}
		d := Diagnose(w.build())
		for i, p := range d.Players {
			if i == 2 {
				near(t, "carol access_loss", p.AccessLoss, 0.05, 0.015)
				if !has(p.Causes, CauseLoss) {
					t.Errorf("carol causes %v lack loss", p.Causes)
				}
				continue
			}
			if math.IsNaN(p.AccessLoss) || p.AccessLoss >= 0.01 {
				t.Errorf("seed %d: %s access_loss %v, want under 1 %%", seed, p.Player, p.AccessLoss)
			}
		}
	}
}

func TestJitterShares(t *testing.T) {
	w := world{names: names(5), share: []float64{20, 20, 20, 20, 20}, jitter: []float64{2, 2, 2, 40, 2}, seed: 1}
	d := Diagnose(w.build())
	for i, p := range d.Players {
		near(t, p.Player+" jitter_ms", p.JitterMs, w.jitter[i], 1)
	}
	if !has(d.Players[3].Causes, CauseJitter) || has(d.Players[0].Causes, CauseJitter) {
		t.Errorf("causes %v / %v", d.Players[3].Causes, d.Players[0].Causes)
	}
}

// A clean two-player LAN gets a calm sentence, not a fault: the round trip
// needs Fast, nothing is lost, and one round trip cannot be split.
func TestTwoPlayersOnACleanLAN(t *testing.T) {
	w := world{names: names(2), share: []float64{1, 1}, seed: 1}
	d := Diagnose(w.build())
	if want := "Both connections look fine; with two players lagscope cannot tell whose side a delay is on."; d.Verdict != want {
		t.Errorf("verdict %q\nwant    %q", d.Verdict, want)
	}
}

func TestTwoPlayersCannotBeToldApart(t *testing.T) {
	w := world{names: names(2), share: []float64{20, 200}, seed: 1}
	d := Diagnose(w.build())
	if d.Culprit != "" || d.CulpritLink != nil {
		t.Errorf("culprit %q link %v, want none", d.Culprit, d.CulpritLink)
	}
	for _, p := range d.Players {
		if !math.IsNaN(p.AccessRTTMs) || !math.IsNaN(p.AccessLoss) || !math.IsNaN(p.JitterMs) {
			t.Errorf("%s has shares %v %v %v, want none", p.Player, p.AccessRTTMs, p.AccessLoss, p.JitterMs)
		}
		if p.RungWithout != 0 {
			t.Errorf("%s rung_without %d, want null: one player would be left", p.Player, p.RungWithout)
		}
	}
	if want := "The round trip between alice and bob is 220 ms; the match runs at Normal (rung 3). " +
		"With two players lagscope cannot tell whose side it is on."; d.Verdict != want {
		t.Errorf("verdict %q\nwant    %q", d.Verdict, want)
	}
	if d.Links[0].RTTMs != 220 || !math.IsNaN(d.Links[0].ExpectedRTTMs) {
		t.Errorf("link %+v", d.Links[0])
	}
}

// Three players, one slow path: the longest round trip exceeds the other
// two together, so no non-negative shares fit (the exact split gives the
// player between a share below zero) and only the path explains the
// three. culprit_link names it, with its least excess; the players' shares
// are what is left.
func TestThreePlayersOneSlowPath(t *testing.T) {
	w := world{names: names(3), share: []float64{20, 30, 40}, excess: map[[2]int]float64{{1, 2}: 100}, seed: 1}
	d := Diagnose(w.build())
	want := []float64{0, 50, 60} // the exact split (−30, 80, 90) needs alice below zero
	for i, p := range d.Players {
		near(t, p.Player, p.AccessRTTMs, want[i], 0.2)
	}
	if d.CulpritLink == nil || *d.CulpritLink != [2]string{"bob", "carol"} {
		t.Fatalf("culprit_link %v, want bob–carol", d.CulpritLink)
	}
	for _, l := range d.Links {
		wantExcess := 0.0
		if l.Between == [2]string{"bob", "carol"} {
			wantExcess = 60 // 170 − 50 − 60: the least the path adds
		}
		near(t, "excess of "+l.Between[0]+"–"+l.Between[1], l.ExcessRTTMs, wantExcess, 0.2)
	}
	if !strings.HasPrefix(d.Verdict, "The path between bob and carol is slow") {
		t.Errorf("verdict %q", d.Verdict)
	}

	// The field's own case: host–carol at 240 ms, host–bob 0.3 ms,
	// bob–carol under 1 ms.
	in := Input{Speed: 30, Players: []Player{{Name: "host", Measured: true}, {Name: "bob", Measured: true}, {Name: "carol", Measured: true}},
		Pairs: []Pair{{A: 0, B: 1, RTT: dur(0.3)}, {A: 0, B: 2, RTT: dur(240)}, {A: 1, B: 2, RTT: dur(0.9)}}}
	d = Diagnose(in)
	if d.CulpritLink == nil || *d.CulpritLink != [2]string{"host", "carol"} || d.Culprit != "" {
		t.Errorf("culprit %q, culprit_link %v, want the host–carol path and no player", d.Culprit, d.CulpritLink)
	}
	if strings.Contains(d.Verdict, "cannot be told") {
		t.Errorf("verdict %q", d.Verdict)
	}

	// A round trip a few milliseconds over the other two is noise, not a
	// slow path.
	w = world{names: names(3), share: []float64{20, 0, 40}, excess: map[[2]int]float64{{0, 2}: 10}, seed: 1}
	if d := Diagnose(w.build()); d.CulpritLink != nil {
		t.Errorf("10 ms over the triangle: culprit_link %v", *d.CulpritLink)
	}
}

// Three players, two of them slow: every round trip is slow and they fit
// the shares exactly, but they fit the third player slow with the path
// between the two just as well. The verdict says so.
func TestThreePlayersTwoSlowCannotBeTold(t *testing.T) {
	w := world{names: names(3), share: []float64{150, 20, 150}, seed: 1}
	d := Diagnose(w.build())
	if d.CulpritLink != nil {
		t.Errorf("culprit_link %v", *d.CulpritLink)
	}
	for _, l := range d.Links {
		if !math.IsNaN(l.ExcessRTTMs) {
			t.Errorf("link %v excess %v, want unknown", l.Between, l.ExcessRTTMs)
		}
	}
	want := "With three players lagscope cannot tell whether alice and carol are both slow or bob is slow together with the path between alice and carol; a fourth player would tell them apart."
	if !strings.Contains(d.Verdict, want) {
		t.Errorf("verdict %q\nwant it to say %q", d.Verdict, want)
	}
}

func TestProcessingCulprit_S15(t *testing.T) {
	w := world{names: names(4), share: []float64{20, 20, 20, 20}, seed: 1,
		process: map[int]time.Duration{2: 50 * time.Millisecond, 0: 5 * time.Millisecond}}
	d := Diagnose(w.build())
	carol := d.Players[2]
	if carol.FPSWithout != 30 || d.Players[0].FPSWithout != 20 {
		t.Errorf("fps_without carol %d alice %d, want 30 and 20", carol.FPSWithout, d.Players[0].FPSWithout)
	}
	if !has(carol.Causes, CauseProcessing) || has(d.Players[0].Causes, CauseProcessing) {
		t.Errorf("causes %v / %v", carol.Causes, d.Players[0].Causes)
	}
	if d.Culprit != "carol" || d.Reason != "fps" {
		t.Errorf("culprit %q (%s), want carol by fps", d.Culprit, d.Reason)
	}
	if d.Verdict != "carol's machine needs 50 ms per frame; it holds the match at 20 fps — without it: 30 fps." {
		t.Errorf("verdict %q", d.Verdict)
	}
}

// A slow machine also answers late, so its round trips grow: when it is the
// culprit by rung, the verdict says its frame time and rate as well (a live
// demo with --slow bob=60ms read "bob's connection adds 627 ms" and nothing
// more).
func TestSlowMachineCulpritByRungNamesItsFrameTime_S15(t *testing.T) {
	w := world{names: names(4), share: []float64{20, 20, 300, 20}, seed: 1,
		process: map[int]time.Duration{2: 50 * time.Millisecond}}
	d := Diagnose(w.build())
	if d.Culprit != "carol" || d.Reason != "rung" {
		t.Fatalf("culprit %q (%s), want carol by rung; verdict %q", d.Culprit, d.Reason, d.Verdict)
	}
	if want := " Its machine also needs 50 ms per frame, which holds the game at 20 fps — without it: 30 fps."; !strings.HasSuffix(d.Verdict, want) {
		t.Errorf("verdict %q, want it to end %q", d.Verdict, want)
	}
}

func TestTiesNameNobody(t *testing.T) {
	// Two equally slow players: removing either leaves the same worst round
	// trip, so nobody stands out.
	w := world{names: names(5), share: []float64{20, 20, 20, 150, 150}, seed: 1}
	d := Diagnose(w.build())
	if d.Culprit != "" {
		t.Errorf("culprit %q, want none (tie); verdict %q", d.Culprit, d.Verdict)
	}
	// Two equally slow machines: the same for the frame rate.
	w = world{names: names(4), share: []float64{20, 20, 20, 20}, seed: 1,
		process: map[int]time.Duration{1: 50 * time.Millisecond, 3: 50 * time.Millisecond}}
	if d = Diagnose(w.build()); d.Culprit != "" {
		t.Errorf("culprit %q, want none (tie)", d.Culprit)
	}
}

func TestWaitsCountOnlyAboveATenth(t *testing.T) {
	w := world{names: names(4), share: []float64{5, 5, 5, 5}, seed: 1}
	in := w.build()
	in.Window = 2 * 256 * time.Second / 30 // two evaluation intervals at 30 fps
	in.Players[1].RecentWait = in.Window / 20
	if d := Diagnose(in); d.Culprit != "" {
		t.Errorf("culprit %q for a wait of 5 %%", d.Culprit)
	}
	in.Players[1].RecentWait = in.Window / 5
	in.Players[1].CausedWait = in.Window / 5
	d := Diagnose(in)
	if d.Culprit != "bob" || d.Reason != "waits" {
		t.Errorf("culprit %q (%s), want bob by waits", d.Culprit, d.Reason)
	}
	if d.Players[1].CausedWaitMs != units.Millis(in.Window/5) {
		t.Errorf("caused_wait_ms %v", d.Players[1].CausedWaitMs)
	}
}

func TestNothingMeasured(t *testing.T) {
	in := Input{Speed: 30, Players: []Player{{Name: "alice"}, {Name: "bob"}, {Name: "carol"}}}
	d := Diagnose(in)
	if d.Culprit != "" || d.CulpritLink != nil || !strings.HasPrefix(d.Verdict, "Nothing is measured") {
		t.Fatalf("%+v", d)
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `{"player":"alice","access_rtt_ms":null,"access_loss":null,"jitter_ms":null,"process_ms":0,"caused_wait_ms":0,"rung_without":null,"fps_without":30,"causes":["unmeasured"],"where":null,"bufferbloat_ms":null}`) ||
		!strings.Contains(string(js), `"culprit":null,"culprit_link":null,"shared_hop":null`) {
		t.Errorf("json %s", js)
	}
}

func TestEventJSONMatchesContract(t *testing.T) {
	w := world{names: names(5), share: []float64{20, 25, 30, 35, 150}, excess: map[[2]int]float64{{0, 1}: 0}, seed: 1}
	ev := Event{Frame: 1280, Diagnosis: Diagnose(w.build())}
	js, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"type", "frame", "verdict", "culprit", "culprit_link", "shared_hop", "players", "links"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no key %q in %s", k, js)
		}
	}
	if m["type"] != "diagnosis" || m["frame"] != 1280.0 || m["culprit"] != "erin" || m["culprit_link"] != nil {
		t.Errorf("%s", js)
	}
	p := m["players"].([]any)[4].(map[string]any)
	for _, k := range []string{"player", "access_rtt_ms", "access_loss", "jitter_ms", "process_ms", "caused_wait_ms", "rung_without", "fps_without", "causes", "where", "bufferbloat_ms"} {
		if _, ok := p[k]; !ok {
			t.Errorf("player has no key %q", k)
		}
	}
	if len(p) != 11 || p["access_rtt_ms"] != 150.0 || p["rung_without"] != 1.0 {
		t.Errorf("player %v", p)
	}
	l := m["links"].([]any)[0].(map[string]any)
	if len(l) != 6 || l["rtt_ms"] != 45.0 || l["expected_rtt_ms"] != 45.0 || l["excess_rtt_ms"] != 0.0 || l["loss"] != 0.0 {
		t.Errorf("link %v", l)
	}
}

func TestIsStale_L8(t *testing.T) {
	for _, c := range []struct {
		resend, loss float64
		want         bool
	}{{0.3, 0.01, true}, {0.3, 0.1, false}, {0.05, 0, false}, {math.NaN(), 0, false}} {
		if got := IsStale(c.resend, c.loss); got != c.want {
			t.Errorf("IsStale(%v, %v) = %v", c.resend, c.loss, got)
		}
	}
}

// A path that loses on its own (both players' other paths clean) carries
// the cause loss; its players do not.
func TestLossyPathIsThePaths_L2(t *testing.T) {
	w := world{names: names(6), share: []float64{20, 20, 20, 20, 20, 20}, seed: 1,
		up: make([]float64, 6), down: make([]float64, 6)}
	in := w.build()
	for i := range in.Pairs {
		if in.Pairs[i].A == 1 && in.Pairs[i].B == 4 {
			in.Pairs[i].MissingAB, in.Pairs[i].MissingBA = 1000, 1000 // 5 % each way
		}
	}
	d := Diagnose(in)
	for _, l := range d.Links {
		if got, want := has(l.Causes, CauseLoss), l.Between == [2]string{"bob", "erin"}; got != want {
			t.Errorf("link %v causes %v", l.Between, l.Causes)
		}
	}
	for _, p := range d.Players {
		if has(p.Causes, CauseLoss) || p.AccessLoss >= 0.01 {
			t.Errorf("%s access_loss %.4f causes %v", p.Player, p.AccessLoss, p.Causes)
		}
	}
	if d.CulpritLink != nil {
		t.Errorf("culprit_link %v for a lossy path of normal round trip", *d.CulpritLink)
	}
}

// A descent that comes later than the previous evaluation said makes the
// countdown a player reads rise: the verdict says why — the waits that
// held it back, or a descent that now goes further down.
func TestLaterDescentSaysWhy(t *testing.T) {
	w := world{names: names(4), share: []float64{20, 20, 20, 20}, seed: 1}
	in := w.build()
	in.Target, in.InForce, in.FPS = rungs.RungTiming(4), rungs.RungTiming(4), 30
	var g Diagnoser
	eval := func(frame, active int, to int, bobWaits time.Duration) string {
		in.Frame = frame
		in.Outlook = rungs.Outlook{To: rungs.RungTiming(to), Decided: active - 20, Active: active}
		in.Players[1].RecentWait = bobWaits
		return g.Diagnose(in).Verdict
	}
	if v := eval(768, 2000, 2, 0); strings.Contains(v, "later than") {
		t.Fatalf("first evaluation: %q", v)
	}
	if v := eval(1024, 2030, 2, 0); strings.Contains(v, "later than") {
		t.Errorf("a second later is no news: %q", v)
	}
	if v, want := eval(1280, 2600, 2, 600*time.Millisecond), "That is later than the match's last timing check said: the waits for bob rose again."; !strings.Contains(v, want) {
		t.Errorf("verdict %q, want %q", v, want)
	}
	if v, want := eval(1536, 3200, 1, 0), "That is later than the match's last timing check said because the match now steps further down, to Fast (rung 1)."; !strings.Contains(v, want) {
		t.Errorf("verdict %q, want %q", v, want)
	}
	if v, want := eval(1792, 3800, 1, 0), "That is later than the match's last timing check said: the round trips rose again."; !strings.Contains(v, want) {
		t.Errorf("verdict %q, want %q", v, want)
	}
}
