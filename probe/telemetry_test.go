package probe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/snapshot"
	"github.com/lagscope/lagscope/rungs"
)

// tmMessage builds a telemetry message as a peer does.
func tmMessage(snd *snapshot.Sender[snapshot.Telemetry], to int, tel *snapshot.Telemetry, ack uint32, inner []byte) []byte {
	b := beginTelemetry(nil, ack)
	snd.Set(tel)
	b = snd.Next(b, to)
	return endTelemetry(b, 0, inner)
}

// A telemetry message is its kind, the ack of the other direction's
// stream, a snapshot update that comes back untouched (Q2), and the frame
// packet that travels with it.
func TestTelemetryMessageRoundTrip_Q2(t *testing.T) {
	var tel snapshot.Telemetry
	tel.Frame = 300
	tel.SetLinks([]snapshot.Link{{Peer: 2, State: 2, Estimate: 2, SRTTUs: 41_000, RTTVARUs: 3000, RTOUs: 100_000, ConnTimeoutUs: 2_000_000, LossKnown: true, Sent: 10, Expected: 12}})
	snd := snapshot.NewTelemetrySender()
	snd.Set(&tel)
	update := snd.Next(nil, 2)
	fp := framePacket{Kind: kindFrame, Frame: 300, Through: 304}
	packet := fp.appendTo(nil)
	for _, inner := range [][]byte{nil, packet} {
		msg := tmMessage(snapshot.NewTelemetrySender(), 3, &tel, 77, inner)
		ack, got, in, err := decodeTelemetry(msg)
		if err != nil || ack != 77 || !bytes.Equal(got, update) || !bytes.Equal(in, inner) {
			t.Fatalf("decode: ack %d err %v\n got %x\nwant %x\ninner %x", ack, err, got, update, in)
		}
		rcv := snapshot.NewTelemetryReceiver()
		st, fresh, err := rcv.Decode(got)
		if err != nil || !fresh || st.Frame != 300 || st.Links[0].SRTTUs != 41_000 {
			t.Fatalf("snapshot: fresh %v err %v %+v", fresh, err, st)
		}
	}
	a := appendTelemetryAck(nil, 9)
	if v, err := decodeTelemetryAck(a); err != nil || v != 9 || len(a) != telemetryAckLen {
		t.Fatalf("ack: %d %v (%d bytes)", v, err, len(a))
	}
}

// Every truncation, a wrong kind, an update length past the end or below a
// snapshot header, and an ack of nothing are errors, never panics.
func TestTelemetryMessageRejectsBadInput(t *testing.T) {
	var tel snapshot.Telemetry
	msg := tmMessage(snapshot.NewTelemetrySender(), 2, &tel, 1, nil)
	for n := 0; n < len(msg); n++ {
		if _, _, _, err := decodeTelemetry(msg[:n]); err == nil {
			t.Fatalf("telemetry cut at %d decoded", n)
		}
	}
	bad := bytes.Clone(msg)
	bad[0] = kindFrame
	if _, _, _, err := decodeTelemetry(bad); err == nil {
		t.Fatal("a frame packet's kind decoded as telemetry")
	}
	for _, n := range []uint16{0, snapshot.HeaderLen - 1, uint16(len(msg))} {
		bad := bytes.Clone(msg)
		binary.LittleEndian.PutUint16(bad[5:], n)
		if _, _, _, err := decodeTelemetry(bad); err == nil {
			t.Fatalf("update length %d decoded", n)
		}
	}
	for _, b := range [][]byte{nil, {kindTelemetryAck}, {kindTelemetryAck, 1, 0, 0}, {kindTelemetryAck, 1, 0, 0, 0, 0},
		{kindTelemetry, 1, 0, 0, 0}, appendTelemetryAck(nil, 0)} {
		if _, err := decodeTelemetryAck(b); err == nil {
			t.Fatalf("ack %x decoded", b)
		}
	}
}

