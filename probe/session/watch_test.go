package session

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// matrixComplete: every seated player's row is known and holds its link to
// every other seated player.
func matrixComplete(mv feed.MatrixView, players []string) bool {
	if len(mv.Players) != len(players) {
		return false
	}
	for _, row := range mv.Players {
		if !row.Known {
			return false
		}
		for _, o := range players {
			if o == row.Name {
				continue
			}
			if !slices.ContainsFunc(row.Links, func(l feed.MatrixLink) bool { return l.To == o }) {
				return false
			}
		}
	}
	return true
}

// activeKeys are a machine's timing_active events from frame on.
func activeKeys(m *machine, from int) []string {
	var out []string
	for _, e := range of[*feed.TimingActiveEvent](m) {
		if e.Frame >= from {
			out = append(out, timingActiveKey(e))
		}
	}
	return out
}

func timingActiveKey(e *feed.TimingActiveEvent) string {
	return fmt.Sprintf("f%d %d/%d %dfps", e.Frame, e.SendPeriod, e.LookAhead, e.FPS)
}

// reportKeys are a machine's report events from frame on, their figures
// as JSON writes them.
func reportKeys(m *machine, from int) []string {
	var out []string
	for _, e := range of[*feed.ReportEvent](m) {
		if e.Frame >= from {
			rtt := "null"
			if e.RTTMs != nil {
				rtt = fmt.Sprint(*e.RTTMs)
			}
			out = append(out, fmt.Sprintf("f%d %s rtt %s wait %v process %v", e.Frame, e.Player, rtt, e.WaitMs, e.ProcessMs))
		}
	}
	return out
}

func timingFrom(m *machine, from int) []string {
	var out []string
	for i, k := range timingKeys(m) {
		if of[*feed.TimingEvent](m)[i].Frame >= from {
			out = append(out, k)
		}
	}
	return out
}

