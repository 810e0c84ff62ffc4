package probe

import (
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// runUntilFrame steps the world until every machine has executed frame
// last, failing after a bounded number of steps.
func (w *tmWorld) runUntilFrame(tb testing.TB, last int) {
	tb.Helper()
	for range 50_000_000 {
		done := true
		for _, m := range w.ms {
			if !m.host.Stopped() && m.peer.Frame() <= last {
				done = false
			}
		}
		if done {
			return
		}
		if !w.sched.Step() {
			tb.Fatalf("the session stopped at %v", w.sched.Now())
		}
	}
	tb.Fatalf("frame %d not reached by %v", last, w.sched.Now())
}

// ackRequests records, for machine m, the frames of every frame packet it
// sent asking for an ack: the reliable count every frame packet carries
// (RelCount) moves when one goes out. OnFrame runs before the frame's own
// packet leaves, so a count that moved at frame f moved on frame f-1. With
// unmeasured set, the links are made to lack a clean sample again before
// every frame, so T6's rule is in force all game long.
func ackRequests(m *tmMachine, unmeasured bool) *[]int {
	frames := []int{0} // the first frame packet of the game (T6), sent at Start
	last := m.peer.relSent
	m.peer.cfg.OnFrame = func(f int, _ uint32) {
		if m.peer.relSent != last {
			if m.peer.relSent != last+1 {
				panic("two ack requests between two frames")
			}
			frames = append(frames, f-1)
			last = m.peer.relSent
		}
		if unmeasured {
			m.peer.ep.ResetMeasurement()
		}
	}
	return &frames
}

// T6: while a link lacks a clean sample, a frame packet asks for an ack at
// least every 32 frames, whatever the send period. Frame packets leave only
// on send frames, so the request goes on the last send frame that keeps the
// gap within 32 (at period 3: 30; at period 10, the forced 10/250 case: 30).
// Nobody issues game commands, so beyond the reports (frames 32, 64, 128,
// 256, …) and the master's timing events only T6 asks for acks: the gaps of
// 128 frames between reports are T6's alone.
func TestAckRequestEvery32Frames_T6(t *testing.T) {
	for _, start := range []rungs.Timing{{SendPeriod: 2, LookAhead: 6}, {SendPeriod: 3, LookAhead: 9}, {SendPeriod: 10, LookAhead: 250}} {
		t.Run(fmt.Sprintf("%d-%d", start.SendPeriod, start.LookAhead), func(t *testing.T) {
			w := newTMWorldWith(t, 2, 0, impair.Profile{Delay: 20 * time.Millisecond}, 5, func(_ int, c *Config) {
				c.Timing, c.CommandsPerMinute = start, 0
			})
			reqs := ackRequests(w.ms[1], true)
			const last = 1100
			w.runUntilFrame(t, last)
			prev := 0
			for _, f := range *reqs {
				if f-prev > 32 {
					t.Fatalf("ack requests at frames %d and %d: a gap of %d frames, more than 32 (all: %v)",
						prev, f, f-prev, *reqs)
				}
				prev = f
			}
			if last-prev > 32 {
				t.Fatalf("no ack request after frame %d (ran to %d): %v", prev, last, *reqs)
			}
		})
	}
}

// truthWorld is a session of players on a simulated network in virtual
// time, like tmWorld, with two things more: a filter on every datagram a
// machine receives, and a lobby phase before the game starts.
type truthWorld struct {
	sched  *simnet.Scheduler
	net    *simnet.Network
	drv    *simnet.Driver
	ms     []*tmMachine
	events [][]feed.Event // per machine, in order
	// filter, when set, may rewrite or drop (nil) a datagram machine to
	// receives from machine from (house indexes).
	filter func(from, to int, p []byte) []byte
}

func newTruthWorld(tb testing.TB, players int, prof impair.Profile, tweak func(i int, c *Config)) *truthWorld {
	tb.Helper()
	w := &truthWorld{sched: simnet.NewScheduler(), events: make([][]feed.Event, players)}
	w.net = simnet.NewNetwork(w.sched, 3)
	w.net.SetDefault(prof)
	var roster []Member
	index := map[netip.AddrPort]int{}
	for i := range players {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 89, 0, byte(i + 1)}), 7373)
		index[addr] = i
		roster = append(roster, Member{ID: netcore.PeerID(i + 1), Name: fmt.Sprintf("p%d", i+1), Addr: addr})
	}
	w.drv = simnet.NewDriver(w.net)
	for i, mem := range roster {
		m := &tmMachine{host: w.drv.Attach(mem.Addr)}
		cfg := Config{Self: mem.ID, Roster: roster, Speed: 30, Seed: uint64(i) + 11, Net: netcore.Config{Session: 77},
			Sink: feed.SinkFunc(func(_ string, e feed.Event) { w.events[i] = append(w.events[i], e) })}
		if tweak != nil {
			tweak(i, &cfg)
		}
		peer, err := NewPeer(cfg, m.host.Node())
		if err != nil {
			tb.Fatal(err)
		}
		m.peer = peer
		m.host.Drive(filtered{peer, w, index, i})
		w.ms = append(w.ms, m)
	}
	for _, m := range w.ms {
		m.peer.Connect(0)
		m.host.Wake()
	}
	return w
}

