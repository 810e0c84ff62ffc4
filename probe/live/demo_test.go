package live

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// playPlan runs a demo plan on the simulated network: the same sessions,
// with each pair's path set from the plan and the spike applied at its
// times. It returns your machine and the others.
func playPlan(t *testing.T, plan demoPlan, seed uint64, length time.Duration) []*machine {
	w := newWorld(t, seed, impair.Profile{})
	var ms []*machine
	for i, name := range plan.names {
		if i == 0 {
			ms = append(ms, w.host(name, session.Config{Players: len(plan.names), CommandsPerMinute: demoCommandsPerMinute}))
		} else {
			ms = append(ms, w.join(name, session.RolePlayer, ms[0], session.Config{CommandsPerMinute: demoCommandsPerMinute}))
		}
	}
	setPaths := func(now time.Duration) {
		for a := range ms {
			for b := range ms {
				if a != b {
					w.net.SetPath(ms[a].addr, ms[b].addr, plan.profileAt(a, b, now))
				}
			}
		}
	}
	setPaths(0)
	for _, at := range plan.changes() {
		w.at(at, func() { setPaths(at) })
	}
	for _, l := range plan.leaves {
		w.at(l.at, func() { ms[l.index].quit() })
	}
	w.runFor(length)
	return ms
}

// The demo's default plan shows a newcomer, within two minutes: every link
// measured, the target worsen when the spike hits (S11a) and the tier
// message (S18), then three good evaluations and a descent rung by rung
// back to Fast (S11c, S11d) with its message.
//
// The worsening and a descent one rung at a time are certain. Reaching Fast
// within the two minutes depends on when the DSL and Wi-Fi paths' random
// loss last makes someone wait 0.1 s (S11b holds the timing after such a
// wait), so it is asked of 11 sessions in 12: measured over seeds 1–80 it
// held for 79 (78 before players streamed their telemetry, whose datagrams
// shift every path's random draws and so which seeds are the unlucky ones).
func TestDemoPlanShowsWorseningAndDescent_S11_S18(t *testing.T) {
	plan, err := newDemoPlan(DemoConfig{Players: 4, Profile: "mix", Name: "you", Spike: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.names, []string{"you", "ada", "bob", "cyd"}) {
		t.Fatalf("names %v", plan.names)
	}
	reached := 0
	const seeds = 12
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			if checkDemoStory(t, plan, seed) {
				reached++
			}
		})
	}
	if reached < seeds-1 {
		t.Fatalf("only %d of %d sessions descended back to Fast within two minutes", reached, seeds)
	}
}

// checkDemoStory plays one session and checks its story; it reports whether
// the descent reached Fast within the two minutes.
func checkDemoStory(t *testing.T, plan demoPlan, seed uint64) bool {
	ms := playPlan(t, plan, seed, 2*time.Minute)
	you := ms[0]
	for _, ls := range you.s.Links() {
		if ls.State != "measured" {
			t.Errorf("%s → %s %s", ls.From, ls.To, ls.State)
		}
	}
	var rungs []int
	var reasons []string
	for _, e := range of[*feed.TimingEvent](you) {
		rungs = append(rungs, e.Rung)
		reasons = append(reasons, e.Reason)
	}
	peak := slices.Index(rungs, slices.Max(rungs))
	if len(rungs) < 3 || rungs[0] > 2 || rungs[peak] < 3 || reasons[peak] != "worse" {
		t.Fatalf("want a Fast start then a worsening past Fast: rungs %v reasons %v", rungs, reasons)
	}
	better := 0
	for i := peak + 1; i < len(rungs); i++ {
		if reasons[i] != "better" || rungs[i] != rungs[i-1]-1 {
			t.Fatalf("after the peak, step %d: rung %d → %d (%s); want a descent one rung at a time", i, rungs[i-1], rungs[i], reasons[i])
		}
		better++
	}
	fast := better >= 2 && rungs[len(rungs)-1] <= 2
	if !fast {
		t.Logf("no descent back to Fast within two minutes: rungs %v reasons %v", rungs, reasons)
	}
	msgs := you.messages()
	iNormal := slices.IndexFunc(msgs, func(m string) bool {
		return m == "Connection quality target: Normal" || m == "Connection quality target: Poor"
	})
	iFast := slices.IndexFunc(msgs, func(m string) bool { return m == "Connection quality target: Fast" })
	if iNormal < 0 || (fast && iFast < iNormal) {
		t.Fatalf("tier messages out of order or missing: %v", msgs)
	}
	// Every machine agrees.
	for _, m := range ms[1:] {
		if !slices.Equal(timingKeys(m), timingKeys(you)[:min(len(timingKeys(you)), len(timingKeys(m)))]) {
			t.Fatalf("%s disagrees on timing", m.name)
		}
	}
	return fast
}