// A watcher attaches to a 4-player game that has run 20 s: the host
// admits it, every player takes it in, and it follows the
// game from the host's snapshot — the timing in force and target, the
// master, the report record (S7) and the recent messages — without
// executing a frame. Its Matrix is complete after one telemetry update from
// each player; a timing change after it attached reaches it on the frame
// every player executed it on. When it leaves, every player forgets it.
func TestLateWatcherFollowsRunningGame_S7_S12(t *testing.T) {
	w := newWorld(t, 12, lan30)
	host := w.host("alice", Config{Players: 4, DropTimeout: 5 * time.Second})
	bob := w.join("bob", RolePlayer, host, Config{})
	carol := w.join("carol", RolePlayer, host, Config{})
	dave := w.join("dave", RolePlayer, host, Config{})
	players := []*machine{host, bob, carol, dave}
	names := []string{"alice", "bob", "carol", "dave"}
	if !w.runUntil(10*time.Second, started(players...)) {
		t.Fatal("the game did not start")
	}
	w.runFor(20 * time.Second)

	// A player arriving now is refused: it would need the game's state.
	late := w.join("frank", RolePlayer, host, Config{})
	eve := w.join("eve", RoleObserver, host, Config{})
	attachedAt := w.now()
	var updates uint64
	complete := w.runUntil(5*time.Second, func() bool {
		p := eve.s.Peer()
		if p == nil {
			return false
		}
		updates = p.TelemetryUpdates()
		return matrixComplete(p.Matrix(w.now()), names)
	})
	if !complete {
		t.Fatalf("eve's matrix not complete 5 s after attaching (started %v, %d telemetry updates)", eve.s.Started(), updates)
	}
	took := w.now() - attachedAt
	t.Logf("matrix complete %v after attaching, after %d telemetry updates", took, updates)
	// One update from each of the three players eve hears directly (and
	// the host) fills its row; allow a lost or superseded one each.
	if updates > 2*uint64(len(players)) {
		t.Errorf("matrix complete after %d telemetry updates, want at most %d", updates, 2*len(players))
	}
	w.runFor(200 * time.Millisecond) // the link watch notes it within a tenth of a second
	ws := eve.s.Summary().Watch
	if ws == nil || ws.MatrixCompleteAfter == nil || *ws.MatrixCompleteAfter > 2*uint64(len(players)) {
		t.Errorf("eve's summary: %+v", ws)
	} else {
		t.Logf("summary: attached at frame %d, %d/%d %d fps, master %s, matrix complete after %d updates",
			ws.Frame, ws.SendPeriod, ws.LookAhead, ws.FPS, ws.Master, *ws.MatrixCompleteAfter)
	}
	w.runUntil(5*time.Second, func() bool { return late.s.Done() })
	var re refusedError
	if !errors.As(late.s.Err(), &re) || re.Reason != netcore.RefuseStarted {
		t.Errorf("late player: err = %v, want the game has started", late.s.Err())
	}

	ep := eve.s.Peer()
	if !ep.Spectator() || !ep.Observer() {
		t.Fatalf("eve: spectator %v observer %v", ep.Spectator(), ep.Observer())
	}
	w.runFor(2 * time.Second) // an update or two
	ev, hv := ep.View(w.now()), host.s.Peer().View(w.now())
	if ev.InForce != hv.InForce || ev.Target != hv.Target || ev.FPS != hv.FPS || ev.Master != hv.Master || ev.Master == "" {
		t.Errorf("eve shows %v→%v %dfps master %q; host %v→%v %dfps master %q",
			ev.InForce, ev.Target, ev.FPS, ev.Master, hv.InForce, hv.Target, hv.FPS, hv.Master)
	}
	if d := hv.Frame - ev.Frame; d < 0 || d > 2*hv.FPS {
		t.Errorf("eve at frame %d, host at %d: more than the update interval apart", ev.Frame, hv.Frame)
	}
	// The report record (S7): every player's latest report, as the host has it.
	reports := 0
	for i, pv := range ev.Players {
		if pv.Observer {
			continue
		}
		hp := hv.Players[i]
		if hp.Name != pv.Name || (hp.Report == nil) != (pv.Report == nil) {
			t.Errorf("player %d: eve has %s %+v, host %s %+v", i, pv.Name, pv.Report, hp.Name, hp.Report)
			continue
		}
		if pv.Report != nil {
			reports++
			if pv.Report.Frame > hp.Report.Frame {
				t.Errorf("%s: eve's report of frame %d is newer than the host's %d", pv.Name, pv.Report.Frame, hp.Report.Frame)
			}
		}
	}
	if reports != len(players) {
		t.Errorf("eve holds %d reports, want %d", reports, len(players))
	}
	// Recent messages: the start, which happened long before eve came.
	if !slices.ContainsFunc(eve.messages(), func(s string) bool { return strings.HasPrefix(s, "The game starts") }) {
		t.Errorf("eve's messages lack the start: %q", eve.messages())
	}
	// Every player links to eve and takes her in.
	eveID := eve.s.self
	for _, m := range players {
		if !slices.Contains(m.linkPeers(), eveID) {
			t.Errorf("%s has no link to eve", m.name)
		}
	}
	// Eve measures her own links (keep-alives).
	for _, l := range ev.Links {
		if !l.RTTKnown {
			t.Errorf("eve's link to %s has no round trip", l.Peer)
		}
	}

	// A timing change after she attached: the same events, same frames.
	attachFrame := ev.Frame
	before := len(timingFrom(host, attachFrame))
	host.s.SetSpeed(20)
	w.after(host)
	if !w.runUntil(30*time.Second, func() bool {
		return len(timingFrom(host, attachFrame)) > before && len(timingFrom(eve, attachFrame)) == len(timingFrom(host, attachFrame))
	}) {
		t.Fatalf("timing after attach: host %q, eve %q", timingFrom(host, attachFrame), timingFrom(eve, attachFrame))
	}
	w.runFor(3 * time.Second)
	want := timingFrom(host, attachFrame)
	for _, m := range append(players[1:], eve) {
		if got := timingFrom(m, attachFrame); !slices.Equal(got, want) {
			t.Errorf("%s timing events %q, host %q", m.name, got, want)
		}
	}
	if got, want := activeKeys(eve, attachFrame), activeKeys(host, attachFrame); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("eve timing_active %q, host %q", got, want)
	}
	if ev := ep.View(w.now()); ev.FPS != 20 {
		t.Errorf("eve shows %d fps after the change, want 20", ev.FPS)
	}
	// The reports executed since she attached: the host's, figure for
	// figure.
	if got, want := reportKeys(eve, attachFrame), reportKeys(host, attachFrame); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("eve's reports %q, host's %q", got, want)
	}
	for _, e := range of[*feed.StallEvent](eve) {
		t.Errorf("eve (a spectator) stalled: %+v", e)
	}

	// She leaves: every player forgets her.
	eve.quit()
	if !w.runUntil(5*time.Second, func() bool {
		for _, m := range players {
			if slices.Contains(m.linkPeers(), eveID) {
				return false
			}
		}
		return true
	}) {
		t.Error("players still link to eve after she left")
	}
	// Another goes silent: forgotten after the drop timeout.
	zoe := w.join("zoe", RoleObserver, host, Config{})
	if !w.runUntil(5*time.Second, func() bool { return zoe.s.Peer() != nil }) {
		t.Fatal("zoe did not attach")
	}
	zoeID := zoe.s.self
	w.runFor(time.Second)
	zoe.vanish()
	if !w.runUntil(10*time.Second, func() bool {
		for _, m := range players {
			if slices.Contains(m.linkPeers(), zoeID) {
				return false
			}
		}
		return true
	}) {
		t.Error("players still link to zoe after she went silent")
	}
	// The game ran on throughout: the players agree frame by frame.
	for f, ck := range host.cks {
		for _, m := range players[1:] {
			if c, ok := m.cks[f]; ok && c != ck {
				t.Fatalf("%s desynced at frame %d", m.name, f)
			}
		}
	}
}