// start begins the game on every machine at the current virtual time.
func (w *truthWorld) start() {
	for _, m := range w.ms {
		m.peer.Start(w.sched.Now())
		w.poke(m)
	}
}

func (w *truthWorld) poke(m *tmMachine) { m.host.Wake() }

// filtered is a peer whose inbound datagrams pass the world's filter first.
type filtered struct {
	*Peer
	w     *truthWorld
	index map[netip.AddrPort]int
	i     int
}

func (f filtered) Receive(now time.Duration, from netip.AddrPort, p []byte) {
	if f.w.filter != nil {
		if p = f.w.filter(f.index[from], f.i, p); p == nil {
			return
		}
	}
	f.Peer.Receive(now, from, p)
}

func (w *truthWorld) runUntilFrame(tb testing.TB, last int) {
	tb.Helper()
	(&tmWorld{sched: w.sched, ms: w.ms}).runUntilFrame(tb, last)
}

// reports are the report events machine i executed for player name, in
// order: the k-th is the one issued on the k-th report frame (32, 64, 128,
// 256, …).
func (w *truthWorld) reports(i int, name string) []*feed.ReportEvent {
	var out []*feed.ReportEvent
	for _, e := range w.events[i] {
		if r, ok := e.(*feed.ReportEvent); ok && r.Player == name {
			out = append(out, r)
		}
	}
	return out
}

// stripAcks removes every Ack record from a datagram (sealing is off in
// these worlds): the data still arrives, its acknowledgement never does.
// A datagram left with no record is dropped.
func stripAcks(p []byte) []byte {
	if _, err := netcore.DecodeHeader(p); err != nil {
		return p
	}
	out := append([]byte(nil), p[:netcore.HeaderLen]...)
	body := p[netcore.HeaderLen:]
	for len(body) > 0 {
		typ, payload, rest, err := netcore.NextRecord(body)
		if err != nil {
			return p
		}
		if typ != netcore.RecAck {
			out = append(out, body[:len(body)-len(rest)]...)
		}
		_ = payload
		body = rest
	}
	if len(out) == netcore.HeaderLen {
		return nil
	}
	return out
}

