package session

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
)

// loadCap keeps the virtual world's load small: the simulated links have
// no bottleneck, so every test's ramp ends at the cap.
const loadCap = 2e6

// loadWorld is a started game of ada (the host), bob and cyd with the
// given load configs, 5 s in. It is keyed, as live sessions are by
// default: the largest load datagram is sealed and still 1400 bytes.
func loadWorld(t *testing.T, ada, bob, cyd LoadConfig) (w *world, a, b, c *machine) {
	t.Helper()
	w = newWorld(t, 7, lan30)
	key := []byte("load test key")
	a = w.host("ada", Config{Players: 3, Load: ada, Key: key})
	b = w.join("bob", RolePlayer, a, Config{Load: bob, Key: key})
	c = w.join("cyd", RolePlayer, a, Config{Load: cyd, Key: key})
	if !w.runUntil(20*time.Second, started(a, b, c)) {
		t.Fatal("the game did not start")
	}
	w.runFor(5 * time.Second)
	return w, a, b, c
}

// loads are the load events of the tests m ran; every machine publishes
// every test's (allLoads).
func loads(m *machine) []*feed.LoadEvent {
	var out []*feed.LoadEvent
	for _, e := range allLoads(m) {
		if e.From == m.name {
			out = append(out, e)
		}
	}
	return out
}

func allLoads(m *machine) []*feed.LoadEvent { return of[*feed.LoadEvent](m) }

func stopped(e *feed.LoadEvent) string {
	if e.Result.Stopped == nil {
		return ""
	}
	return *e.Result.Stopped
}

// A test between two players runs on their link and ends complete: the
// tester publishes one load event with both directions graded and the
// game's cost; the peer publishes none; the game keeps running throughout.
func TestLoadTestRunsBetweenMembers(t *testing.T) {
	w, a, b, _ := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	frame := b.s.Frame()
	b.tr.Keep = true
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(35 * time.Second)
	largest := 0
	for _, d := range b.tr.Sent {
		largest = max(largest, len(d.Data))
	}
	if largest != 1400 {
		t.Errorf("the largest datagram bob sent is %d bytes, want the load's 1400 (Q5)", largest)
	}
	got := loads(b)
	if len(got) != 1 {
		t.Fatalf("bob published %d load events, want 1", len(got))
	}
	e := got[0]
	if e.From != "bob" || e.To != "ada" || stopped(e) != "" {
		t.Fatalf("load event %s→%s stopped %q, want bob→ada complete", e.From, e.To, stopped(e))
	}
	r := e.Result
	if r.IdleRTTMS == nil || r.Upload == nil || r.Download == nil || r.Both == nil || r.Cost == nil {
		t.Fatalf("incomplete result: %+v", r)
	}
	for name, d := range map[string]*float64{"upload": r.Upload.AddedMS, "download": r.Download.AddedMS} {
		if d == nil || *d > 5 {
			t.Errorf("%s added %v ms on an unloaded 30 ms link, want under 5 (A+)", name, d)
		}
	}
	if !r.Upload.Capped || !r.Download.Capped {
		t.Errorf("capped up %v down %v: a link with no bottleneck ends every ramp at the cap", r.Upload.Capped, r.Download.Capped)
	}
	if len(loads(a)) != 0 {
		t.Errorf("the peer published a load event")
	}
	if a.s.load.run != nil || b.s.load.run != nil {
		t.Error("a test still runs after its end")
	}
	if n := b.s.Frame() - frame; n < 30*30 {
		t.Errorf("the game executed %d frames in the 35 s of the test, want at least 900", n)
	}
	noLoadRefusals(t, a, b)
}

// noLoadRefusals: conforming machines refuse none of each other's load
// messages.
func noLoadRefusals(t *testing.T, ms ...*machine) {
	t.Helper()
	for _, m := range ms {
		if n := m.s.Rejected().Load; n != 0 {
			t.Errorf("%s refused %d load messages of conforming machines (messages %q)", m.name, n, m.messages())
		}
	}
}