// Link profiles compose both ends' access links: delays and jitters add,
// losses compound, Wi-Fi's bursts come along; the spike touches every path
// to the spiking player (ada's access link), only in its window.
func TestDemoLinkProfiles(t *testing.T) {
	plan, err := newDemoPlan(DemoConfig{Players: 5, Profile: "mix", Name: "you", Spike: true})
	if err != nil {
		t.Fatal(err)
	}
	lan, _ := impair.ProfileByName("lan")
	dsl, _ := impair.ProfileByName("dsl")
	wifi, _ := impair.ProfileByName("wifi")
	p := plan.linkProfile(2, 3) // dsl → wifi
	if p.Delay != dsl.Delay+wifi.Delay || p.Jitter != dsl.Jitter+wifi.Jitter || p.Burst == nil || math.Abs(p.Loss-dsl.Loss) > 1e-12 {
		t.Fatalf("dsl→wifi %+v", p)
	}
	if q := plan.linkProfile(3, 2); q.String() != p.String() {
		t.Fatalf("not symmetric: %v vs %v", p, q)
	}
	if p := plan.linkProfile(0, 4); p.Delay != 2*lan.Delay { // player 5 is on a LAN again
		t.Fatalf("lan→lan %+v", p)
	}
	for _, c := range []struct {
		a, b int
		at   time.Duration
		want time.Duration
	}{
		{0, 1, spikeStart - time.Millisecond, 0},
		{0, 1, spikeStart, spikeExtra},
		{1, 0, spikeEnd - time.Millisecond, spikeExtra},
		{1, 0, spikeEnd, 0},
		{0, 2, spikeStart + time.Second, 0},
		{2, 3, spikeStart + time.Second, 0},
		{2, 1, spikeStart + time.Second, spikeExtra}, // ada's access link is on every path to her
		{1, 4, spikeEnd - time.Millisecond, spikeExtra},
	} {
		if got := plan.extraDelay(c.a, c.b, c.at); got != c.want {
			t.Errorf("extra %d→%d at %v = %v, want %v", c.a, c.b, c.at, got, c.want)
		}
	}
	if _, err := newDemoPlan(DemoConfig{Players: 2, Profile: "carrier pigeon"}); err == nil {
		t.Fatal("unknown profile accepted")
	}
	one, _ := newDemoPlan(DemoConfig{Players: 3, Profile: "dsl", Name: "ada"})
	if !slices.Equal(one.names, []string{"ada", "p2", "bob"}) || one.access[2].String() != dsl.String() {
		t.Fatalf("names %v access %v", one.names, one.access)
	}
}

// On the demo's own plan in virtual time, the scripted spike is an access
// spike: during it every measured path to ada is about
// 2·spikeExtra slower than before, the paths that avoid her are not, and
// once it is over her paths come back.
func TestDemoSpikeIsOnAdasAccessLink(t *testing.T) {
	plan, err := newDemoPlan(DemoConfig{Players: 4, Profile: "lan", Name: "you", Spike: true})
	if err != nil {
		t.Fatal(err)
	}
	srtt := func(at time.Duration) map[[2]string]time.Duration {
		ms := playPlan(t, plan, 5, at)
		out := map[[2]string]time.Duration{}
		for _, m := range ms {
			for _, ls := range m.s.Links() {
				if ls.SRTTMs == nil {
					t.Fatalf("at %v %s → %s unmeasured", at, ls.From, ls.To)
				}
				out[[2]string{ls.From, ls.To}] = time.Duration(*ls.SRTTMs * float64(time.Millisecond))
			}
		}
		return out
	}
	before, during, after := srtt(spikeStart), srtt(spikeEnd), srtt(spikeEnd+20*time.Second)
	if len(during) != 12 {
		t.Fatalf("%d links, want 12", len(during))
	}
	for k, d := range during {
		rise := d - before[k]
		onAda := k[0] == "ada" || k[1] == "ada"
		switch {
		case onAda && (rise < 2*spikeExtra*8/10 || rise > 2*spikeExtra*12/10):
			t.Errorf("%s → %s rose %v during the spike, want about %v", k[0], k[1], rise, 2*spikeExtra)
		case !onAda && rise.Abs() > 10*time.Millisecond:
			t.Errorf("%s → %s (not on ada's link) moved %v during the spike", k[0], k[1], rise)
		case after[k]-before[k] > 20*time.Millisecond:
			t.Errorf("%s → %s still %v slower after the spike", k[0], k[1], after[k]-before[k])
		}
	}
}