// S6: a retransmitting link keeps reporting its last measured round trip.
// p1's acks to p2 are stripped from frame 100 to frame 300 (the data still
// arrives, so the lockstep runs on): p2's reliable packets to p1 are
// resent and outlive the connection timeout, so the link is Bad (T11)
// when p2 issues its report on frame 256. The report must still carry the
// round trip measured before (40 ms), not leave it out.
func TestBadLinkKeepsLastRTT_S6(t *testing.T) {
	w := newTruthWorld(t, 2, impair.Profile{Delay: 20 * time.Millisecond}, nil)
	frameOf := func(i int) int { return w.ms[i].peer.Frame() }
	w.filter = func(from, to int, p []byte) []byte {
		if from == 0 && to == 1 && frameOf(1) >= 100 && frameOf(1) < 300 {
			return stripAcks(p)
		}
		return p
	}
	var badAt256 bool
	p2 := w.ms[1].peer
	p2.cfg.OnFrame = func(f int, _ uint32) {
		if f == 256 {
			st, _ := p2.ep.Stats(1)
			badAt256 = st.Bad && st.Estimate == netcore.Measured
		}
	}
	w.start()
	w.runUntilFrame(t, 400)
	if !badAt256 {
		t.Fatal("the link from p2 to p1 was not Bad and measured at frame 256: the test does not exercise S6")
	}
	reps := w.reports(0, "p2")
	if len(reps) < 5 {
		t.Fatalf("%d reports of p2, want the one of frame 256 (the 4th) and more", len(reps))
	}
	r := reps[3] // issued on frame 256
	if r.RTTMs == nil {
		t.Fatalf("p2's report of frame 256, issued while its link was Bad, left the round trip out; S6 keeps the last measured one")
	}
	if *r.RTTMs < 39 || *r.RTTMs > 41 {
		t.Fatalf("p2's report of frame 256 carries %.3f ms, want the last measured 40 ms", *r.RTTMs)
	}
}

// S18: the tier message compares a timing event's target with the previous
// *target*, not with the timing in force. Mid-staging the two differ: from
// 10/70 (Bad) a decrease to 6/18 (Poor) is staged, 10/70 still in force.
// Then a worsening to 10/30 (Bad again) must say "Bad" (Poor → Bad), and a
// target of 7/21 (Poor, staged the same way) must say nothing (Poor →
// Poor), though against the timing in force (Bad) it would be the other way
// round. The peer executes the events as it does any command it holds.
func TestTierMessageAgainstPreviousTargetMidStaging_S18(t *testing.T) {
	w := newTruthWorld(t, 2, impair.Profile{Delay: 20 * time.Millisecond}, func(_ int, c *Config) {
		c.Timing = rungs.Timing{SendPeriod: 10, LookAhead: 70}
	})
	w.start()
	p := w.ms[1].peer
	timing := func(decided, period, lookAhead int) feed.Command {
		return feed.Command{Type: cmdTiming, Payload: timingPayload{Decided: int32(decided), SendPeriod: uint16(period),
			LookAhead: uint16(lookAhead), FPS: 30, Reason: uint8(rungs.Worse)}.bytes()}
	}
	events := map[int]feed.Command{
		1000: timing(990, 6, 18),   // Bad → Poor: staged, 10/70 stays in force
		1010: timing(1000, 7, 21),  // Poor → Poor mid-staging: no message
		1020: timing(1010, 10, 30), // Poor → Bad mid-staging: a message
	}
	messages := map[int][]string{}
	for f := 990; f <= 1030; f++ {
		p.frame = f
		if c, ok := events[f]; ok {
			n := len(w.events[1])
			p.executeCommand(w.sched.Now(), f, w.ms[0].peer.self, c)
			p.flushEvents()
			for _, e := range w.events[1][n:] {
				if m, ok := e.(*feed.MessageEvent); ok {
					messages[f] = append(messages[f], m.Text)
				}
			}
			if !p.sched.Staged() || p.sched.InForce().Tier() != rungs.Bad {
				t.Fatalf("frame %d: in force %v (staged %v): the test needs a Bad timing in force mid-staging", f, p.sched.InForce(), p.sched.Staged())
			}
		}
		p.sched.Advance(f)
	}
	want := map[int][]string{
		1000: {"Connection quality target: Poor"},
		1020: {"Connection quality target: Bad"},
	}
	if fmt.Sprint(messages) != fmt.Sprint(want) {
		t.Fatalf("tier messages %v, want %v", messages, want)
	}
}