// A peer started with --no-load-tests refuses: the tester's event says
// "peer refused" and no load datagram is sent.
func TestLoadTestRefused(t *testing.T) {
	w, a, _, _ := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap, Refuse: true}, LoadConfig{})
	a.tr.Keep = true
	w.at(w.now(), func() { a.s.StartLoadTest(w.now(), "bob", false); w.after(a) })
	w.runFor(5 * time.Second)
	got := loads(a)
	if len(got) != 1 || stopped(got[0]) != "peer refused" {
		t.Fatalf("load events %v, want one stopped \"peer refused\"", got)
	}
	for _, d := range a.tr.Sent {
		if len(d.Data) > 1000 {
			t.Fatalf("a %d-byte datagram went out after the refusal: load was sent", len(d.Data))
		}
	}
}

// One test at a time per session: a test asked for from the TUI while
// another runs stops "busy"; one asked for with --load-test waits its turn
// and runs once the first is over.
func TestLoadTestOneAtATime(t *testing.T) {
	w, _, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.at(w.now()+3*time.Second, func() { c.s.StartLoadTest(w.now(), "ada", false); w.after(c) })
	w.runFor(6 * time.Second)
	if got := loads(c); len(got) != 1 || stopped(got[0]) != "busy" {
		t.Fatalf("cyd's test during bob's: %v, want one stopped busy", got)
	}
	w.at(w.now(), func() { c.s.StartLoadTest(w.now(), "ada", true); w.after(c) })
	w.runFor(60 * time.Second)
	bs, cs := loads(b), loads(c)
	if len(bs) != 1 || stopped(bs[0]) != "" || len(cs) != 2 || stopped(cs[1]) != "" {
		t.Fatalf("bob's %v, cyd's %v: want bob's complete, then cyd's waiting one complete", bs, cs)
	}
	noLoadRefusals(t, w.machines...)
}

// A test the tester cancels stops "cancelled" on its side, and the peer's
// end is over too; one whose peer vanishes stops "peer left".
func TestLoadTestCancelledAndPeerLeft(t *testing.T) {
	w, a, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.at(w.now()+8*time.Second, func() { b.s.CancelLoadTest(w.now()); w.after(b) })
	w.runFor(10 * time.Second)
	if got := loads(b); len(got) != 1 || stopped(got[0]) != "cancelled" {
		t.Fatalf("bob's cancelled test: %v, want one stopped cancelled", got)
	}
	if a.s.load.run != nil || b.s.load.run != nil {
		t.Error("a cancelled test still runs")
	}
	w.at(w.now(), func() { a.s.StartLoadTest(w.now(), "cyd", false); w.after(a) })
	w.at(w.now()+8*time.Second, func() { c.vanish() })
	w.runFor(15 * time.Second) // the result waits loadReportsWithin for the vanished cyd's waits
	if got := loads(a); len(got) != 1 || stopped(got[0]) != "peer left" {
		t.Fatalf("ada's test to a vanished cyd: %v, want one stopped \"peer left\"", got)
	}
	if got := loads(a)[0].Result; got.IdleRTTMS == nil || got.Upload == nil {
		t.Errorf("a test stopped in the download ramp keeps its idle and upload figures: %+v", got)
	}
	noLoadRefusals(t, a, b)
}

