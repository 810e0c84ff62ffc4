package probe

import (
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// An episode raises once, survives a condition that flaps back within the
// clear time, and ends only after the condition has been clear that long.
func TestAlertEpisode(t *testing.T) {
	const clear = 10 * time.Second
	s := time.Second
	steps := []struct {
		at    time.Duration
		holds bool
		raise bool
	}{
		{0, false, false},
		{1 * s, true, true},    // starts an episode
		{2 * s, true, false},   // still in it
		{3 * s, false, false},  // clear since 3 s
		{12 * s, true, false},  // back before 13 s: the same episode
		{13 * s, false, false}, // clear since 13 s
		{22 * s, false, false}, // 9 s clear: still on
		{23 * s, false, false}, // 10 s clear: over
		{24 * s, true, true},   // a new episode
	}
	var e episode
	for _, st := range steps {
		if got := e.step(st.at, st.holds, clear); got != st.raise {
			t.Fatalf("at %v holds %v: raise %v, want %v", st.at, st.holds, got, st.raise)
		}
	}
}

// The loss is judged over a whole window only, from at least
// alertMinExpected datagrams each way; outbound from the peer's report
// (L4); a total that goes down starts the readings over.
func TestAlertLossWindow_L4(t *testing.T) {
	stats := func(exp, miss uint64, peer bool, pexp, pmiss uint64) netcore.LinkStats {
		var st netcore.LinkStats
		st.Loss.Expected, st.Loss.Missing = exp, miss
		st.PeerLoss.Known, st.PeerLoss.Expected, st.PeerLoss.Missing = peer, pexp, pmiss
		return st
	}
	var la linkAlerts
	// Ten readings: not yet a whole window, whatever the loss.
	for i := range alertReadings {
		if _, _, holds := la.read(stats(uint64(100*i), uint64(50*i), false, 0, 0), 0.05); holds {
			t.Fatalf("reading %d judged before a whole window", i)
		}
	}
	// The eleventh spans the window: 1000 expected, 500 missing.
	in, out, holds := la.read(stats(1000, 500, false, 0, 0), 0.05)
	if !holds || in != 0.5 || out != -1 {
		t.Fatalf("in %v out %v holds %v, want 0.5, not judged, holds", in, out, holds)
	}
	// The window slides: from reading 1 (100, 50) to (1100, 550) — the
	// same rate — then a clean stretch.
	if in, _, _ = la.read(stats(1100, 550, false, 0, 0), 0.05); in != 0.5 {
		t.Fatalf("slid window: in %v, want 0.5", in)
	}

	// Too few datagrams to judge: 19 expected in the window, all lost.
	var few linkAlerts
	for i := range alertReadings + 1 {
		n := uint64(i * (alertMinExpected - 1) / alertReadings)
		in, _, holds = few.read(stats(n, n, false, 0, 0), 0.05)
	}
	if holds || in != -1 {
		t.Fatalf("%d datagrams judged: in %v holds %v", alertMinExpected-1, in, holds)
	}

	// Outbound: what the peer reports it missed of ours.
	var ob linkAlerts
	for i := range alertReadings + 1 {
		in, out, holds = ob.read(stats(uint64(100*i), 0, true, uint64(100*i), uint64(6*i)), 0.05)
	}
	if !holds || in != 0 || out != 0.06 {
		t.Fatalf("outbound: in %v out %v holds %v, want 0, 0.06, holds", in, out, holds)
	}
	// A total that goes down (the link started over) starts over.
	if _, _, holds = ob.read(stats(5, 0, true, 5, 0), 0.05); holds || ob.n != 1 {
		t.Fatalf("after a reset: holds %v with %d readings, want no judgement from 1", holds, ob.n)
	}
}

// The watch allocates nothing while nothing changes (it runs ten times a
// second on every machine).
func TestAlertWatchAllocs(t *testing.T) {
	w := newTMWorld(t, 4, 1, false, impair.Profile{Delay: 5 * time.Millisecond}, 3, rungs.Timing{})
	w.sched.RunUntil(20 * time.Second)
	p := w.ms[0].peer
	now := w.sched.Now()
	n := testing.AllocsPerRun(100, func() {
		now += 100 * time.Millisecond
		p.alerts.watch(now, p)
	})
	if n != 0 || len(p.events) != 0 {
		t.Fatalf("%v allocs per watch, %d events, want none", n, len(p.events))
	}
}

// BenchmarkAlertWatch is one machine of eight looking at its seven links
// for alerts (ten times a second per machine).
func BenchmarkAlertWatch(b *testing.B) {
	b.ReportAllocs()
	w := newTMWorld(b, 8, 0, false, impair.Profile{Delay: 5 * time.Millisecond}, 4, rungs.Timing{})
	w.sched.RunUntil(20 * time.Second)
	p := w.ms[0].peer
	now := w.sched.Now()
	b.ResetTimer()
	for range b.N {
		now += 100 * time.Millisecond
		p.alerts.watch(now, p)
	}
}

// alertWorld runs three players on a clean network for 20 s, then on
// lossy until 60 s, and returns every alert and message each machine
// published.
func alertWorld(t *testing.T, cfg AlertConfig, lossy impair.Profile) map[string][]feed.Event {
	t.Helper()
	got := map[string][]feed.Event{}
	w := newTMWorldWith(t, 3, 0, impair.Profile{Delay: 30 * time.Millisecond}, 5, func(_ int, c *Config) {
		c.Alerts = cfg
		c.Sink = feed.SinkFunc(func(from string, e feed.Event) {
			switch e.(type) {
			case *feed.AlertEvent, *feed.MessageEvent:
				got[from] = append(got[from], e)
			}
		})
	})
	w.sched.RunUntil(20 * time.Second)
	w.net.SetDefault(lossy)
	w.sched.RunUntil(60 * time.Second)
	return got
}

// A link losing 10 % each way raises one loss alert per link on each
// machine, with its alarm line, at the default 5 %; with the threshold
// at 20 % nothing is raised. The thresholds are the peer's Config.
func TestAlertLossThresholdConfigurable_L2(t *testing.T) {
	lossy := impair.Profile{Delay: 30 * time.Millisecond, Loss: 0.10}
	def := alertWorld(t, AlertConfig{}, lossy)
	for _, me := range []string{"p1", "p2", "p3"} {
		perLink := map[string]int{}
		lines := 0
		for _, e := range def[me] {
			switch e := e.(type) {
			case *feed.AlertEvent:
				if e.Kind != feed.AlertLoss {
					continue
				}
				if e.Player != me || e.From == nil || *e.From != me || e.To == nil || !strings.Contains(e.Text, "% from "+*e.To) {
					t.Fatalf("%s: alert %+v", me, e)
				}
				perLink[*e.To]++
			case *feed.MessageEvent:
				if e.Kind == feed.MessageLinkLoss {
					if !e.Kind.Alarm() || e.Player != me {
						t.Fatalf("%s: loss line %+v", me, e)
					}
					lines++
				}
			}
		}
		if len(perLink) != 2 || lines != 2 {
			t.Fatalf("%s: loss alerts per link %v and %d loss lines, want one per each of 2 links", me, perLink, lines)
		}
		for to, n := range perLink {
			if n != 1 {
				t.Fatalf("%s: %d loss alerts on the link to %s, want 1 (one episode)", me, n, to)
			}
		}
	}
	high := alertWorld(t, AlertConfig{LossPercent: 20}, lossy)
	for me, evs := range high {
		for _, e := range evs {
			if a, ok := e.(*feed.AlertEvent); ok && a.Kind == feed.AlertLoss {
				t.Fatalf("%s raised %+v above a 20 %% threshold", me, a)
			}
		}
	}
}

// A loss line reads back with its kind and peer (a recording, a replay).
func TestLossMessageKindReadsBack(t *testing.T) {
	text := feed.LossText("bob", 0.0504, -1, 10*time.Second)
	if text != "Connection to bob is losing packets: 5.1% from bob in the last 10s" {
		t.Fatalf("text %q", text)
	}
	for _, c := range []struct {
		player string
		kind   feed.MessageKind
		peer   string
	}{{"alice", feed.MessageLinkLoss, "bob"}, {"", feed.MessageNote, ""}} { // one machine's line, or a note
		b, _ := json.Marshal(&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 316}, Text: text, Player: c.player})
		var back feed.MessageEvent
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Kind != c.kind || back.Subject != c.peer || back.Kind.Alarm() != (c.kind == feed.MessageLinkLoss) {
			t.Fatalf("%s read back as kind %d subject %q, want %d %q", b, back.Kind, back.Subject, c.kind, c.peer)
		}
	}
	both := feed.LossText("ada", 0.1, 0.25, 30*time.Second)
	if both != "Connection to ada is losing packets: 10.0% from ada, 25.0% to ada in the last 30s" {
		t.Fatalf("text %q", both)
	}
}
