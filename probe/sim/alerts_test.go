package sim

import (
	"fmt"
	"strings"
	"testing"
)

// alerts are the run's alert lines of one kind, by the machine that raised
// them.
func (r *run) alerts(kind string) map[string][]ev {
	out := map[string][]ev{}
	for _, e := range r.of("alert") {
		if e.str("kind") == kind {
			out[e.str("player")] = append(out[e.str("player")], e)
		}
	}
	return out
}

// breakScenario: alice and bob on a 60 ms path that loses 99 % each way
// during each [from, to) of breaks (seconds), clean otherwise. Ten
// commands a second keep a reliable packet in flight when a break begins,
// so that each break takes both machines' link past the connection
// timeout (a stalled game sends nothing reliable).
func breakScenario(t *testing.T, frames int, breaks ...[2]int) *Scenario {
	t.Helper()
	var tl []string
	for _, b := range breaks {
		tl = append(tl,
			fmt.Sprintf(`{"at_ms": %d, "links": [{"between": ["alice", "bob"], "loss": 0.99}]}`, b[0]*1000),
			fmt.Sprintf(`{"at_ms": %d, "links": [{"between": ["alice", "bob"], "loss": 0}]}`, b[1]*1000))
	}
	sc, err := ParseScenario(strings.NewReader(fmt.Sprintf(`{
	  "fps": 30, "frames": %d, "seed": 22, "commands_per_minute": 600,
	  "players": ["alice", "bob"],
	  "network": {"rtt_ms": 60},
	  "timeline": [%s]
	}`, frames, strings.Join(tl, ","))))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A link that goes bad (T11) raises one alert on each machine per episode:
// two breaks 20 s apart are two episodes, each alert after its "gone bad"
// line and naming the link; a link that recovers and goes bad again
// within the clear time (10 s) is still the first episode.
func TestLinkBadAlertOncePerEpisode_T11(t *testing.T) {
	for _, c := range []struct {
		name   string
		breaks [][2]int
		want   int
	}{
		{"two breaks 20 s apart", [][2]int{{10, 16}, {36, 42}}, 2},
		{"flapping within 10 s", [][2]int{{10, 14}, {18, 22}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runScenario(t, breakScenario(t, 1800, c.breaks...))
			bad := r.alerts("bad")
			for _, me := range []string{"alice", "bob"} {
				peer := map[string]string{"alice": "bob", "bob": "alice"}[me]
				gone := 0
				for _, e := range r.of("message") {
					if e.str("player") == me && e.str("text") == "Connection to "+peer+" has gone bad" {
						gone++
					}
				}
				// A stalled machine's keep-alive (the session's, once a
				// second) can get an ack through a break, so a link may
				// flap inside one: at least two lines, one per break.
				if gone < 2 {
					t.Fatalf("%s: %d gone-bad lines, the scenario must break the link twice", me, gone)
				}
				if len(bad[me]) != c.want {
					t.Fatalf("%s raised %d bad-link alerts, want %d (gone-bad lines: %d):\n%v", me, len(bad[me]), c.want, gone, bad[me])
				}
				for _, e := range bad[me] {
					if e.str("from") != me || e.str("to") != peer || e.str("text") != "Connection to "+peer+" has gone bad" {
						t.Fatalf("%s: alert %v", me, e)
					}
				}
			}
			if c.want == 2 {
				// The second alert belongs to the second break.
				for me, es := range bad {
					if f := es[1].int("frame"); f <= es[0].int("frame")+10*30 {
						t.Fatalf("%s: second alert at frame %d, first at %d", me, f, es[0].int("frame"))
					}
				}
			}
		})
	}
}

// The target tier worsening (S18) raises one alert on every machine, on
// the frame of the timing event; nothing before it.
func TestTierWorseningAlert_S18(t *testing.T) {
	r := runScenario(t, loadScenario(t, "worsening.json"))
	var worse ev
	for _, e := range r.timings() {
		if e.str("reason") == "worse" {
			worse = e
			break
		}
	}
	if worse == nil {
		t.Fatalf("no worsening in the scenario\n%s", describe(r))
	}
	tier := r.alerts("tier")
	for _, me := range []string{"alice", "bob", "carol"} {
		if len(tier[me]) != 1 {
			t.Fatalf("%s raised %d tier alerts, want 1: %v", me, len(tier[me]), tier[me])
		}
		a := tier[me][0]
		if a.int("frame") != worse.int("frame") || a["from"] != nil || a["to"] != nil ||
			a.str("text") != "Connection quality target worsened from Fast to Normal" {
			t.Fatalf("%s: alert %v for timing %v", me, a, worse)
		}
	}
	if n := len(r.of("alert")); n != 3 {
		t.Fatalf("%d alerts, want the 3 tier alerts only", n)
	}
}

// Two worsenings more than the clear time apart are two episodes: the
// fallback to Normal at frame 134 and the forced Bad at 522, 13 s later.
func TestTierAlertPerEpisode_S18(t *testing.T) {
	r := runScenario(t, loadScenario(t, "unmeasured.json"))
	for _, me := range []string{"alice", "bob"} {
		got := r.alerts("tier")[me]
		if len(got) != 2 || got[0].int("frame") != 134 || got[1].int("frame") != 522 ||
			!strings.HasSuffix(got[1].str("text"), "from Normal to Bad") {
			t.Fatalf("%s: tier alerts %v, want frames 134 and 522", me, got)
		}
	}
}

// A link whose loss passes 5 % over 10 s raises one loss alert per link on
// each machine (an episode that never clears), after the loss began.
func TestLossAlert_L2(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader(`{
	  "fps": 30, "frames": 1800, "seed": 22,
	  "players": ["alice", "bob", "carol"],
	  "network": {"rtt_ms": 60},
	  "timeline": [{"at_frame": 600, "links": [{"between": ["alice", "bob"], "loss": 0.1}]}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	r := runScenario(t, sc)
	loss := r.alerts("loss")
	for me, peer := range map[string]string{"alice": "bob", "bob": "alice"} {
		if len(loss[me]) != 1 {
			t.Fatalf("%s raised %d loss alerts, want 1: %v", me, len(loss[me]), loss[me])
		}
		a := loss[me][0]
		if a.int("frame") <= 600 || a.str("from") != me || a.str("to") != peer ||
			!strings.HasPrefix(a.str("text"), "Connection to "+peer+" is losing packets: ") {
			t.Fatalf("%s: alert %v", me, a)
		}
		found := false
		for _, e := range r.of("message") {
			found = found || (e.str("player") == me && e.str("text") == a.str("text") && e.int("frame") == a.int("frame"))
		}
		if !found {
			t.Fatalf("%s: no message line for %v", me, a)
		}
	}
	if n := len(r.of("alert")); n != 2 {
		t.Fatalf("%d alerts, want alice's and bob's loss alerts only: %v", n, r.of("alert"))
	}
}

// A clean session raises nothing.
func TestNoAlertOnCleanSession(t *testing.T) {
	for _, name := range []string{"clean.json", "slow_cpu.json", "speed.json"} {
		r := runScenario(t, loadScenario(t, name))
		if a := r.of("alert"); len(a) != 0 {
			t.Fatalf("%s: alerts %v", name, a)
		}
	}
}