// A minute between two tests from one machine: the next from the TUI
// stops "busy", one that waits runs once the minute is over.
func TestLoadTestMinuteBetween(t *testing.T) {
	w, _, b, _ := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(30 * time.Second)
	end := w.now()
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "cyd", false); w.after(b) })
	w.runFor(time.Second)
	if got := loads(b); len(got) != 2 || stopped(got[1]) != "busy" {
		t.Fatalf("a second test at once: %v, want it stopped busy", got)
	}
	if v := b.s.View(w.now()).Load; v == nil || v.NextAt <= w.now() || v.NextAt > end+loadGap {
		t.Fatalf("View.Load %+v: want NextAt within the minute after the first test", v)
	}
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "cyd", true); w.after(b) })
	w.runFor(20 * time.Second)
	if len(loads(b)) != 2 || b.s.load.run != nil {
		t.Fatal("the waiting test started inside the minute")
	}
	w.runFor(60 * time.Second)
	if got := loads(b); len(got) != 3 || got[2].To != "cyd" || stopped(got[2]) != "" {
		t.Fatalf("after the minute: %v, want the waiting test to cyd complete", got)
	}
	noLoadRefusals(t, w.machines...)
}

// A pair whose datagrams go through the host's relay is never tested: the
// test stops "relayed" and sends no load.
func TestLoadTestNeverRelayed(t *testing.T) {
	w := newWorld(t, 12, impair.Profile{Delay: 10 * time.Millisecond})
	cfg := Config{Players: 3, Load: LoadConfig{Cap: loadCap}}
	ada := w.host("ada", cfg)
	bob := w.joinAt(w.behind("bob", w.nat("10.0.1.1", false), "192.168.1.2:7373"), RolePlayer, ada.addr, cfg)
	dan := w.joinAt(w.behind("dan", w.nat("10.0.3.1", true), "192.168.3.2:7373"), RolePlayer, ada.addr, cfg)
	if !w.runUntil(20*time.Second, started(ada, bob, dan)) {
		t.Fatal("the game did not start")
	}
	w.runFor(3 * time.Second)
	if bob.s.pathTo("dan") != pathRelayed {
		t.Fatalf("bob → dan is %v, want relayed for this test", bob.s.pathTo("dan"))
	}
	bob.tr.Keep = true
	w.at(w.now(), func() { bob.s.StartLoadTest(w.now(), "dan", false); w.after(bob) })
	w.runFor(5 * time.Second)
	if got := loads(bob); len(got) != 1 || stopped(got[0]) != "relayed" {
		t.Fatalf("bob's test to dan: %v, want one stopped relayed", got)
	}
	for _, d := range bob.tr.Sent {
		if len(d.Data) > 1000 {
			t.Fatalf("a %d-byte datagram went out: load was sent on a relayed pair", len(d.Data))
		}
	}
}

// The turn's messages are byte for byte as docs/load-test.md shows them,
// a grant the size of the claim it answers.
func TestLoadTurnBytes(t *testing.T) {
	for _, tc := range []struct {
		kind byte
		m    loadTurnMsg
		hex  string
	}{
		{kindLoadClaim, loadTurnMsg{ID: 0x04030201, Tester: 2, Peer: 1, Flag: turnAsk}, "2a01020304020001 0000"},
		{kindLoadGrant, loadTurnMsg{ID: 0x04030201, Tester: 2, Peer: 1, Flag: grantNotice}, "2b01020304020001 0002"},
		{kindLoadGrant, loadTurnMsg{ID: 0x04030201, Tester: 2, Peer: 1, Flag: grantOK}, "2b01020304020001 0001"},
	} {
		want, err := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLoadTurn(nil, tc.kind, tc.m); !bytes.Equal(got, want) {
			t.Errorf("%+v encodes to % x, want % x", tc.m, got, want)
		}
		if got, err := decodeLoadTurn(want, tc.kind); err != nil || got != tc.m {
			t.Errorf("% x decodes to %+v, %v", want, got, err)
		}
	}
	for _, b := range [][]byte{
		{kindLoadClaim, 1, 2, 3, 4, 2, 0, 1, 0, 3},    // no such claim
		{kindLoadGrant, 1, 2, 3, 4, 2, 0, 1, 0, 3},    // no such grant
		{kindLoadGrant, 1, 2, 3, 4, 1},                // the 6-byte grant of the first wire
		{kindLoadClaim, 1, 2, 3, 4, 2, 0, 0},          // the 8-byte claim of the first wire
		{kindLoadGrant, 1, 2, 3, 4, 2, 0, 1, 0, 1, 0}, // a byte too long
	} {
		if _, err := decodeLoadTurn(b, b[0]); err == nil {
			t.Errorf("% x decodes", b)
		}
	}
}

