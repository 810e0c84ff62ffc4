package session

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/vocab"
)

// countedStall is one of a machine's stalls, and whether it fell inside a
// test the machine knew of when it was published.
type countedStall struct {
	frame   int
	wait    float64
	counted bool
}

// watchStalls records m's own stalls as its session publishes them, each
// with whether the session counted it against a test (the sink runs just
// after the session counted it).
func watchStalls(m *machine) *[]countedStall {
	var out []countedStall
	m.s.cfg.Sink = feed.SinkFunc(func(_ string, e feed.Event) {
		m.events = append(m.events, e)
		if st, ok := e.(*feed.StallEvent); ok && st.Player == m.name {
			out = append(out, countedStall{frame: st.Frame, wait: st.WaitMs, counted: m.s.load.seen != nil})
		}
	})
	return &out
}

// A test between two players is told to every machine of the session,
// watchers included: each publishes one load_start when it begins and the
// tester's load line when it ends, says so in its message list (the
// tested player and the others in their own words), keeps the pair quiet
// meanwhile and tells its incidents as the test's price; and the result's
// cost counts every seated machine's waits: frames_late the frames any of
// them waited on during the test, max_wait_ms the longest single wait.
//
// bob's line up is 1 Mbit/s with a second of queue, so his test fills
// it: ada and cyd wait for bob's frames, which wait in that queue.
func TestLoadTestEveryoneTold(t *testing.T) {
	w, a, b, c, eve := watchedLoadWorld(t)
	w.net.SetAccessQueue(b.addr, simnet.Queue{Rate: 1e6, Limit: 125000}, simnet.Queue{})
	players := []*machine{a, b, c}
	stalls := map[string]*[]countedStall{}
	for _, m := range players {
		stalls[m.name] = watchStalls(m)
	}
	w.at(w.now(), func() { b.s.StartLoadTest(w.now(), "ada", false); w.after(b) })
	w.runFor(40 * time.Second)

	var want string
	for _, m := range []*machine{b, a, c, eve} {
		starts := of[*feed.LoadStartEvent](m)
		if len(starts) != 1 || starts[0].From != "bob" || starts[0].To != "ada" || starts[0].ForMs != 25000 {
			t.Fatalf("%s's load_start events %+v, want one of bob's test to ada, 25 s at most", m.name, starts)
		}
		ls := allLoads(m)
		if len(ls) != 1 || ls[0].From != "bob" || ls[0].To != "ada" {
			t.Fatalf("%s's load events %v, want bob's to ada", m.name, ls)
		}
		body, _ := json.Marshal(ls[0].Result)
		if m == b {
			want = string(body)
		} else if string(body) != want {
			t.Errorf("%s's load line %s, bob's %s: every machine publishes the tester's result", m.name, body, want)
		}
		if *starts[0].TMs > *ls[0].TMs {
			t.Errorf("%s: load_start at %v after its load at %v", m.name, *starts[0].TMs, *ls[0].TMs)
		}
		if m.s.load.seen != nil || m.s.load.closing != nil {
			t.Errorf("%s still counts the test after its end", m.name)
		}
	}
	for _, c := range []struct {
		m    *machine
		want string
	}{
		{a, "bob is load-testing the line to you for up to 25 s"},
		{c, "bob is load-testing the line to ada for up to 25 s"},
		{eve, "bob is load-testing the line to ada for up to 25 s"},
	} {
		n := 0
		for _, msg := range c.m.messages() {
			if strings.Contains(msg, "load-testing") {
				n++
				if !strings.HasPrefix(msg, c.want) {
					t.Errorf("%s's message %q, want it to start %q", c.m.name, msg, c.want)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s's messages tell the test %d times, want once: %q", c.m.name, n, c.m.messages())
		}
	}
	if slices.ContainsFunc(b.messages(), func(m string) bool { return strings.Contains(m, "load-testing") }) {
		t.Errorf("the tester's own messages tell its test to it: %q", b.messages())
	}

	cost := loads(b)[0].Result.Cost
	if cost == nil {
		t.Fatal("the test has no cost")
	}
	var frames []int
	longest, own, others := 0.0, 0, 0
	for _, m := range players {
		for _, st := range *stalls[m.name] {
			if !st.counted {
				continue
			}
			frames = append(frames, st.frame)
			longest = max(longest, st.wait)
			if m == b {
				own++
			} else {
				others++
			}
		}
	}
	slices.Sort(frames)
	frames = slices.Compact(frames)
	t.Logf("cost %+v; stalls counted: bob's own %d, ada's and cyd's %d; %d frames, the longest %.1f ms", *cost, own, others, len(frames), longest)
	if others == 0 {
		t.Fatal("ada and cyd waited for nothing during the test: the queue did not bite")
	}
	if cost.FramesLate != len(frames) {
		t.Errorf("frames_late %d, want %d: the frames on which any seated machine waited", cost.FramesLate, len(frames))
	}
	if math.Abs(cost.MaxWaitMS-longest) > 0.05 {
		t.Errorf("max_wait_ms %v, want %.1f: the longest single wait of any seated machine", cost.MaxWaitMS, longest)
	}
	if cost.FramesLate <= own {
		t.Errorf("frames_late %d is no more than bob's own %d: the others' waits are not counted", cost.FramesLate, own)
	}

	// Incidents about the pair opened during the test carry it, on every
	// machine that tells one (whether one about a third player does is
	// the incident detector's rule).
	start, end := of[*feed.LoadStartEvent](b)[0].Frame, loads(b)[0].Frame-int(loadReportsWithin/time.Second)*b.s.peer.FPS()
	during, outside := 0, 0
	for _, m := range []*machine{a, b, c, eve} {
		for _, e := range of[*feed.IncidentEvent](m) {
			inc := e.Incident
			if inc.Phase != "open" {
				continue
			}
			if inc.OpenedFrame < start || inc.OpenedFrame > end || inc.Player == nil || (*inc.Player != "bob" && *inc.Player != "ada") {
				continue
			}
			during++
			if m == c || m == eve {
				outside++
			}
			if lp := inc.LoadTest; lp == nil || lp.From != "bob" || lp.To != "ada" || !strings.Contains(inc.Text, "price") {
				t.Errorf("%s's incident %d opened during the test: load_test %+v, text %q", m.name, inc.ID, inc.LoadTest, inc.Text)
			}
		}
	}
	t.Logf("%d incidents about bob or ada opened during the test, %d of them on cyd and eve", during, outside)
	if outside == 0 {
		t.Error("neither cyd nor eve told an incident about the pair during the test")
	}
	noLoadRefusals(t, a, b, c, eve)
}

// An end or a result that overtakes the host's beginning waits for it: the
// machine publishes load_start, then the load line, once each; and a
// result for a test the host never began publishes nothing.
func TestLoadTestResultBeforeItsBeginning(t *testing.T) {
	w, a, b, c, _ := watchedLoadWorld(t)
	bob, ada := c.s.byID[b.s.self], c.s.byID[a.s.self]
	res := loadResultMsg{ID: 77, Tester: bob.ID, Peer: ada.ID, Result: loadtest.Result{Stopped: new("peer refused"), Cap: 2e6}}
	now := w.now()
	c.s.onLoadResult(now, bob, loadResultMsg{ID: 78, Tester: bob.ID, Peer: ada.ID, Result: loadtest.Result{}})
	c.s.onLoadResult(now, bob, res) // the latest of a tester's is kept
	if n := len(of[*feed.LoadStartEvent](c)) + len(allLoads(c)); n != 0 {
		t.Fatalf("cyd published %d load events before the host's word", n)
	}
	c.s.onLoadNote(now, ada, loadTurnMsg{ID: 78, Tester: bob.ID, Peer: ada.ID, Flag: noteBegins}) // the host began another
	c.s.onLoadNote(now, ada, loadTurnMsg{ID: 77, Tester: bob.ID, Peer: ada.ID, Flag: noteBegins})
	starts, ls := of[*feed.LoadStartEvent](c), allLoads(c)
	if len(starts) != 2 || len(ls) != 1 || stopped(ls[0]) != "peer refused" || c.s.load.seen != nil {
		t.Fatalf("cyd published starts %v and loads %v, and sees %+v; want both starts and test 77's load", starts, ls, c.s.load.seen)
	}
	if ls[0].From != "bob" || ls[0].To != "ada" {
		t.Errorf("test 77's load line is %s's to %s", ls[0].From, ls[0].To)
	}
	c.s.onLoadResult(now, bob, res)
	c.s.onLoadNote(now, ada, loadTurnMsg{ID: 77, Tester: bob.ID, Peer: ada.ID, Flag: noteBegins})
	if len(of[*feed.LoadStartEvent](c)) != 2 || len(allLoads(c)) != 1 {
		t.Error("a copy of the result or of the beginning was published again")
	}
}

// Only the host begins a test, only its tester ends it or hands out its
// result, and only a seated player's waits count: anything else over
// another member's link is refused and counted, and publishes nothing.
func TestLoadNotesFromTheWrongMachineRefused(t *testing.T) {
	w, a, b, c, eve := watchedLoadWorld(t)
	bob, ada := c.s.byID[b.s.self], c.s.byID[a.s.self]
	watcher := b.s.byID[eve.s.self]
	now := w.now()
	before := c.s.Rejected().Load
	c.s.onLoadNote(now, bob, loadTurnMsg{ID: 5, Tester: bob.ID, Peer: ada.ID, Flag: noteBegins}) // a beginning from the tester
	c.s.onLoadNote(now, ada, loadTurnMsg{ID: 5, Tester: bob.ID, Peer: ada.ID, Flag: noteEnds})   // an end from its peer
	c.s.onLoadResult(now, ada, loadResultMsg{ID: 5, Tester: bob.ID, Peer: ada.ID})               // a result from its peer
	if got := c.s.Rejected().Load - before; got != 3 {
		t.Errorf("cyd counted %d refusals, want 3", got)
	}
	if n := len(of[*feed.LoadStartEvent](c)) + len(allLoads(c)); n != 0 || c.s.load.seen != nil {
		t.Errorf("cyd published %d load events from forged notes", n)
	}
	before = b.s.Rejected().Load
	b.s.onLoadWaits(now, watcher, waitsOf(5, []int{1, 2}, time.Second))
	if got := b.s.Rejected().Load - before; got != 1 {
		t.Errorf("bob counted %d refusals of a watcher's waits, want 1", got)
	}
}

// A trace's delay that starts at hop 1 when the peer is hop 1 is the
// tester's own way out in the upload hold (only the tester sends load
// then): its uplink. Anywhere else, and in the other holds, the trace's
// own link stands; the added round trip is rounded to 0.1 ms.
func TestHoldWhereUploadAtHopOne(t *testing.T) {
	for _, c := range []struct {
		ph       vocab.LoadPhase
		link     vocab.HopLink
		ttl      int
		wantLink vocab.HopLink
	}{
		{vocab.LoadUpload, vocab.HopPeer, 1, vocab.HopUplink},
		{vocab.LoadDownload, vocab.HopPeer, 1, vocab.HopPeer},
		{vocab.LoadBoth, vocab.HopPeer, 1, vocab.HopPeer},
		{vocab.LoadUpload, vocab.HopPeer, 3, vocab.HopPeer},
		{vocab.LoadUpload, vocab.HopUplink, 2, vocab.HopUplink},
		{vocab.LoadUpload, vocab.HopLAN, 1, vocab.HopLAN},
	} {
		w := holdWhere(c.ph, c.link, c.ttl, 191260*time.Microsecond)
		if w.Link != c.wantLink || w.TTL != c.ttl || w.AddedMS != 191.3 {
			t.Errorf("%s, delay from hop %d (%s): where %+v, want %s at hop %d adding 191.3 ms", c.ph, c.ttl, c.link, *w, c.wantLink, c.ttl)
		}
	}
}

// The both hold loads both directions: at a hop the upload or the
// download hold read on its own, its link is named as the one that added
// more there names it; elsewhere the hold that adds most stands as read.
func TestBestWhereNamesTheBothHoldsHopByItsDirection(t *testing.T) {
	at := func(link vocab.HopLink, ttl int, ms float64) *loadtest.WhereAt {
		return &loadtest.WhereAt{Link: link, TTL: ttl, AddedMS: ms}
	}
	for _, c := range []struct {
		name  string
		holds [3]*loadtest.WhereAt
		want  *loadtest.WhereAt
	}{
		{"upload at hop 1", [3]*loadtest.WhereAt{at("uplink", 1, 531), at("peer", 1, 12), at("peer", 1, 544)}, at("uplink", 1, 544)},
		{"download at hop 1", [3]*loadtest.WhereAt{at("uplink", 1, 12), at("peer", 1, 531), at("peer", 1, 544)}, at("peer", 1, 544)},
		{"upload past a router", [3]*loadtest.WhereAt{at("uplink", 2, 506), nil, at("uplink", 2, 518)}, at("uplink", 2, 518)},
		{"both alone", [3]*loadtest.WhereAt{nil, nil, at("peer", 1, 40)}, at("peer", 1, 40)},
		{"upload adds most", [3]*loadtest.WhereAt{at("uplink", 1, 600), nil, at("peer", 1, 544)}, at("uplink", 1, 600)},
		{"none", [3]*loadtest.WhereAt{}, nil},
	} {
		got := bestWhere(c.holds)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: where %+v, want %+v", c.name, got, c.want)
		}
	}
}