// T5: measurement starts over when the game starts, so loading time never
// counts. In the lobby every message takes a second each way (a slow load),
// and reliable lobby traffic measures every link at about 2 s. At the
// start the network is quick (40 ms round trips): the first reports must
// carry 40 ms, which only a measurement that started over can give — one
// new sample moves a 2 s SRTT only an eighth of the way (T3).
func TestMeasurementStartsOverAtGameStart_T5(t *testing.T) {
	w := newTruthWorld(t, 2, impair.Profile{Delay: time.Second}, func(_ int, c *Config) { c.CommandsPerMinute = 0 })
	for k := range 4 {
		for i, m := range w.ms {
			to := netcore.PeerID(2 - i)
			if err := m.peer.ep.Send(w.sched.Now(), to, netcore.ChannelReliable, []byte{0x7f, byte(k)}); err != nil {
				t.Fatal(err)
			}
			w.poke(m)
		}
		w.sched.RunUntil(w.sched.Now() + 3*time.Second)
	}
	for i, m := range w.ms {
		st, ok := m.peer.ep.Stats(netcore.PeerID(2 - i))
		if !ok || st.Estimate != netcore.Measured || st.SRTT < 1900*time.Millisecond {
			t.Fatalf("machine %d before the start: %+v; the test needs links measured at about 2 s in the lobby", i, st)
		}
	}
	w.net.SetDefault(impair.Profile{Delay: 20 * time.Millisecond})
	w.start()
	w.runUntilFrame(t, 140)
	for _, name := range []string{"p1", "p2"} {
		reps := w.reports(0, name)
		if len(reps) < 2 {
			t.Fatalf("%d reports of %s by frame 140", len(reps), name)
		}
		for k, r := range reps[:2] {
			if r.RTTMs == nil || *r.RTTMs > 41 {
				got := "none"
				if r.RTTMs != nil {
					got = fmt.Sprintf("%.1f ms", *r.RTTMs)
				}
				t.Fatalf("%s's report %d carries %s: the lobby's round trips counted (T5); want 40 ms", name, k+1, got)
			}
		}
	}
}

// S5: a report carries the longest wait over its player's last two report
// intervals. p1's datagrams to p2 are lost for half a second around frame
// 150, so both players wait long once, in the interval (128, 256]; every
// other wait is short. The report of frame 256 and also the one of frame
// 384 must carry that wait; the one of frame 512 no longer. Every report is
// checked against the stalls the player itself published.
func TestReportWaitCoversTwoIntervals_S5(t *testing.T) {
	w := newTruthWorld(t, 2, impair.Profile{Delay: 20 * time.Millisecond}, nil)
	const from, to = 5 * time.Second, 5*time.Second + 500*time.Millisecond
	w.filter = func(src, dst int, p []byte) []byte {
		if now := w.sched.Now(); src == 0 && dst == 1 && now >= from && now < to {
			return nil
		}
		return p
	}
	w.start()
	w.runUntilFrame(t, 700)
	var reportFrames []int
	for f := 1; f <= 700; f++ {
		if rungs.IsReportFrame(f) {
			reportFrames = append(reportFrames, f)
		}
	}
	for i, m := range w.ms {
		name := m.peer.Name()
		// longest[k]: the longest wait in the interval ending at report k.
		longest := make([]float64, len(reportFrames))
		for _, e := range w.events[i] {
			if s, ok := e.(*feed.StallEvent); ok {
				for k, rf := range reportFrames {
					if s.Frame <= rf {
						longest[k] = max(longest[k], s.WaitMs)
						break
					}
				}
			}
		}
		reps := w.reports(i, name)
		if len(reps) < len(reportFrames)-1 {
			t.Fatalf("%s: %d reports, want at least %d", name, len(reps), len(reportFrames)-1)
		}
		if longest[3] < 150 {
			t.Fatalf("%s waited at most %.1f ms in (128, 256]: the test needs one long wait there", name, longest[3])
		}
		for k, r := range reps[:len(reportFrames)-1] {
			want := longest[k]
			if k > 0 {
				want = max(want, longest[k-1])
			}
			if math.Abs(r.WaitMs-want) > 0.001 {
				t.Fatalf("%s's report of frame %d carries a wait of %.3f ms, want %.3f ms, the longest over its last two intervals (this one: %.3f ms)",
					name, reportFrames[k], r.WaitMs, want, longest[k])
			}
		}
	}
}