// fullResult is a complete test's result, every field known.
func fullResult() loadtest.Result {
	f := func(v float64) *float64 { return &v }
	return loadtest.Result{IdleRTTMS: f(12.1),
		Upload: &loadtest.DirResult{AddedMS: f(368), P90AddedMS: f(420.5), Mbps: f(9.6), Loss: f(0.0972), Grade: new("D"),
			Added: 368 * time.Millisecond, HasAdded: true},
		Download: &loadtest.DirResult{AddedMS: f(0), P90AddedMS: f(0.3), Mbps: f(49.2), Loss: f(0), Grade: new("A+"), Capped: true,
			HasAdded: true},
		Both:  &loadtest.BothResult{AddedMS: f(371), P90AddedMS: f(430), Loss: f(0.003)},
		Where: &loadtest.WhereAt{Link: "uplink", TTL: 2, AddedMS: 360.5},
		Cost:  &loadtest.GameCost{FramesLate: 38, MaxWaitMS: 1803.4, RungFrom: 1, RungTo: 4, ForMS: 9000},
		Cap:   50e6}
}

// The notes, the waits and the result, byte by byte as docs/load-test.md
// shows them, and back; out-of-shape ones are refused.
func TestLoadTellBytes(t *testing.T) {
	for _, tc := range []struct {
		msg  []byte
		want string
	}{
		{appendLoadTurn(nil, kindLoadNote, loadTurnMsg{ID: 0x04030201, Tester: 2, Peer: 1, Flag: noteBegins}), "2d01020304020001 0000"},
		{appendLoadTurn(nil, kindLoadNote, loadTurnMsg{ID: 0x04030201, Tester: 2, Peer: 1, Flag: noteEnds}), "2d01020304020001 0001"},
		// ada waited 820 ms at most, on frames 300, 301, 317 and 340.
		{appendLoadWaits(nil, waitsOf(0x04030201, []int{300, 301, 317, 340}, 820*time.Millisecond)), "2e01020304 20830c00 2c010000 2900 030002000001"},
		{appendLoadWaits(nil, waitsOf(0x04030201, nil, 0)), "2e01020304 00000000 00000000 0000"},
	} {
		if got := hex.EncodeToString(tc.msg); got != strings.ReplaceAll(tc.want, " ", "") {
			t.Errorf("encodes to %s, want %s", got, tc.want)
		}
	}
	w, err := decodeLoadWaits(appendLoadWaits(nil, waitsOf(7, []int{300, 301, 317, 340}, 820*time.Millisecond)))
	if err != nil || !slices.Equal(w.frames(), []int{300, 301, 317, 340}) || w.Longest != 820*time.Millisecond {
		t.Errorf("waits decode to %+v (frames %v), %v", w, w.frames(), err)
	}
	r := loadResultMsg{ID: 7, Tester: 2, Peer: 1, Result: fullResult()}
	b := appendLoadResult(nil, r)
	if len(b) != loadResultLen {
		t.Fatalf("a result is %d bytes, want %d", len(b), loadResultLen)
	}
	if got, err := decodeLoadResult(b); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("result decodes to %+v, %v", got, err)
	}
	for name, bad := range map[string][]byte{
		"note flag":       appendLoadTurn(nil, kindLoadNote, loadTurnMsg{ID: 7, Tester: 2, Peer: 1, Flag: 2}),
		"waits short":     appendLoadWaits(nil, waitsOf(7, []int{300, 340}, time.Second))[:loadWaitsHead+5],
		"waits long":      append(appendLoadWaits(nil, waitsOf(7, []int{300, 340}, time.Second)), 0),
		"waits first bit": {kindLoadWaits, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 2},
		"waits last bit":  {kindLoadWaits, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 1},
		"waits past span": {kindLoadWaits, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 7},
		"waits no frames": {kindLoadWaits, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
		"result rung":     func() []byte { b := bytes.Clone(b); b[9+59+8] = 11; return b }(),
		"result short":    b[:len(b)-1],
	} {
		var err error
		switch bad[0] {
		case kindLoadNote:
			_, err = decodeLoadTurn(bad, kindLoadNote)
		case kindLoadWaits:
			_, err = decodeLoadWaits(bad)
		default:
			_, err = decodeLoadResult(bad)
		}
		if err == nil {
			t.Errorf("%s: % x decodes", name, bad)
		}
	}
}

