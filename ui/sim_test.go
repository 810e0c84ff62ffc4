package ui

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/feed"
)

// simUpdates runs a real session — probe peers over netcore endpoints on
// simnet's virtual network, the same code a live session runs — and takes
// alice's picture every 100 ms of virtual time, as a live feed would hand
// it to the UI. bob is 600 ms away from alice, carol 60 ms, and the
// alice–carol link loses 3 % of its datagrams each way.
func simUpdates(t testing.TB, seconds int) []feed.Update {
	t.Helper()
	return simUpdatesWith(t, seconds, nil)
}

// simUpdatesWith is simUpdates with script called before every step of
// 100 ms, to change the network as the session runs.
func simUpdatesWith(t testing.TB, seconds int, script func(at time.Duration, nw *simnet.Network, roster []probe.Member)) []feed.Update {
	t.Helper()
	names := []string{"alice", "bob", "carol"}
	sched := simnet.NewScheduler()
	nw := simnet.NewNetwork(sched, 7)
	var roster []probe.Member
	for i, n := range names {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 88, 0, byte(i + 1)}), 7373)
		roster = append(roster, probe.Member{ID: netcore.PeerID(i + 1), Name: n, Addr: addr})
	}
	nw.SetDefault(impair.Profile{Delay: 30 * time.Millisecond})
	nw.SetLink(roster[0].Addr, roster[1].Addr, impair.Profile{Delay: 300 * time.Millisecond})
	nw.SetLink(roster[0].Addr, roster[2].Addr, impair.Profile{Delay: 30 * time.Millisecond, Loss: 0.03})

	var events []feed.Event
	drv := simnet.NewDriver(nw)
	peers := make([]*probe.Peer, len(roster))
	hosts := make([]*simnet.Host, len(roster))
	for i, mem := range roster {
		hosts[i] = drv.Attach(mem.Addr)
		var sink feed.Sink = feed.SinkFunc(func(string, feed.Event) {})
		if i == 0 {
			sink = feed.SinkFunc(func(_ string, e feed.Event) { events = append(events, e) })
		}
		p, err := probe.NewPeer(probe.Config{Self: mem.ID, Roster: roster, Speed: 30, CommandsPerMinute: 120,
			Seed: uint64(i + 1), Net: netcore.Config{Session: 99}, Sink: sink}, hosts[i].Node())
		if err != nil {
			t.Fatal(err)
		}
		peers[i] = p
		hosts[i].Drive(p)
	}
	for _, p := range peers {
		p.Connect(0)
	}
	for i, p := range peers {
		p.Start(0)
		hosts[i].Wake()
	}
	var out []feed.Update
	for at := 100 * time.Millisecond; at <= time.Duration(seconds)*time.Second; at += 100 * time.Millisecond {
		if script != nil {
			script(at, nw, roster)
		}
		sched.RunUntil(at)
		v := peers[0].View(at)
		v.Session = "sim"
		out = append(out, feed.Update{View: v, Events: events})
		events = nil
	}
	return out
}

