package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ev is one decoded NDJSON line.
type ev map[string]any

func (e ev) str(k string) string { s, _ := e[k].(string); return s }
func (e ev) num(k string) float64 {
	f, _ := e[k].(float64)
	return f
}
func (e ev) int(k string) int { return int(e.num(k)) }

type run struct {
	events []ev
	res    *Result
	raw    []byte
	cks    map[string]map[int]uint32
}

func (r *run) of(typ string) []ev {
	var out []ev
	for _, e := range r.events {
		if e.str("type") == typ {
			out = append(out, e)
		}
	}
	return out
}

func (r *run) timings() []ev { return r.of("timing") }

func (r *run) messages() []string {
	var out []string
	for _, e := range r.of("message") {
		out = append(out, e.str("text"))
	}
	return out
}

func loadScenario(t testing.TB, name string) *Scenario {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, err := ParseScenario(f)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func runScenario(t testing.TB, sc *Scenario) *run {
	t.Helper()
	var buf bytes.Buffer
	r := &run{cks: map[string]map[int]uint32{}}
	res, err := RunWith(sc, &buf, Options{OnFrame: func(p string, f int, ck uint32) {
		m := r.cks[p]
		if m == nil {
			m = map[int]uint32{}
			r.cks[p] = m
		}
		m[f] = ck
	}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r.res, r.raw = res, buf.Bytes()
	sc2 := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc2.Buffer(nil, 1<<24)
	for sc2.Scan() {
		var e ev
		if err := json.Unmarshal(sc2.Bytes(), &e); err != nil {
			t.Fatalf("bad NDJSON line %q: %v", sc2.Text(), err)
		}
		r.events = append(r.events, e)
	}
	if len(r.events) == 0 || r.events[len(r.events)-1].str("type") != "summary" {
		t.Fatalf("the last line is not a summary")
	}
	return r
}

func timingStr(e ev) string { return fmt.Sprintf("%d/%d", e.int("send_period"), e.int("look_ahead")) }

func describe(r *run) string {
	var b strings.Builder
	for _, e := range r.events {
		switch e.str("type") {
		case "timing", "timing_active", "message", "master", "removed":
			line, _ := json.Marshal(e)
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// A slow link among fast ones drives the first target: 600 ms × 1.25 at
// 30 fps is a one-way trip of 12 frames → rung 6, 6/18, Poor (S3, S9, S10,
// S17, S18).
func TestSlowLinkDrivesFirstTarget_S10(t *testing.T) {
	r := runScenario(t, loadScenario(t, "slow_link.json"))
	ts := r.timings()
	if len(ts) == 0 {
		t.Fatalf("no timing event\n%s", describe(r))
	}
	first := ts[0]
	if first.int("decided") != 64 || first.str("reason") != "initial" || timingStr(first) != "6/18" ||
		first.str("tier") != "Poor" || first.int("rung") != 6 || first.int("fps") != 30 {
		t.Fatalf("first timing = %v, want decided 64, initial, 6/18 Poor rung 6 at 30 fps\n%s", first, describe(r))
	}
	if !contains(r.messages(), "Connection quality target: Poor") {
		t.Fatalf("messages %q lack the tier message (S18)", r.messages())
	}
	// Every report executed before the evaluation carries a round trip; the
	// worst is alice's or bob's 600 ms.
	worst := 0.0
	for _, rep := range r.of("report") {
		if rep.int("frame") < 64 && rep["rtt_ms"] != nil {
			worst = math.Max(worst, rep.num("rtt_ms"))
		}
	}
	if math.Abs(worst-600) > 1 {
		t.Fatalf("worst reported round trip before frame 64 = %v ms, want 600", worst)
	}
}

// After the slow link heals, the master waits for three good evaluations in
// a row, then descends one rung per evaluation, with a tier message each
// time the tier changes (S11b–d, S18).
func TestRecoveryThreeInARowThenDescent_S11(t *testing.T) {
	r := runScenario(t, loadScenario(t, "recovery.json"))
	ts := r.timings()
	if len(ts) < 2 || timingStr(ts[0]) != "6/18" {
		t.Fatalf("timings:\n%s", describe(r))
	}
	var better []ev
	for _, e := range ts[1:] {
		if e.str("reason") != "better" {
			t.Fatalf("unexpected %s timing after recovery:\n%s", e.str("reason"), describe(r))
		}
		better = append(better, e)
	}
	if len(better) != 5 {
		t.Fatalf("want five one-rung steps 6→1, got %d:\n%s", len(better), describe(r))
	}
	for i, e := range better {
		if e.int("rung") != 5-i {
			t.Fatalf("step %d went to rung %d, want %d (a descent never skips a rung)", i, e.int("rung"), 5-i)
		}
		if i > 0 && e.int("decided")-better[i-1].int("decided") != 256 {
			t.Fatalf("descent steps %d and %d are not on consecutive evaluations", i-1, i)
		}
	}
	// The first improvement needs three good evaluations in a row: the
	// evaluations two and one before it were good too, and the link only
	// healed at frame 1000.
	if better[0].int("decided") < 1000+3*256 {
		t.Fatalf("first improvement at %d, before three good evaluations after the heal", better[0].int("decided"))
	}
	msgs := r.messages()
	for _, want := range []string{"Connection quality target: Normal", "Connection quality target: Fast"} {
		if !contains(msgs, want) {
			t.Fatalf("messages %q lack %q", msgs, want)
		}
	}
}

// A worsening applies at the next evaluation that sees it (S11a).
func TestWorseningAppliesAtNextEvaluation_S11a(t *testing.T) {
	r := runScenario(t, loadScenario(t, "worsening.json"))
	ts := r.timings()
	if len(ts) < 2 {
		t.Fatalf("timings:\n%s", describe(r))
	}
	if ts[0].str("reason") != "initial" || ts[0].int("rung") != 1 {
		t.Fatalf("first timing %v, want initial rung 1", ts[0])
	}
	w := ts[1]
	if w.str("reason") != "worse" {
		t.Fatalf("second timing %v, want worse", w)
	}
	// 500 ms at 30 fps without headroom: one-way 8 frames → rung 4 (4/12).
	if timingStr(w) != "4/12" {
		t.Fatalf("worse timing %s, want 4/12", timingStr(w))
	}
	// The first report with the 500 ms round trip executes after frame 600;
	// the worsening is sent at the first evaluation after it.
	firstBad := -1
	for _, rep := range r.of("report") {
		if rep["rtt_ms"] != nil && rep.num("rtt_ms") > 400 {
			firstBad = rep.int("frame")
			break
		}
	}
	if firstBad < 600 {
		t.Fatalf("no report saw the slow link after frame 600 (first at %d)", firstBad)
	}
	next := 256 * (firstBad/256 + 1)
	if w.int("decided") != next {
		t.Fatalf("worsening decided at %d, want the first evaluation after the report at %d: %d", w.int("decided"), firstBad, next)
	}
}

// A player that issues no commands is still measured before the first
// evaluation: the first frame packet and one every 32 frames ask for an
// ack while a link lacks a clean sample (T6), so the 64-frame evaluation
// has every round trip (S10).
func TestQuietPlayerMeasuredBeforeFrame64_T6(t *testing.T) {
	r := runScenario(t, loadScenario(t, "quiet_player.json"))
	seen := map[string]bool{}
	for _, rep := range r.of("report") {
		if rep.int("frame") <= 64 && rep["rtt_ms"] != nil {
			seen[rep.str("player")] = true
		}
	}
	for _, p := range []string{"alice", "bob", "carol"} {
		if !seen[p] {
			t.Fatalf("%s reported no round trip before frame 64:\n%s", p, describe(r))
		}
	}
	ts := r.timings()
	if len(ts) == 0 || ts[0].int("decided") != 64 || ts[0].str("reason") != "initial" {
		t.Fatalf("no initial timing at 64:\n%s", describe(r))
	}
}

// A link that never gets a clean sample leaves the reports incomplete: the
// target falls back to 3/9 at frame 128 (S10), and 512 frames after the
// record started, the player with no round trip forces 10/250 (S8).
func TestFallbackThenForced_S8_S10(t *testing.T) {
	r := runScenario(t, loadScenario(t, "unmeasured.json"))
	ts := r.timings()
	if len(ts) < 2 {
		t.Fatalf("timings:\n%s", describe(r))
	}
	if ts[0].int("decided") != 128 || ts[0].str("reason") != "fallback" || timingStr(ts[0]) != "3/9" {
		t.Fatalf("first timing %v, want fallback 3/9 at 128", ts[0])
	}
	if ts[1].str("reason") != "forced" || timingStr(ts[1]) != "10/250" || ts[1].int("decided") < 512 {
		t.Fatalf("second timing %v, want forced 10/250 at or after 512", ts[1])
	}
	if ts[1].str("tier") != "Bad" {
		t.Fatalf("10/250 reads as %s, want Bad (S17)", ts[1].str("tier"))
	}
}

// The slowest player's processing time caps the frame rate (S15): bob
// needs 50 ms a frame, so the session runs at 20 fps although the game
// speed allows 30.
func TestProcessingTimeCapsFrameRate_S15(t *testing.T) {
	r := runScenario(t, loadScenario(t, "slow_cpu.json"))
	ts := r.timings()
	if len(ts) == 0 {
		t.Fatalf("no timing:\n%s", describe(r))
	}
	if ts[0].int("fps") != 20 {
		t.Fatalf("fps %d, want 20", ts[0].int("fps"))
	}
	var active []ev
	for _, e := range r.of("timing_active") {
		if e.int("fps") == 20 {
			active = append(active, e)
		}
	}
	if len(active) == 0 {
		t.Fatalf("the 20 fps rate never came into force")
	}
	for _, rep := range r.of("report") {
		if rep.str("player") == "bob" && rep.num("process_ms") != 50 {
			t.Fatalf("bob reported process %v ms, want 50", rep.num("process_ms"))
		}
	}
}

// When the master leaves, the next human in house order takes over (S16),
// keeps the target and waits 256 frames before an improvement.
func TestMasterRemovalHandsOver_S16(t *testing.T) {
	r := runScenario(t, loadScenario(t, "handoff.json"))
	masters := r.of("master")
	if len(masters) != 2 || masters[0].str("player") != "alice" || masters[1].str("player") != "bob" {
		t.Fatalf("masters %v, want alice then bob", masters)
	}
	removed := r.of("removed")
	if len(removed) != 1 || removed[0].str("player") != "alice" {
		t.Fatalf("removed %v, want alice", removed)
	}
	handoff := masters[1].int("frame")
	if removed[0].int("frame") != handoff {
		t.Fatalf("handoff at %d, removal executed at %d", handoff, removed[0].int("frame"))
	}
	ts := r.timings()
	var after []ev
	for _, e := range ts {
		if e.int("decided") > handoff {
			after = append(after, e)
		}
	}
	if len(after) == 0 {
		t.Fatalf("the new master never improved the timing after bob–carol healed:\n%s", describe(r))
	}
	if after[0].str("reason") != "better" || after[0].int("decided") < handoff+256 {
		t.Fatalf("first timing after handoff %v: want better, not before frame %d", after[0], handoff+256)
	}
	// Alice's machine stopped, the others kept playing to the end.
	for _, p := range r.res.Summary.Players {
		if p.Player == "alice" && p.Frames > handoff+1 {
			t.Fatalf("alice executed %d frames after leaving at %d", p.Frames, handoff)
		}
		// A joiner starts when the host's Start reaches it, a one-way
		// delay after the master (30 ms here): it may be a frame short
		// when the master's frame ends the run.
		if p.Player != "alice" && p.Frames < 2500-1 {
			t.Fatalf("%s executed only %d frames", p.Player, p.Frames)
		}
	}
}

// An extended look-ahead is cut straight to what the round trip needs when
// the round trip still needs rung 10 (S11c), and the decrease is staged:
// the look-ahead steps down one send period per send frame (S12).
func TestExtendedLookAheadCutThenStepped_S11c_S12(t *testing.T) {
	r := runScenario(t, loadScenario(t, "extended.json"))
	ts := r.timings()
	if len(ts) < 2 {
		t.Fatalf("timings:\n%s", describe(r))
	}
	// 3000 ms × 1.25 = 3750 ms → one-way 57 frames → 10/70.
	if timingStr(ts[0]) != "10/70" || ts[0].str("tier") != "Bad" {
		t.Fatalf("first timing %v, want 10/70 Bad", ts[0])
	}
	var cut ev
	for _, e := range ts[1:] {
		if e.str("reason") == "better" {
			cut = e
			break
		}
	}
	// 1800 ms → one-way 27 frames → 10/40, straight from 10/70.
	if cut == nil || timingStr(cut) != "10/40" {
		t.Fatalf("no cut to 10/40:\n%s", describe(r))
	}
	var steps []int
	for _, e := range r.of("timing_active") {
		if e.int("frame") >= cut.int("frame") {
			steps = append(steps, e.int("look_ahead"))
		}
	}
	want := []int{60, 50, 40}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Fatalf("look-ahead steps after the cut %v, want %v\n%s", steps, want, describe(r))
	}
}

// Under 5 % loss each way and jitter, every machine executes the same
// commands on the same frames (checksums agree), and the loss each link
// observes, and what its peer reports, is within 1.5 points of 5 % over ten
// minutes of game time (L2, L4).
func TestLossAndJitterKeepLockstep_L2_L4(t *testing.T) {
	r := runScenario(t, loadScenario(t, "lossy.json"))
	ref := r.cks["alice"]
	if len(ref) < 18000 {
		t.Fatalf("alice executed %d frames", len(ref))
	}
	for p, m := range r.cks {
		for f, ck := range m {
			if want, ok := ref[f]; ok && want != ck {
				t.Fatalf("%s checksum at frame %d differs from alice's", p, f)
			}
		}
	}
	for _, msg := range r.messages() {
		if strings.HasPrefix(msg, "Desync") {
			t.Fatalf("desync: %s", msg)
		}
	}
	for _, l := range r.res.Summary.Links {
		if l.From == "eve" || l.To == "eve" {
			continue // the observer sends no numbered traffic of its own
		}
		if l.Expected == nil || l.PeerExpected == nil || *l.Expected < 1000 {
			t.Fatalf("link %s→%s lacks loss counts: %+v", l.From, l.To, l)
		}
		in := float64(*l.Missing) / float64(*l.Expected)
		out := float64(*l.PeerMissing) / float64(*l.PeerExpected)
		if math.Abs(in-0.05) > 0.015 || math.Abs(out-0.05) > 0.015 {
			t.Fatalf("link %s→%s inbound loss %.3f outbound %.3f, want 0.05±0.015", l.From, l.To, in, out)
		}
	}
	if len(r.of("link")) == 0 {
		t.Fatalf("link_every produced no link lines")
	}
}

// With no loss and no jitter, the summary's SRTT of every link equals the
// scenario's round trip within 1 ms: acks are not held back by the frame
// loop (T1, T3).
func TestSRTTEqualsScenarioRTT_T3(t *testing.T) {
	r := runScenario(t, loadScenario(t, "clean.json"))
	want := map[string]float64{"alice|bob": 60, "alice|carol": 130, "bob|carol": 95}
	for _, l := range r.res.Summary.Links {
		key := l.From + "|" + l.To
		if l.From > l.To {
			key = l.To + "|" + l.From
		}
		if l.SRTTMs == nil || l.State != "measured" {
			t.Fatalf("link %s→%s state %s srtt %v", l.From, l.To, l.State, l.SRTTMs)
		}
		if math.Abs(*l.SRTTMs-want[key]) > 1 {
			t.Fatalf("link %s→%s SRTT %.3f ms, want %.0f±1", l.From, l.To, *l.SRTTMs, want[key])
		}
	}
}

// The same scenario and seed give byte-identical output.
func TestDeterministic(t *testing.T) {
	sc := loadScenario(t, "slow_link.json")
	a := runScenario(t, sc)
	b := runScenario(t, loadScenario(t, "slow_link.json"))
	if !bytes.Equal(a.raw, b.raw) {
		t.Fatalf("two runs of the same scenario differ")
	}
}

// Observers are never seated: they are in no report and never waited for,
// yet they execute every frame with the players' checksums.
func TestObserverNeverSeated(t *testing.T) {
	sc := loadScenario(t, "slow_link.json")
	sc.Observers = []string{"watcher"}
	r := runScenario(t, sc)
	for _, rep := range r.of("report") {
		if rep.str("player") == "watcher" {
			t.Fatalf("the observer reported")
		}
	}
	for _, s := range r.of("stall") {
		if s.str("cause") == "watcher" {
			t.Fatalf("a player waited for the observer")
		}
	}
	w := r.cks["watcher"]
	if len(w) < 500 {
		t.Fatalf("the observer executed only %d frames", len(w))
	}
	for f, ck := range w {
		if a, ok := r.cks["alice"][f]; ok && a != ck {
			t.Fatalf("observer checksum differs at frame %d", f)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A machine that vanishes without a word is removed by the master after the
// drop timeout, and the others keep playing; when the master itself
// vanishes, the next player removes it and takes over (S16).
func TestVanishedPlayersRemovedAfterDropTimeout_S16(t *testing.T) {
	r := runScenario(t, loadScenario(t, "vanish.json"))
	removed := r.of("removed")
	if len(removed) != 2 || removed[0].str("player") != "carol" || removed[1].str("player") != "alice" {
		t.Fatalf("removed %v, want carol then alice\n%s", removed, describe(r))
	}
	masters := r.of("master")
	if len(masters) != 2 || masters[1].str("player") != "bob" || masters[1].int("frame") != removed[1].int("frame") {
		t.Fatalf("masters %v, want bob to take over when alice's removal executes", masters)
	}
	// The drop timeout is 5 s: carol vanished at frame 300 and nobody
	// could execute much past it until her removal.
	stalled := 0.0
	for _, s := range r.of("stall") {
		if s.str("cause") == "carol" {
			stalled = math.Max(stalled, s.num("wait_ms"))
		}
	}
	if stalled < 4500 || stalled > 7000 {
		t.Fatalf("longest wait for carol %.0f ms, want about the 5 s drop timeout (counted from her last datagram)", stalled)
	}
	for _, p := range r.res.Summary.Players {
		// Joiners start a one-way delay after the host (see above).
		if (p.Player == "bob" || p.Player == "dave") && p.Frames < 1500-1 {
			t.Fatalf("%s stopped at %d frames", p.Player, p.Frames)
		}
	}
	if !contains(r.messages(), "Connection to alice has gone bad") {
		t.Fatalf("no bad-connection message for alice: %q", r.messages())
	}
	// Every survivor executed the same commands.
	for f, ck := range r.cks["bob"] {
		if d, ok := r.cks["dave"][f]; ok && d != ck {
			t.Fatalf("bob and dave differ at frame %d", f)
		}
	}
}

// The game speed caps the frame rate (S15, S17): a speed change travels as
// an event, and the master's next evaluation sends the new rate with the
// target unchanged (reason "rate"); machines then run at it.
func TestGameSpeedCapsFrameRate_S15_S17(t *testing.T) {
	r := runScenario(t, loadScenario(t, "speed.json"))
	ts := r.timings()
	if len(ts) != 2 || ts[1].str("reason") != "rate" || ts[1].int("fps") != 20 || timingStr(ts[1]) != timingStr(ts[0]) {
		t.Fatalf("timings:\n%s", describe(r))
	}
	if ts[1].int("decided") != 512 {
		t.Fatalf("rate change decided at %d, want the first evaluation after the speed change (512)", ts[1].int("decided"))
	}
	// 900 frames: 512+ at 30 fps, the rest at 20 fps.
	end := r.res.End.Seconds()
	want := 517.0/30 + (900-517)/20.0
	if math.Abs(end-want) > 1 {
		t.Fatalf("900 frames took %.1f s of game time, want about %.1f s", end, want)
	}
}