// S19: event IDs never change meaning. Every ID that travels — the command
// types inside frame packets, the packet kinds on a private link, the timing
// reasons a timing event carries, the protocol version a recording names,
// and netcore's channels, the record types probe's tests rewrite and the
// refusal reasons — is pinned to its number here (netcore's own tests pin
// the record types and refusal reasons it keeps to itself). A new ID takes
// a new number and a new row; changing a row is changing the protocol. (The committed golden recording,
// testdata/golden/handoff.lsrec, is replayed by the main package's
// TestGoldenRecording_S19 and pins the same IDs end to end.)
func TestEventIDsNeverChange_S19(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"CmdGame", int(feed.CmdGame), 0x01},
		{"CmdNetworkReport (NETWORK_REPORT)", int(feed.CmdNetworkReport), 0x10},
		{"CmdTiming", int(cmdTiming), 0x11},
		{"CmdRemove", int(cmdRemove), 0x12},
		{"CmdGameSpeed", int(cmdGameSpeed), 0x13},
		{"CmdLatencyFudge (LATENCYFUDGE)", int(cmdLatencyFudge), 0x14},
		{"ProtocolVersion", feed.ProtocolVersion, 2},
		{"kindFrame", int(kindFrame), 1},
		{"kindStatus", int(kindStatus), 2},
		{"kindTelemetry", int(kindTelemetry), 3},
		{"kindTelemetryAck", int(kindTelemetryAck), 4},
		{"rungs.Initial", int(rungs.Initial), 1},
		{"rungs.Fallback", int(rungs.Fallback), 2},
		{"rungs.Worse", int(rungs.Worse), 3},
		{"rungs.Better", int(rungs.Better), 4},
		{"rungs.Forced", int(rungs.Forced), 5},
		{"rungs.Rate", int(rungs.Rate), 6},
		{"netcore.Version", netcore.Version, 2},
		{"netcore.ChannelControl", int(netcore.ChannelControl), 0},
		{"netcore.ChannelReliable", int(netcore.ChannelReliable), 1},
		{"netcore.ChannelUnreliable", int(netcore.ChannelUnreliable), 2},
		{"netcore.ChannelGlobal", int(netcore.ChannelGlobal), 3},
		{"netcore.RecData", int(netcore.RecData), 0x10},
		{"netcore.RecAck", int(netcore.RecAck), 0x20},
		{"netcore.RefuseFull", int(netcore.RefuseFull), 1},
		{"netcore.RefuseStarted", int(netcore.RefuseStarted), 2},
		{"netcore.RefuseBadCookie", int(netcore.RefuseBadCookie), 3},
		{"netcore.RefuseNameTaken", int(netcore.RefuseNameTaken), 5},
		{"netcore.RefuseBadName", int(netcore.RefuseBadName), 6},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %#x, want %#x: an ID that travels never changes meaning (S19)", tc.name, tc.got, tc.want)
		}
	}
	// The reasons' names are what the NDJSON timing event prints.
	for r, name := range map[rungs.Reason]string{rungs.Initial: "initial", rungs.Fallback: "fallback", rungs.Worse: "worse",
		rungs.Better: "better", rungs.Forced: "forced", rungs.Rate: "rate"} {
		if r.String() != name {
			t.Errorf("reason %d prints %q, want %q", int(r), r.String(), name)
		}
	}
}