// FuzzLoadWire: the session's load messages decode or fail without
// panicking, and what decodes encodes to the same bytes.
func FuzzLoadWire(f *testing.F) {
	f.Add(appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 7, Tester: 2, Peer: 3, Flag: turnAsk}))
	f.Add(appendLoadTurn(nil, kindLoadClaim, loadTurnMsg{ID: 7, Tester: 2, Peer: 3, Flag: turnReady}))
	f.Add(appendLoadTurn(nil, kindLoadGrant, loadTurnMsg{ID: 9, Tester: 2, Peer: 3, Flag: grantNotice}))
	f.Add(appendLoadTurn(nil, kindLoadGrant, loadTurnMsg{ID: 9, Tester: 2, Peer: 3, Flag: 3}))
	f.Add([]byte{kindLoadGrant, 9, 0, 0, 0, 1}) // the old 6-byte grant
	f.Add(appendLoadTurn(nil, kindLoadNote, loadTurnMsg{ID: 9, Tester: 2, Peer: 3, Flag: noteBegins}))
	f.Add(appendLoadTurn(nil, kindLoadNote, loadTurnMsg{ID: 9, Tester: 2, Peer: 3, Flag: noteEnds}))
	f.Add(appendLoadWaits(nil, waitsOf(9, []int{300, 301, 317, 340}, 820*time.Millisecond)))
	f.Add(appendLoadWaits(nil, waitsOf(9, nil, 0)))
	f.Add(appendLoadResult(nil, loadResultMsg{ID: 9, Tester: 2, Peer: 1, Result: fullResult()}))
	f.Add(appendLoadResult(nil, loadResultMsg{ID: 9, Tester: 2, Peer: 1, Result: loadtest.Result{Stopped: new("peer refused")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, kind := range []byte{kindLoadClaim, kindLoadGrant, kindLoadNote} {
			if c, err := decodeLoadTurn(b, kind); err == nil && !bytes.Equal(appendLoadTurn(nil, kind, c), b) {
				t.Fatalf("turn message %x re-encodes differently", b)
			}
		}
		if w, err := decodeLoadWaits(b); err == nil {
			if !bytes.Equal(appendLoadWaits(nil, w), b) {
				t.Fatalf("waits %x re-encode differently", b)
			}
			fr := w.frames()
			if again := waitsOf(w.ID, fr, w.Longest); !bytes.Equal(appendLoadWaits(nil, again), b) {
				t.Fatalf("waits %x: frames %v make other waits", b, fr)
			}
		}
		if r, err := decodeLoadResult(b); err == nil && !bytes.Equal(appendLoadResult(nil, r), b) {
			t.Fatalf("result %x re-encodes differently", b)
		}
	})
}

// Before the game starts there is no game to cost and no peer engine to
// watch: a test asked for in the lobby is refused with a message, and
// nothing runs.
func TestLoadTestNotInTheLobby(t *testing.T) {
	w := newWorld(t, 7, lan30)
	a := w.host("ada", Config{Players: 3})
	b := w.join("bob", RolePlayer, a, Config{})
	w.runFor(3 * time.Second)
	if a.s.Started() {
		t.Fatal("the game started with two of three seated")
	}
	w.at(w.now(), func() { a.s.StartLoadTest(w.now(), "bob", false); w.after(a) })
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", true); w.after(b) })
	w.runFor(3 * time.Second)
	if len(loads(a))+len(loads(b)) != 0 || a.s.load.want != nil || b.s.load.want != nil {
		t.Fatal("a load test was taken in the lobby")
	}
	if !slices.ContainsFunc(a.messages(), func(m string) bool { return strings.HasPrefix(m, "No load test before the game starts") }) {
		t.Errorf("ada's messages %q lack the refusal", a.messages())
	}
}

// A test that waits queues behind the one this machine answers: bob,
// tested by cyd, asks for his own test to ada, and it runs once cyd's is
// over; a second waiting test is refused with a message.
func TestLoadTestWaitsBehindTheOneItAnswers(t *testing.T) {
	w, _, b, c := loadWorld(t, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap}, LoadConfig{Cap: loadCap})
	w.at(w.now(), func() { c.s.StartLoadTest(w.now(), "bob", false); w.after(c) })
	w.at(w.now()+5*time.Second, func() {
		b.s.StartLoadTest(w.now(), "ada", true)
		b.s.StartLoadTest(w.now(), "cyd", true)
		w.after(b)
	})
	w.runFor(8 * time.Second)
	if r := b.s.load.run; r == nil || r.tester || b.s.load.want == nil {
		t.Fatalf("bob's run %+v want %+v: want him answering cyd's test, his own waiting", r, b.s.load.want)
	}
	if !slices.ContainsFunc(b.messages(), func(m string) bool { return strings.Contains(m, "waits its turn already") }) {
		t.Errorf("bob's messages %q lack the refusal of a second waiting test", b.messages())
	}
	w.runFor(60 * time.Second)
	cs, bs := loads(c), loads(b)
	if len(cs) != 1 || stopped(cs[0]) != "" || len(bs) != 1 || bs[0].To != "ada" || stopped(bs[0]) != "" {
		t.Fatalf("cyd's %v, bob's %v: want cyd's test complete, then bob's to ada complete", cs, bs)
	}
	noLoadRefusals(t, w.machines...)
}