// --leave bob@20s: the plan names bob's machine and the time, the
// narration says so in time order among the script's lines, and played on
// virtual time bob quits at 20 s: every other machine removes him on the
// same frame (S7) and the game goes on without him.
func TestDemoScriptedLeave_S7(t *testing.T) {
	l, err := ParseDemoLeave("bob@20s")
	if err != nil || l != (DemoLeave{Name: "bob", At: 20 * time.Second}) {
		t.Fatalf("parse: %+v %v", l, err)
	}
	plan, err := newDemoPlan(DemoConfig{Players: 4, Profile: "lan", Name: "you", Spike: true, Leaves: []DemoLeave{l}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.leaves) != 1 || plan.leaves[0] != (planLeave{index: 2, at: 20 * time.Second}) {
		t.Fatalf("leaves %+v", plan.leaves)
	}
	notes := plan.narration()
	i := slices.IndexFunc(notes, func(n note) bool { return n.Text == "Demo: bob quits the game" })
	if i < 0 || notes[i].At != 20*time.Second || !slices.IsSortedFunc(notes, func(a, b note) int { return int(a.At - b.At) }) {
		t.Fatalf("narration %+v", notes)
	}

	ms := playPlan(t, plan, 3, 40*time.Second)
	var frames []int
	for _, m := range []*machine{ms[0], ms[1], ms[3]} {
		f, ok := removedAt(m, "bob")
		if !ok {
			t.Fatalf("%s never removed bob", m.name)
		}
		frames = append(frames, f)
		if m.s.Frame() < f+300 {
			t.Fatalf("%s stopped at frame %d after removing bob at %d", m.name, m.s.Frame(), f)
		}
	}
	if frames[0] != frames[1] || frames[0] != frames[2] {
		t.Fatalf("bob removed on frames %v", frames)
	}
	if f := frames[0]; f < 15*30 || f > 22*30 { // the game runs a little below 30 fps while the spike makes it wait
		t.Fatalf("bob removed on frame %d, want about 20 s in", f)
	}
}

// A leave that cannot be is refused before anything starts.
func TestDemoLeaveRefused(t *testing.T) {
	for _, s := range []string{"bob", "@3s", "bob@", "bob@soon", "bob@0s", "bob@-2s"} {
		if _, err := ParseDemoLeave(s); err == nil {
			t.Errorf("ParseDemoLeave(%q) accepted", s)
		}
	}
	for _, ls := range [][]DemoLeave{
		{{Name: "zed", At: time.Second}},
		{{Name: "you", At: time.Second}},
		{{Name: "bob", At: 0}},
		{{Name: "bob", At: time.Second}, {Name: "bob", At: 2 * time.Second}},
	} {
		_, err := newDemoPlan(DemoConfig{Players: 4, Profile: "mix", Name: "you", Leaves: ls})
		var le *DemoLeaveError
		if !errors.As(err, &le) {
			t.Errorf("leaves %+v: %v", ls, err)
		}
	}
}

// --slow NAME=DURATION: the plan charges the named machine, says so in the
// narration, and refuses a name that is not playing or a cost out of range.
func TestDemoSlow_S15(t *testing.T) {
	name, cost, err := ParseDemoSlow("ada=50ms")
	if err != nil || name != "ada" || cost != 50*time.Millisecond {
		t.Fatalf("ParseDemoSlow = %q %v %v", name, cost, err)
	}
	for _, bad := range []string{"ada", "=50ms", "ada=0s", "ada=-1ms", "ada=2s", "ada=x"} {
		if _, _, err := ParseDemoSlow(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	plan, err := newDemoPlan(DemoConfig{Players: 3, Profile: "lan", Name: "you", Slow: map[string]time.Duration{"ada": cost}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.slow, []time.Duration{0, cost, 0}) {
		t.Fatalf("slow %v", plan.slow)
	}
	if !slices.ContainsFunc(plan.narration(), func(n note) bool { return n.Text == "Demo: ada's machine is slow: each frame takes 50ms longer" }) {
		t.Fatalf("narration %v", plan.narration())
	}
	if _, err := newDemoPlan(DemoConfig{Players: 3, Profile: "lan", Name: "you", Slow: map[string]time.Duration{"zed": cost}}); !errors.Is(err, ErrDemoSlow) {
		t.Fatalf("unknown player: %v", err)
	}
}
