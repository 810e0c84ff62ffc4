package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/units"
)

// Load tests in a scenario (docs/simulation.md, docs/load-test.md): at
// its time, a `load_tests` entry has the tester's session ask for a test
// toward the peer, waiting its turn as `--load-test` does, and the test
// runs on the simulated links, through their queues (queue.go), as it
// runs live. Every machine publishes a test's `load_start` and `load`
// among the game's events; the run prints the tester's, stamped with the
// run's clock (stampLoad).

// loadTestSpec is one `load_tests` entry: From tests its line against To,
// AtMs after the game started.
type loadTestSpec struct {
	From string   `json:"from"`
	To   string   `json:"to"`
	AtMs *float64 `json:"at_ms"`
}

// Bounds of the load keys: a test takes up to 30 s and a machine runs one
// a minute, so a run has no use for many; the caps are --load-cap's.
const (
	maxLoadTests               = 64
	minLoadCapMbit, maxCapMbit = 1, 10000
)

// loadRetry is how soon a test asked for before its tester's machine has
// started the game is asked for again: a joiner starts a one-way trip
// after the host.
const loadRetry = 10 * time.Millisecond

// checkLoad validates load_tests, no_load_tests and load_cap_mbit: players
// only, a tester never its own peer.
func (s *Scenario) checkLoad() error {
	if len(s.LoadTests) > maxLoadTests {
		return fmt.Errorf("scenario: key \"load_tests\": %d tests, at most %d", len(s.LoadTests), maxLoadTests)
	}
	for i, t := range s.LoadTests {
		k := fmt.Sprintf("load_tests[%d]", i)
		for _, who := range []struct{ key, name string }{{"from", t.From}, {"to", t.To}} {
			if !slices.Contains(s.Players, who.name) {
				return fmt.Errorf("scenario: key %q: %q is not a player", k+"."+who.key, who.name)
			}
		}
		switch {
		case t.From == t.To:
			return fmt.Errorf("scenario: key %q: %q cannot test against itself", k+".to", t.To)
		case t.AtMs == nil:
			return fmt.Errorf("scenario: key %q: a test needs its time", k+".at_ms")
		case *t.AtMs < 0 || *t.AtMs > 1e10:
			return fmt.Errorf("scenario: key %q: at_ms %v is out of range", k+".at_ms", *t.AtMs)
		}
	}
	for i, n := range s.NoLoadTests {
		if !slices.Contains(s.Players, n) {
			return fmt.Errorf("scenario: key \"no_load_tests\": %q is not a player", n)
		}
		if slices.Index(s.NoLoadTests, n) != i {
			return fmt.Errorf("scenario: key \"no_load_tests\": %q appears twice", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.LoadCapMbit)) {
		if !slices.Contains(s.Players, n) {
			return fmt.Errorf("scenario: key \"load_cap_mbit\": %q is not a player", n)
		}
		if c := s.LoadCapMbit[n]; c < minLoadCapMbit || c > maxCapMbit {
			return fmt.Errorf("scenario: key %q: %v is outside %v..%v", "load_cap_mbit."+n, c, minLoadCapMbit, maxCapMbit)
		}
	}
	return nil
}

// loadConfig is machine name's load settings: its consent and its cap.
func (s *Scenario) loadConfig(name string) session.LoadConfig {
	c := session.LoadConfig{Refuse: slices.Contains(s.NoLoadTests, name)}
	if mbit, ok := s.LoadCapMbit[name]; ok {
		c.Cap = int64(mbit * 1e6)
	}
	return c
}

// scheduleLoadTests asks for each scenario test at its time.
func (r *runner) scheduleLoadTests() {
	for _, t := range r.sc.LoadTests {
		r.sched.At(r.startAt+units.FromMillis(*t.AtMs), func() { r.startLoadTest(t) })
	}
}

// startLoadTest has the tester's session ask for the test, waiting its
// turn; a tester not in the game yet is asked again shortly, one that has
// left or vanished runs none.
func (r *runner) startLoadTest(t loadTestSpec) {
	m := r.byName[t.From]
	switch {
	case m == nil || m.host.Stopped() || m.sess.Done():
		return
	case m.peer == nil:
		r.sched.At(r.sched.Now()+loadRetry, func() { r.startLoadTest(t) })
		return
	}
	m.sess.StartLoadTest(r.sched.Now(), t.To, true)
	m.host.Wake()
	r.check(m)
}

// stampLoad puts the run's clock on a load test's events (a test is
// about the line, so its time is what places it), and reports whether the
// run prints e: every machine publishes a test's load_start and load, and
// the run prints the session once, so it prints the tester's.
func (r *runner) stampLoad(from string, e feed.Event) bool {
	switch le := e.(type) {
	case *feed.LoadEvent:
		tms := units.Millis(r.now())
		le.TMs = &tms
		return le.From == from
	case *feed.LoadStartEvent:
		tms := units.Millis(r.now())
		le.TMs = &tms
		return le.From == from
	}
	return true
}