// The turn survives loss: every claim, notice, ready, grant and release
// may be lost, and the tester's next ask repeats the step. On a link
// losing one datagram in ten, with jitter and duplicates, two tests asked
// for at once run one after the other, and no conforming machine refuses
// anything of another's.
func TestLoadTestTurnSurvivesLoss(t *testing.T) {
	w := newWorld(t, 19, impair.Profile{Delay: 40 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1, Dup: 0.02})
	key := []byte("load test key")
	cfg := Config{Load: LoadConfig{Cap: loadCap}, Key: key}
	hc := cfg
	hc.Players = 3
	a := w.host("ada", hc)
	b := w.join("bob", RolePlayer, a, cfg)
	c := w.join("cyd", RolePlayer, a, cfg)
	if !w.runUntil(30*time.Second, started(a, b, c)) {
		t.Fatal("the game did not start")
	}
	w.runFor(5 * time.Second)
	w.at(w.now(), func() {
		c.s.StartLoadTest(w.now(), "bob", true)
		b.s.StartLoadTest(w.now(), "ada", true)
		w.after(b)
		w.after(c)
	})
	w.runFor(90 * time.Second)
	bs, cs := loads(b), loads(c)
	if len(bs) != 1 || stopped(bs[0]) != "" || len(cs) != 1 || stopped(cs[0]) != "" {
		t.Fatalf("bob's %v, cyd's %v: want both tests complete", bs, cs)
	}
	if a.s.load.turn.held || a.s.load.run != nil || b.s.load.run != nil || c.s.load.run != nil {
		t.Error("a turn or a test outlived both tests")
	}
	noLoadRefusals(t, a, b, c)
}