// The watch message decodes to what was encoded.
func TestWatchRoundTrip(t *testing.T) {
	w := sampleWatch()
	b := appendWatch(nil, w)
	got, err := decodeWatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if again := appendWatch(nil, got); string(again) != string(b) {
		t.Fatalf("round trip changed the bytes:\n%x\n%x", b, again)
	}
	if got.State.Target != w.State.Target || len(got.Events) != len(w.Events) || got.Events[5].Text != "The game starts" {
		t.Fatalf("decoded %+v", got)
	}
	for n := range b {
		if _, err := decodeWatch(b[:n]); err == nil {
			t.Errorf("a watch message cut to %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := decodeWatch(append(b, 0)); err == nil {
		t.Error("a byte left over decoded")
	}
}

func sampleWatch() watchMsg {
	return watchMsg{Snapshot: true, Version: 7, State: probe.WatchState{
		Frame: 600, Game: 20 * time.Second, GameKnown: true, Speed: 30, FPS: 30, InForce: rungs.Timing{SendPeriod: 3, LookAhead: 9}, Target: rungs.Timing{SendPeriod: 2, LookAhead: 6},
		Master:  1,
		Players: []probe.WatchPlayer{{ID: 1, Name: "alice"}, {ID: 2, Name: "bob", Removed: true}, {ID: 3, Name: "eve", Observer: true}},
		Reports: []probe.WatchReport{{Player: 1, Reported: true, Report: rungs.Report{Frame: 512, RTT: 31 * time.Millisecond, HasRTT: true, Wait: time.Millisecond}}, {Player: 2}},
	}, Events: []probe.WatchEvent{
		{Kind: probe.WatchTiming, Frame: 520, Decided: 512, Timing: rungs.Timing{SendPeriod: 2, LookAhead: 6}, FPS: 30, Reason: rungs.Better},
		{Kind: probe.WatchActive, Frame: 530, Timing: rungs.Timing{SendPeriod: 2, LookAhead: 6}, FPS: 30},
		{Kind: probe.WatchMaster, Frame: 540, Player: 1},
		{Kind: probe.WatchRemoved, Frame: 540, Player: 2},
		{Kind: probe.WatchReportK, Frame: 512, Player: 1, Report: rungs.Report{Frame: 512, Wait: 2 * time.Millisecond}},
		{Kind: probe.WatchMessage, Frame: 0, Text: "The game starts", GameKnown: true},
	}}
}

// A message carries the session time of its state and of each event; one
// from a host that sends none (no watchGame flag) still decodes, its times
// marked unknown.
func TestWatchCarriesSessionTimes(t *testing.T) {
	w := sampleWatch()
	w.Events = []probe.WatchEvent{{Kind: probe.WatchMessage, Frame: 450, Game: 15 * time.Second, GameKnown: true, Text: "hi"},
		{Kind: probe.WatchMessage, Frame: 0, Text: "bob joined"}}
	b := appendWatch(nil, w)
	got, err := decodeWatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.State.GameKnown || got.State.Game != 20*time.Second || !got.Events[0].GameKnown || got.Events[0].Game != 15*time.Second ||
		got.Events[1].GameKnown {
		t.Fatalf("decoded state %v (%v), events %+v", got.State.Game, got.State.GameKnown, got.Events)
	}
	w.Events = w.Events[:1]
	b = appendWatch(nil, w)
	// The same message as a host without session times sends it: the
	// flag cleared, the state's 8 bytes after its frame and the event's
	// after its frame taken out.
	ev := 1 + 4 + 8 + 2 + len("hi")
	old := slices.Concat(b[:10], b[18:len(b)-ev+5], b[len(b)-ev+13:])
	old[1] &^= watchGame
	got, err = decodeWatch(old)
	if err != nil {
		t.Fatal(err)
	}
	if got.State.GameKnown || got.Events[0].GameKnown || got.State.Frame != 600 || got.Events[0].Text != "hi" {
		t.Fatalf("a message without session times decoded as %+v", got)
	}
	// A session time past a year is refused.
	w.State.Game = maxWatchGame + 1
	if _, err := decodeWatch(appendWatch(nil, w)); err == nil {
		t.Error("a session time past a year decoded")
	}
}

// Bad fields are refused, never taken.
func TestWatchRejectsBadFields(t *testing.T) {
	good := appendWatch(nil, sampleWatch())
	for _, tc := range []struct {
		name string
		mod  func(w *watchMsg)
	}{
		{"version 0", func(w *watchMsg) { w.Version = 0 }},
		{"fps 0", func(w *watchMsg) { w.State.FPS = 0 }},
		{"bad timing", func(w *watchMsg) { w.State.InForce = rungs.Timing{SendPeriod: 0, LookAhead: 6} }},
		{"unknown master", func(w *watchMsg) { w.State.Master = 9 }},
		{"no players", func(w *watchMsg) { w.State.Players = nil; w.State.Master = 0; w.State.Reports = nil; w.Events = nil }},
		{"twice", func(w *watchMsg) { w.State.Players[1].ID = 1 }},
		{"bad name", func(w *watchMsg) { w.State.Players[0].Name = "a\x01" }},
		{"report of nobody", func(w *watchMsg) { w.State.Reports[0].Player = 9 }},
		{"event of nobody", func(w *watchMsg) { w.Events[2].Player = 9 }},
		{"bad reason", func(w *watchMsg) { w.Events[0].Reason = 99 }},
		{"bad kind", func(w *watchMsg) { w.Events[0].Kind = 77 }},
		{"bad text", func(w *watchMsg) { w.Events[5].Text = "\xff" }},
		{"event time past a year", func(w *watchMsg) { w.Events[1].Game, w.Events[1].GameKnown = maxWatchGame+time.Second, true }},
	} {
		w := sampleWatch()
		tc.mod(&w)
		b := appendWatch(nil, w)
		if _, err := decodeWatch(b); err == nil {
			t.Errorf("%s: decoded", tc.name)
		}
	}
	if _, err := decodeWatch(good); err != nil {
		t.Fatal(err)
	}
	// A late flag on a roster entry round-trips; one on a player does not decode.
	r := roster{Version: 2, Need: 2, Speed: 30, DropTimeout: time.Minute, Members: []rosterEntry{{ID: 1, Name: "alice"},
		{ID: 2, Name: "eve", Observer: true, Late: true, Addr: netip.MustParseAddrPort("10.0.0.2:7373")}}}
	rb := appendRoster(nil, r)
	got, err := decodeRoster(rb)
	if err != nil || !got.Members[1].Late || got.Members[0].Late {
		t.Fatalf("roster with a late watcher: %+v %v", got, err)
	}
	bad := slices.Clone(rb)
	bad[rosterFixed+2] |= roleLate // alice's role byte: a late player
	if _, err := decodeRoster(bad); err == nil {
		t.Error("a late player decoded")
	}
}

func FuzzDecodeWatch(f *testing.F) {
	f.Add(appendWatch(nil, sampleWatch()))
	w := sampleWatch()
	w.Snapshot, w.Events = false, nil
	f.Add(appendWatch(nil, w))
	f.Add([]byte{kindWatch})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWatch(b)
		if err != nil {
			return
		}
		// What decodes encodes to the same bytes: nothing was read that
		// is not in the message.
		if again := appendWatch(nil, w); string(again) != string(b) {
			t.Fatalf("decoded %+v re-encodes differently", w)
		}
	})
}