// FuzzTelemetryMessages: whatever arrives as a telemetry message or ack,
// the decoders return an error or a value, never panic; a telemetry
// message that decodes is its parts again, and a receiver either applies
// its update or refuses it with nothing changed.
func FuzzTelemetryMessages(f *testing.F) {
	snd := snapshot.NewTelemetrySender()
	var tel snapshot.Telemetry
	tel.Frame = 12
	tel.SetLinks([]snapshot.Link{{Peer: 2, State: 2, Estimate: 2, SRTTUs: 41_000, LossKnown: true, Expected: 3}})
	f.Add(tmMessage(snd, 2, &tel, 0, nil))
	snd.Acked(2, 1)
	tel.Frame = 14
	fp := framePacket{Kind: kindStatus, Frame: 14, Through: 16, Holds: []hold{{Player: 3, Through: 15}}}
	f.Add(tmMessage(snd, 2, &tel, 5, fp.appendTo(nil)))
	f.Add(appendTelemetryAck(nil, 3))
	f.Add([]byte{kindTelemetry, 0, 0, 0, 0, 5, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{kindFrame})
	f.Fuzz(func(t *testing.T, b []byte) {
		if ack, err := decodeTelemetryAck(b); err == nil && (ack == 0 || !bytes.Equal(appendTelemetryAck(nil, ack), b)) {
			t.Fatalf("ack %d from %x", ack, b)
		}
		ack, update, inner, err := decodeTelemetry(b)
		if err != nil {
			return
		}
		again := endTelemetry(append(beginTelemetry(nil, ack), update...), 0, inner)
		if !bytes.Equal(again, b) {
			t.Fatalf("telemetry %x re-encodes as %x", b, again)
		}
		rcv := snapshot.NewTelemetryReceiver()
		if _, _, err := rcv.Decode(update); err != nil {
			if _, ok := rcv.State(); ok || rcv.Ack() != 0 {
				t.Fatal("a refused update changed the receiver")
			}
		}
	})
}

// tmWorld is a session of peers on a simulated network in virtual time,
// the simulator's wiring in miniature, with telemetry on or off.
type tmWorld struct {
	sched *simnet.Scheduler
	net   *simnet.Network
	drv   *simnet.Driver
	ms    []*tmMachine
}

type tmMachine struct {
	peer  *Peer
	host  *simnet.Host
	bytes uint64 // every datagram this machine sent, headers included
}

// tmTransport counts what a machine puts on the wire.
type tmTransport struct {
	*simnet.Node
	m *tmMachine
}

func (c tmTransport) Send(to netip.AddrPort, p []byte) error {
	c.m.bytes += uint64(len(p))
	return c.Node.Send(to, p)
}

func newTMWorld(tb testing.TB, players, observers int, telemetry bool, prof impair.Profile, seed uint64, timing rungs.Timing) *tmWorld {
	tb.Helper()
	return newTMWorldWith(tb, players, observers, prof, seed, func(_ int, c *Config) {
		c.Telemetry, c.Timing = telemetry, timing
	})
}

// newTMWorldWith builds the world with each machine's Config adjusted by
// tweak (machine i in house order, players first).
func newTMWorldWith(tb testing.TB, players, observers int, prof impair.Profile, seed uint64, tweak func(i int, c *Config)) *tmWorld {
	tb.Helper()
	w := &tmWorld{sched: simnet.NewScheduler()}
	w.net = simnet.NewNetwork(w.sched, seed)
	w.net.SetDefault(prof)
	w.drv = simnet.NewDriver(w.net)
	var roster []Member
	for i := range players + observers {
		name := fmt.Sprintf("p%d", i+1)
		if i >= players {
			name = fmt.Sprintf("obs%d", i+1-players)
		}
		roster = append(roster, Member{ID: netcore.PeerID(i + 1), Name: name, Observer: i >= players,
			Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 88, 0, byte(i + 1)}), 7373)})
	}
	for i, mem := range roster {
		m := &tmMachine{host: w.drv.Attach(mem.Addr)}
		cpm := 120.0
		if mem.Observer {
			cpm = 0
		}
		cfg := Config{Self: mem.ID, Roster: roster, Speed: 30, CommandsPerMinute: cpm,
			Seed: seed*31 + uint64(i), Net: netcore.Config{Session: seed | 1}}
		tweak(i, &cfg)
		peer, err := NewPeer(cfg, tmTransport{m.host.Node(), m})
		if err != nil {
			tb.Fatal(err)
		}
		m.peer = peer
		m.host.Drive(peer)
		w.ms = append(w.ms, m)
	}
	for _, m := range w.ms {
		m.peer.Connect(0)
	}
	for _, m := range w.ms {
		m.peer.Start(0)
		m.host.Wake()
	}
	return w
}

// sentLog keeps, per stream (sender, receiver), the states the last
// updates carried, by sequence number.
type sentLog struct {
	states map[[2]netcore.PeerID]map[uint32]snapshot.Telemetry
	last   map[[2]netcore.PeerID]uint32
	full   map[[2]netcore.PeerID]int // full updates after the warm-up
	warm   func() bool
}