// The UI on a real simulated session: measured links with their real
// numbers, a known peer-reported loss, the ladder and the timing the
// engine chose, and nothing unknown printed as 0.
func TestOnSimulatedSession(t *testing.T) {
	ups := simUpdates(t, 40)
	last := ups[len(ups)-1].View
	if len(last.Links) != 2 {
		t.Fatalf("alice has %d links", len(last.Links))
	}
	m := model(t, newStaticFeed(), 120, 40, ups)
	v := m.View()
	checkSize(t, v, 120, 40)
	rows := map[string][]string{}
	for _, l := range strings.Split(v, "\n") {
		f := strings.Fields(strings.TrimLeft(l, "!> "))
		if len(f) > 10 && (f[0] == "bob" || f[0] == "carol") {
			rows[f[0]] = f
		}
	}
	for _, peer := range []string{"bob", "carol"} {
		f := rows[peer]
		if f == nil {
			t.Fatalf("no row for %s:\n%s", peer, v)
		}
		if f[1] != "measured" {
			t.Errorf("%s state %q, want measured", peer, f[1])
		}
		for i := 2; i <= 8; i++ {
			if f[i] == unknown {
				t.Errorf("%s column %d unknown after 40 s of traffic: %v", peer, i, f)
			}
		}
	}
	srtt, _ := strconv.ParseFloat(rows["bob"][2], 64)
	if srtt < 560 || srtt > 700 {
		t.Errorf("bob's SRTT %v, want about 600 ms", srtt)
	}
	// carol's link loses datagrams: some interval of its inbound lane
	// shows the loss, differenced from the totals.
	carol := m.live.links["carol"]
	lossy := 0
	for i := range carol.samples {
		if sh := carol.intervalShares(i); sh.in.ok && sh.in.v > 0 {
			lossy++
		}
	}
	if lossy == 0 {
		t.Errorf("no interval of carol's lossy link shows inbound loss")
	}
	// bob is the worst link and is marked; the charts show it.
	if !regexp.MustCompile(`(?m)^.!bob`).MatchString(v) || !strings.Contains(v, "Round trip · bob") {
		t.Errorf("bob should be marked worst and focused:\n%s", v)
	}
	// The header's timing and tier are the engine's.
	in := last.InForce
	if !strings.Contains(v, in.String()) || !strings.Contains(v, strings.ToUpper(in.Tier().String())) {
		t.Errorf("header lacks timing %v / tier %v:\n%s", in, in.Tier(), v)
	}
	if !strings.Contains(v, "Connection quality target:") {
		t.Errorf("the tier message (S18) should be in the message list:\n%s", v)
	}
}

// spikeUpdates is a simulated session with a spike: from 10 s to 25 s the
// alice–bob link swings between 30 ms and 700 ms every 700 ms, so alice's
// game keeps stalling and catching up — the "frame N" / "waiting for bob"
// flicker a calm header must not show.
func spikeUpdates(t testing.TB) []feed.Update {
	return simUpdatesWith(t, 30, func(at time.Duration, nw *simnet.Network, roster []probe.Member) {
		d := 30 * time.Millisecond
		if at >= 10*time.Second && at < 25*time.Second && (at/(700*time.Millisecond))%2 == 0 {
			d = 700 * time.Millisecond
		}
		nw.SetLink(roster[0].Addr, roster[1].Addr, impair.Profile{Delay: d})
	})
}

// The header is calm: during the spike the state it shows (the
// frame, or whom the game waits for) changes at most once a second of
// session time, although the engine's own state flips far more often.
func TestHeaderCalmDuringSpike(t *testing.T) {
	ups := spikeUpdates(t)
	m := model(t, newStaticFeed(), 120, 40, nil)
	var shown []string
	var at []time.Duration
	raw := 0
	var prevRaw string
	for _, u := range ups {
		m.Update(updateMsg{u})
		line := strings.Split(m.View(), "\n")[1]
		state := line[strings.LastIndex(line, "·")+len("·"):]
		state = strings.TrimSpace(state)
		if len(shown) == 0 || shown[len(shown)-1] != state {
			shown, at = append(shown, state), append(at, u.View.At)
		}
		r := "frame"
		if u.View.Stalled && u.View.WaitedOn != "" {
			r = "waiting"
		}
		if r != prevRaw {
			raw++
			prevRaw = r
		}
	}
	waits := 0
	for _, s := range shown {
		if strings.HasPrefix(s, "waiting for") {
			waits++
		}
	}
	if waits == 0 {
		t.Fatalf("the spike never showed a wait in the header; states: %q", shown)
	}
	for i := 1; i < len(at); i++ {
		if at[i]-at[i-1] < time.Second { // at most one change a second
			t.Errorf("header changed %v after the last change (%q → %q at %v)", at[i]-at[i-1], shown[i-1], shown[i], at[i])
		}
	}
	spike := 0
	for i := range at {
		if at[i] >= 10*time.Second && at[i] < 20*time.Second {
			spike++
		}
	}
	t.Logf("engine state flips (frame ↔ waiting) over 30 s: %d; header changes: %d, %d of them in the 10 s from 10 s to 20 s", raw, len(shown)-1, spike)
	if raw <= waits {
		t.Errorf("the spike should flip the engine's state more often (%d) than the header shows a wait (%d)", raw, waits)
	}
}