// Late watchers are bounded like lobby ones: with maxObservers watching, the
// next is refused as full, and a player still as started.
func TestLateWatchersBounded(t *testing.T) {
	w := newWorld(t, 13, lan30)
	host := w.host("alice", Config{Players: 2, DropTimeout: 5 * time.Second})
	bob := w.join("bob", RolePlayer, host, Config{})
	if !w.runUntil(10*time.Second, started(host, bob)) {
		t.Fatal("the game did not start")
	}
	w.runFor(2 * time.Second)
	var watchers []*machine
	for i := range maxObservers {
		watchers = append(watchers, w.join(fmt.Sprintf("w%02d", i), RoleObserver, host, Config{}))
	}
	// The watchers' budget lets 64 arriving at once in as it refills
	// (watchbudget.go): some 15 s for all of them.
	if !w.runUntil(30*time.Second, started(watchers...)) {
		t.Fatal("not every watcher attached")
	}
	extra := w.join("extra", RoleObserver, host, Config{})
	w.runUntil(5*time.Second, func() bool { return extra.s.Done() })
	var re refusedError
	if !errors.As(extra.s.Err(), &re) || re.Reason != netcore.RefuseFull {
		t.Errorf("watcher %d: err = %v, want no seat left", maxObservers+1, extra.s.Err())
	}
	if n := len(bob.linkPeers()); n != 1+maxObservers {
		t.Errorf("bob links to %d machines, want %d", n, 1+maxObservers)
	}
	// One leaves: a seat opens.
	watchers[0].quit()
	w.runFor(2 * time.Second)
	again := w.join("again", RoleObserver, host, Config{})
	if !w.runUntil(5*time.Second, started(again)) {
		t.Errorf("a watcher after one left: done %v err %v", again.s.Done(), again.s.Err())
	}
}