func (w *tmWorld) logSends(warm time.Duration) *sentLog {
	l := &sentLog{states: map[[2]netcore.PeerID]map[uint32]snapshot.Telemetry{}, last: map[[2]netcore.PeerID]uint32{},
		full: map[[2]netcore.PeerID]int{}}
	for _, m := range w.ms {
		from := m.peer.cfg.Self
		m.peer.tm.onSend = func(to netcore.PeerID, msg []byte, st *snapshot.Telemetry) {
			k := [2]netcore.PeerID{from, to}
			seq := binary.LittleEndian.Uint32(msg[telemetryHead:])
			if l.states[k] == nil {
				l.states[k] = map[uint32]snapshot.Telemetry{}
			}
			l.states[k][seq] = *st
			delete(l.states[k], seq-32) // older than any base: the ring holds the last 32 (Q2)
			l.last[k] = seq
			if msg[telemetryHead+4] == 0 && w.sched.Now() >= warm {
				l.full[k]++
			}
		}
	}
	return l
}

// Under 5 % loss each way, with jitter, every machine — players and an
// observer — holds every other player's telemetry exactly as that player
// sent it in the update it acks, and that update is among the newest the
// player sent (Q1, Q4). After the first second no update is full: acks
// flow, in the telemetry between players and in an observer's own acks
// (Q2). The matrix then shows all 12 directed pairs between the 4 players
// measured, on every machine.
func TestTelemetryConvergesUnderLoss_Q1_Q2_Q4(t *testing.T) {
	prof := impair.Profile{Delay: 20 * time.Millisecond, Jitter: 4 * time.Millisecond, Loss: 0.05}
	w := newTMWorld(t, 4, 1, true, prof, 7, rungs.Timing{})
	log := w.logSends(time.Second)
	w.sched.RunUntil(40 * time.Second)
	now := w.sched.Now()
	for _, r := range w.ms {
		rp := r.peer
		for _, s := range w.ms {
			sp := s.peer
			if s == r || sp.self.Observer {
				continue
			}
			k := [2]netcore.PeerID{sp.cfg.Self, rp.cfg.Self}
			in := rp.tm.in[sp.cfg.Self]
			if in == nil {
				t.Fatalf("%s holds no stream from %s", rp.Name(), sp.Name())
			}
			got, ok := in.rcv.State()
			ack := in.rcv.Ack()
			sent, logged := log.states[k][ack]
			switch {
			case !ok || !logged:
				t.Fatalf("%s→%s: ack %d, state %v, logged %v", sp.Name(), rp.Name(), ack, ok, logged)
			case *got != sent:
				t.Errorf("%s→%s: the state held at update %d differs from the one sent", sp.Name(), rp.Name(), ack)
			case log.last[k]-ack > 3:
				t.Errorf("%s→%s: holds update %d, %d behind the newest sent", sp.Name(), rp.Name(), ack, log.last[k]-ack)
			}
			if log.full[k] != 0 {
				t.Errorf("%s→%s: %d full updates after the warm-up: acks are not getting through", sp.Name(), rp.Name(), log.full[k])
			}
		}
		m := rp.View(now).Matrix
		pairs := 0
		for _, row := range m.Players {
			if !row.Known || (!row.Self && row.Age > time.Second) {
				t.Fatalf("%s: row %s known %v, %v old", rp.Name(), row.Name, row.Known, row.Age)
			}
			for _, l := range row.Links {
				if l.Observer {
					continue
				}
				if l.State != feed.LinkMeasured || !l.RTTKnown || !l.LossKnown || !l.PeerKnown {
					t.Errorf("%s sees %s→%s %s srtt %v (known %v)", rp.Name(), l.From, l.To, l.State, l.SRTT, l.RTTKnown)
				}
				pairs++
			}
		}
		if pairs != 12 {
			t.Errorf("%s's matrix has %d directed pairs between players, want 12", rp.Name(), pairs)
		}
	}
}

