package session

import (
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe"
)

// loadCap keeps the virtual world's load small: the simulated links have
// no bottleneck, so every test's ramp ends at the cap.
const loadCap = 2e6

// loadWorld is a started game of ada (the host), bob and cyd with the
// given load configs, 5 s in.
func loadWorld(t *testing.T, ada, bob, cyd LoadConfig) (w *world, a, b, c *machine) {
	t.Helper()
	w = newWorld(t, 7, lan30)
	a = w.host("ada", Config{Players: 3, Load: ada})
	b = w.join("bob", RolePlayer, a, Config{Load: bob})
	c = w.join("cyd", RolePlayer, a, Config{Load: cyd})
	if !w.runUntil(20*time.Second, started(a, b, c)) {
		t.Fatal("the game did not start")
	}
	w.runFor(5 * time.Second)
	return w, a, b, c
}

func loads(m *machine) []*probe.LoadEvent { return of[*probe.LoadEvent](m) }

func stopped(e *probe.LoadEvent) string {
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
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(35 * time.Second)
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
}