// A row from telemetry carries what its player measures: the same link
// state and a round trip within the near form's reach of what the player
// itself shows (µs on the wire, T3), and the player's frame and waits.
func TestTelemetryRowMatchesTheSendersOwn_L3(t *testing.T) {
	w := newTMWorld(t, 3, 0, true, impair.Profile{Delay: 15 * time.Millisecond}, 3, rungs.Timing{})
	w.sched.RunUntil(20 * time.Second)
	now := w.sched.Now()
	m1, m0 := w.ms[1].peer.Matrix(now), w.ms[0].peer.Matrix(now)
	own, seen := m1.Player("p2"), m0.Player("p2")
	if own == nil || seen == nil || !own.Self || seen.Self || !seen.Known {
		t.Fatalf("rows: own %+v seen %+v", own, seen)
	}
	if len(seen.Links) != len(own.Links) || seen.Frame > own.Frame || own.Frame-seen.Frame > 10 {
		t.Fatalf("p2's row at p1: %d links, frame %d; p2's own: %d links, frame %d", len(seen.Links), seen.Frame, len(own.Links), own.Frame)
	}
	if (own.Wait == nil) != (seen.Wait == nil) || seen.Process == nil || *seen.Process != 0 {
		t.Fatalf("waits: own %v seen %v process %v", own.Wait, seen.Wait, seen.Process)
	}
	for i := range own.Links {
		a, b := own.Links[i], seen.Links[i]
		if a.To != b.To || a.State != b.State || !b.RTTKnown || (a.SRTT-b.SRTT).Abs() > time.Millisecond {
			t.Errorf("link %s→%s: own %s %v, seen %s %v", a.From, a.To, a.State, a.SRTT, b.State, b.SRTT)
		}
	}
}

// Without Telemetry a peer sends none (the simulator's output stays what it
// was), yet its matrix has its own row and marks the others unknown (L3).
func TestTelemetryOffSendsNothing_L3(t *testing.T) {
	w := newTMWorld(t, 3, 0, false, impair.Profile{Delay: 10 * time.Millisecond}, 5, rungs.Timing{})
	log := w.logSends(0)
	w.sched.RunUntil(5 * time.Second)
	if len(log.last) != 0 {
		t.Fatalf("telemetry sent with it off: %v", log.last)
	}
	m := w.ms[0].peer.View(w.sched.Now()).Matrix
	if len(m.Players) != 3 || !m.Players[0].Self || m.Players[1].Known || len(m.Players[1].Links) != 0 || m.Players[1].Wait != nil {
		t.Fatalf("matrix without telemetry: %+v", m)
	}
}

// Updates go with frame packets, never more than one every 100 ms
// (telemetryMinGap). At 30 fps a frame lasts 33.3 ms: at 2/6 (the start)
// a frame packet leaves every 66.7 ms and an update goes with every second one
// (133 ms); at 1/4, which a 10 ms round trip earns at frame 64, with every
// third (100 ms); at 10/30, which a 1 s round trip forces, with every one
// (333 ms). No two updates are ever closer than 100 ms (less a millisecond
// for a frame's rounding), stalls included.
func TestTelemetryRateFollowsSendPeriod(t *testing.T) {
	frame := time.Second / 30
	for _, c := range []struct {
		delay time.Duration
		sp    int           // the send period the session settles at
		want  time.Duration // the usual gap there
	}{{5 * time.Millisecond, 1, 3 * frame}, {500 * time.Millisecond, 10, 10 * frame}} {
		w := newTMWorld(t, 2, 0, true, impair.Profile{Delay: c.delay}, 9, rungs.Timing{})
		sender := w.ms[0].peer
		var last time.Duration
		var lastSP int
		gaps := map[int]map[time.Duration]int{} // send period → gap → count
		sender.tm.onSend = func(to netcore.PeerID, msg []byte, st *snapshot.Telemetry) {
			now := w.sched.Now()
			if lastSP != 0 {
				gap := now - last
				if gap < 99*time.Millisecond {
					t.Errorf("at %v: an update %v after the last", now, gap)
				}
				if gaps[lastSP] == nil {
					gaps[lastSP] = map[time.Duration]int{}
				}
				gaps[lastSP][gap.Round(time.Millisecond)]++
			}
			last, lastSP = now, sender.sched.InForce().SendPeriod
		}
		w.sched.RunUntil(30 * time.Second)
		mode := func(m map[time.Duration]int) time.Duration {
			var best time.Duration
			for g, n := range m {
				if n > m[best] {
					best = g
				}
			}
			return best
		}
		if got := mode(gaps[c.sp]); got != c.want.Round(time.Millisecond) || gaps[c.sp][got] < 50 {
			t.Errorf("delay %v: at send period %d updates are mostly %v apart, want %v (%v)", c.delay, c.sp, got, c.want, gaps)
		}
		if c.sp == 1 {
			if got, want := mode(gaps[2]), (4 * frame).Round(time.Millisecond); got != want {
				t.Errorf("at the start (2/6) updates are mostly %v apart, want %v (%v)", got, want, gaps[2])
			}
		}
	}
}

// A removal event ends both streams with the removed player on every
// machine that executes it (Q6): its row leaves the matrix, nothing is
// kept for it, and nothing more is sent to it.
func TestTelemetryStreamsEndWithRemoval_Q6(t *testing.T) {
	w := newTMWorld(t, 3, 1, true, impair.Profile{Delay: 10 * time.Millisecond}, 11, rungs.Timing{})
	log := w.logSends(0)
	w.sched.RunUntil(5 * time.Second)
	w.ms[2].peer.Quit(w.sched.Now())
	w.ms[2].host.Wake()
	w.sched.RunUntil(8 * time.Second)
	if !w.ms[2].peer.Done() {
		t.Fatal("p3 has not left")
	}
	sentTo := log.last[[2]netcore.PeerID{1, 3}]
	w.sched.RunUntil(10 * time.Second)
	if log.last[[2]netcore.PeerID{1, 3}] != sentTo {
		t.Fatal("p1 still sends telemetry to the removed p3")
	}
	for _, m := range []*tmMachine{w.ms[0], w.ms[1], w.ms[3]} {
		p := m.peer
		if _, ok := p.tm.in[3]; ok {
			t.Errorf("%s keeps p3's stream", p.Name())
		}
		mx := p.View(w.sched.Now()).Matrix
		if mx.Player("p3") != nil || len(mx.Players) != 2 {
			t.Errorf("%s's matrix still has p3: %+v", p.Name(), mx.Players)
		}
		for _, ls := range p.KnownLinks(w.sched.Now()) {
			if ls.To == "p3" || ls.From == "p3" {
				t.Errorf("%s still prints a link with p3: %+v", p.Name(), ls)
			}
		}
	}
}

// With TelemetryTo (the demo) players stream only to the machines named:
// p2 and p3 to p1 alone, p1 to nobody. p1 still gets every row, and its
// acks, having no telemetry of its own to ride on, go back on their own:
// after the first second no update to it is full (Q2). p2 holds no stream
// from p3, and nothing reaches p2 or p3.
func TestTelemetryToNamedMachinesOnly_Q2(t *testing.T) {
	w := newTMWorldWith(t, 3, 0, impair.Profile{Delay: 10 * time.Millisecond, Loss: 0.05}, 13, func(i int, c *Config) {
		c.Telemetry = true
		c.TelemetryTo = func(m Member) bool { return i != 0 && m.Name == "p1" }
	})
	log := w.logSends(time.Second)
	w.sched.RunUntil(20 * time.Second)
	for k, n := range log.last {
		if k[1] != 1 || n < 100 {
			t.Errorf("stream %d→%d: %d updates", k[0], k[1], n)
		}
		if log.full[k] != 0 {
			t.Errorf("stream %d→%d: %d full updates after the warm-up", k[0], k[1], log.full[k])
		}
	}
	if len(log.last) != 2 {
		t.Fatalf("streams %v, want p2→p1 and p3→p1", log.last)
	}
	m := w.ms[0].peer.Matrix(w.sched.Now())
	for _, row := range m.Players {
		if !row.Known || len(row.Links) != 2 {
			t.Errorf("p1's row of %s: known %v, %d links", row.Name, row.Known, len(row.Links))
		}
	}
	if len(w.ms[1].peer.tm.in) != 0 || len(w.ms[2].peer.tm.in) != 0 {
		t.Error("p2 or p3 holds a stream")
	}
}

// FuzzPeerTelemetry: whatever a linked player sends as telemetry or as a
// telemetry ack, the peer never panics; it either takes the update in (the
// row then holds what arrived) or counts a bad packet, or drops an update
// whose base it lacks; and the matrix and link lines still draw.
func FuzzPeerTelemetry(f *testing.F) {
	snd := snapshot.NewTelemetrySender()
	var tel snapshot.Telemetry
	tel.Frame = 40
	tel.SetLinks([]snapshot.Link{{Peer: 1, State: 2, Estimate: 2, SRTTUs: 30_000, RTTVARUs: 2000, RTOUs: 100_000, ConnTimeoutUs: 2_000_000, LossKnown: true, Expected: 9},
		{Peer: 9, State: 1, Estimate: 1}}) // a peer not in the session
	fp := framePacket{Kind: kindFrame, Frame: 2, Through: 8}
	f.Add(tmMessage(snd, 1, &tel, 0, nil))
	f.Add(tmMessage(snd, 1, &tel, 0, fp.appendTo(nil)))
	snd.Acked(1, 2)
	tel.Frame = 44
	f.Add(tmMessage(snd, 1, &tel, 3, nil))
	f.Add(appendTelemetryAck(nil, 1))
	f.Add([]byte{kindTelemetry, 0, 0, 0, 0, 6, 0, 1, 0, 0, 0, 0, 0x80, kindStatus})
	f.Fuzz(func(t *testing.T, msg []byte) {
		w := newTMWorld(t, 2, 0, true, impair.Profile{}, 1, rungs.Timing{})
		p := w.ms[0].peer
		from := p.players[1]
		bad := p.BadPackets()
		p.Deliver(time.Second, from.ID, netcore.ChannelUnreliable, msg)
		m := p.Matrix(time.Second)
		row := m.Player("p2")
		in := p.tm.in[from.ID]
		switch {
		case in != nil && in.rcv.Ack() != 0:
			st, _ := in.rcv.State()
			if !row.Known || row.Frame != int(st.Frame) {
				t.Fatalf("update taken in but the row is %+v", row)
			}
		case row.Known:
			t.Fatal("a row known without an update")
		}
		if len(msg) > 0 && msg[0] == kindTelemetry && (in == nil || in.rcv.Ack() == 0) && p.BadPackets() == bad && p.tm.noBase == 0 {
			if _, _, _, err := decodeTelemetry(msg); err != nil {
				t.Fatal("a malformed telemetry message was not counted")
			}
		}
		_ = p.KnownLinks(time.Second)
	})
}

// An update longer than a datagram holds travels as fragments netcore cuts
// and joins (Q5), and arrives whole. A player's largest update — 64 busy
// links, every field in full — is sent between two running peers: the
// other holds it exactly as sent.
func TestTelemetryLongUpdatesTravelInFragments_Q5(t *testing.T) {
	w := newTMWorld(t, 2, 0, true, impair.Profile{Delay: 2 * time.Millisecond}, 17, rungs.Timing{})
	w.sched.RunUntil(time.Second)
	p1, p2 := w.ms[0].peer, w.ms[1].peer
	p1.tm.on = false // no update of its own from here on: only the one below
	var big snapshot.Telemetry
	big.Frame, big.WaitedMs, big.WaitKnown, big.WaitUs, big.ProcessKnown, big.ProcessUs = 1<<30, 1<<31, true, 1<<26, true, 1<<23
	links := make([]snapshot.Link, snapshot.MaxLinks)
	for i := range links {
		v := uint32(1<<24 + i*7919)
		links[i] = snapshot.Link{Peer: netcore.PeerID(1000 + i), State: netcore.Bad, Estimate: netcore.Measured,
			SRTTUs: v, RTTVARUs: v / 2, RTOUs: v, ConnTimeoutUs: v, LossKnown: true,
			Sent: 1<<31 + v, Retransmitted: v, Expected: 1<<31 + v, Missing: v, PeerKnown: true, PeerExpected: 1<<31 + v, PeerMissing: v, CausedMs: v}
	}
	big.SetLinks(links)
	p1.tm.own = big
	p1.tm.snd.Set(&p1.tm.own) // as due does once it has filled own
	msg := p1.tm.encode(p1.players[1], nil)
	if len(msg) <= 2*netcore.MaxDataPayload {
		t.Fatalf("the largest update is %d bytes, want more than two datagrams' worth", len(msg))
	}
	if err := p1.ep.Send(w.sched.Now(), p2.cfg.Self, netcore.ChannelUnreliable, msg); err != nil {
		t.Fatal(err)
	}
	w.sched.RunUntil(w.sched.Now() + 50*time.Millisecond)
	st, ok := p2.tm.in[p1.cfg.Self].rcv.State()
	if !ok || *st != big {
		t.Fatalf("p2 does not hold the long update as sent (frame %d)", st.Frame)
	}
	// Links to peers not in the session draw nowhere: p1's row keeps only
	// what it can name.
	m := p2.Matrix(w.sched.Now())
	if row := m.Player("p1"); !row.Known || len(row.Links) != 0 || row.Frame != 1<<30 {
		t.Fatalf("p1's row at p2: %+v", row)
	}
}
