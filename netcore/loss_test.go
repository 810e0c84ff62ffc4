package netcore

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// windowModel is the obvious, slow statement of L2: remember every arrival;
// a sequence is judged once the newest arrival is more than lossWindow above
// it, and only if it is at or after the first arrival.
//
// And of the guard against far numbers: a sequence more than MaxJump from
// the newest is held back; resyncAfter held in a row, each within
// lossWindow of the newest of them, are believed — ahead, as arrivals;
// behind, as the first arrivals of a window that starts over. Any new
// arrival in between ends the run.
type windowModel struct {
	started        bool
	first, highest int64
	arrived        map[int64]bool
	judged         Loss    // every sequence judged so far, in this window and those before a start-over
	next           int64   // the first sequence not judged yet
	held           []int64 // the run held back so far
}

func (m *windowModel) totals() (expected, missing uint64) {
	return m.judged.Expected, m.judged.Missing
}

// observe reports whether s was held back.
func (m *windowModel) observe(s int64) (held bool) {
	if m.started && (s-m.highest > MaxJump || m.highest-s > MaxJump) {
		if slices.Contains(m.held, s) {
			return true
		}
		if len(m.held) > 0 {
			if top := slices.Max(m.held); s-top > lossWindow || top-s > lossWindow {
				m.held = nil
			}
		}
		m.held = append(m.held, s)
		if len(m.held) < resyncAfter {
			return true
		}
		run := m.held
		m.held = nil
		if run[0] < m.highest {
			m.started = false
		}
		for _, r := range run {
			m.arrive(r)
		}
		return false
	}
	if m.arrive(s) {
		m.held = nil
	}
	return false
}

// arrive is L2 alone; it reports whether s was new.
func (m *windowModel) arrive(s int64) bool {
	if !m.started {
		m.started, m.first, m.highest, m.next, m.arrived = true, s, s, s, map[int64]bool{}
	}
	if s < m.first || s < m.highest-lossWindow || m.arrived[s] {
		return false // before the first arrival, already judged (never taken back), or a duplicate
	}
	m.arrived[s] = true
	m.highest = max(m.highest, s)
	for ; m.next < m.highest-lossWindow; m.next++ {
		m.judged.Expected++
		if !m.arrived[m.next] {
			m.judged.Missing++
		}
	}
	return true
}

func checkWindow(t *testing.T, name string, seqs []int64) {
	t.Helper()
	var w recvWindow
	var loss Loss
	m := &windowModel{}
	for i, s := range seqs {
		held := w.observe(uint32(s), &loss) == seqHeld
		wantHeld := m.observe(s)
		e, x := m.totals()
		if loss.Expected != e || loss.Missing != x || held != wantHeld {
			t.Fatalf("%s: after %d arrivals (%v): window %d/%d held %v, model %d/%d held %v",
				name, i+1, seqs[:i+1], loss.Missing, loss.Expected, held, x, e, wantHeld)
		}
	}
}

func seqRange(from, to int64) []int64 {
	var s []int64
	for x := from; x < to; x++ {
		s = append(s, x)
	}
	return s
}

func TestWindowJudgesOnlyOnLeaving_L2(t *testing.T) {
	var w recvWindow
	var loss Loss
	// 33 arrivals: the newest 33 are in neither total.
	for s := range uint32(33) {
		w.observe(s, &loss)
	}
	if loss != (Loss{}) {
		t.Fatalf("after 33 sequences: %+v, want nothing judged", loss)
	}
	w.observe(33, &loss)
	if loss.Expected != 1 || loss.Missing != 0 {
		t.Fatalf("after 34: %+v, want sequence 0 judged as arrived", loss)
	}
	// A gap is not loss until it leaves the window.
	w.observe(35, &loss) // 34 missing
	for s := uint32(36); s < 34+33; s++ {
		w.observe(s, &loss)
	}
	if loss.Missing != 0 {
		t.Fatalf("gap at 34 judged early: %+v", loss)
	}
	w.observe(34+33, &loss)
	if loss.Missing != 1 {
		t.Fatalf("gap at 34 not judged after leaving: %+v", loss)
	}
}

func TestWindowCases_L2(t *testing.T) {
	checkWindow(t, "in order", seqRange(0, 100))
	checkWindow(t, "reordered inside the window", []int64{0, 2, 1, 5, 4, 3, 40, 39, 38, 6, 7, 80})
	checkWindow(t, "duplicates count once", []int64{0, 1, 1, 2, 2, 2, 0, 60, 60, 1, 100})
	checkWindow(t, "nothing before the first arrival", []int64{1000, 999, 998, 1001, 1100, 990})
	checkWindow(t, "a gap wider than the window", []int64{5, 6, 500, 501, 1000})
	checkWindow(t, "exactly 32 and 33 ahead", []int64{0, 32, 65, 66, 130})
	checkWindow(t, "late beyond the window is not taken back", []int64{0, 1, 3, 100, 2, 200})
	// Sequence numbers wrap without a hiccup.
	var w recvWindow
	var loss Loss
	for s := uint32(1<<32 - 40); s != 40; s++ {
		if s%7 != 0 {
			w.observe(s, &loss)
		}
	}
	if loss.Expected != 80-33 || loss.Missing == 0 || loss.Missing > 8 {
		t.Errorf("across the wrap: %+v", loss)
	}
}

func TestWindowMatchesModelOnRandomArrivals_L2(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var seqs []int64
		base := int64(r.IntN(1000))
		for i := range 200 {
			if trial%3 == 0 && r.IntN(20) == 0 {
				// Another region, more than MaxJump away: a lone forged
				// number, or the start of a run the window comes to believe.
				base += int64(r.IntN(2)+1) * (MaxJump + 10) * int64(1-2*r.IntN(2))
			}
			switch x := r.IntN(10); {
			case x < 6:
				seqs = append(seqs, base+int64(i))
			case x < 8:
				seqs = append(seqs, base+int64(i)-int64(r.IntN(40))) // late, maybe judged already
			case x < 9:
				seqs = append(seqs, base+int64(i)+int64(r.IntN(80))) // early
			}
		}
		checkWindow(t, fmt.Sprintf("trial %d", trial), seqs)
	}
}

func TestEveryFragmentCounts_L1(t *testing.T) {
	a, b := newPair(t, nil)
	msg := make([]byte, 2*fragmentPayload+10) // three fragments
	a.ep.Send(0, peerB, ChannelReliable, msg)
	for i := range 40 {
		a.ep.Send(0, peerB, ChannelUnreliable, []byte{byte(i)})
	}
	pass(a, b, ms(10))
	pass(b, a, ms(20))
	as, _ := a.ep.Stats(peerB)
	if as.Loss.Sent != 3 || as.Loss.Retransmitted != 0 {
		t.Errorf("sender: %+v, want 3 reliable datagrams sent (unreliable ones are not)", as.Loss)
	}
	bs, _ := b.ep.Stats(peerA)
	// Each numbered channel has its own window: 3 reliable datagrams are
	// all in the newest 33; 40 unreliable ones leave 7 judged.
	if bs.Loss.Expected != 7 || bs.Loss.Missing != 0 {
		t.Errorf("receiver: %+v, want 7 expected", bs.Loss)
	}
	if len(b.got) != 41 || len(b.got[0].msg) != len(msg) {
		t.Errorf("delivered %d messages", len(b.got))
	}
	// Acks, link reports and handshakes are not numbered: a stream of them
	// moves no window.
	before := bs.Loss
	runTicks(t, a, 10*time.Second, nil)
	pass(a, b, 10*time.Second)
	if bs, _ = b.ep.Stats(peerA); bs.Loss != before {
		t.Errorf("control datagrams moved the totals: %+v → %+v", before, bs.Loss)
	}
}

func TestUnknownIsNotZero_L3(t *testing.T) {
	a, b := newPair(t, nil)
	st, _ := a.ep.Stats(peerB)
	if st.PeerLoss.Known || a.ep.Totals().PeerLoss.Known {
		t.Fatal("peer loss known before the peer reported")
	}
	// The first report — even all zeros — is a measurement.
	runTicks(t, b, time.Second, nil)
	pass(b, a, time.Second)
	st, _ = a.ep.Stats(peerB)
	if !st.PeerLoss.Known || st.PeerLoss.Expected != 0 || !a.ep.Totals().PeerLoss.Known {
		t.Errorf("after a zero report: %+v", st.PeerLoss)
	}
}

func reportDatagram(e, m uint64) []byte {
	return raw(Header{Token: token, Sender: peerB}, AppendLinkReport(nil, LinkReport{Expected: e, Missing: m}))
}

func TestLinkReportEveryPingIntervalAndHighWaterMark_L4(t *testing.T) {
	a, b := newPair(t, func(_ PeerID, c *Config) { c.PingInterval = 250 * time.Millisecond })
	// Each end reports its inbound totals once per ping interval.
	for i := range 200 {
		b.ep.Send(0, peerA, ChannelUnreliable, []byte{byte(i)})
	}
	ds := b.tr.take()
	for i, d := range ds {
		if i%10 != 3 { // lose every tenth
			a.ep.Receive(ms(5), addrB, d.data)
		}
	}
	var at []time.Duration
	runTicks(t, a, time.Second, func(now time.Duration) {
		for _, d := range a.tr.take() {
			h, recs := parse(t, d.data)
			if h.Channel == ChannelControl && recs[0].typ == recLinkReport {
				at = append(at, now)
				r, _ := decodeLinkReport(recs[0].payload)
				if own, _ := a.ep.Stats(peerB); r.Expected != own.Loss.Expected || r.Missing != own.Loss.Missing {
					t.Errorf("report %+v, own totals %+v", r, own.Loss)
				}
				b.ep.Receive(now, addrA, d.data)
			}
		}
	})
	if len(at) != 4 || at[0] != ms(250) || at[3] != time.Second {
		t.Errorf("reports at %v, want every 250ms", at)
	}
	if st, _ := b.ep.Stats(peerA); st.PeerLoss.Expected != 167 || st.PeerLoss.Missing != 17 {
		t.Errorf("peer loss %+v, want the 167 judged with 17 missing", st.PeerLoss)
	}
	// Reports travel unreliable: an older one arriving late does not walk
	// the totals back.
	a.ep.Receive(2*time.Second, addrB, reportDatagram(500, 20))
	a.ep.Receive(2*time.Second, addrB, reportDatagram(400, 10))
	if st, _ := a.ep.Stats(peerB); st.PeerLoss.Expected != 500 || st.PeerLoss.Missing != 20 {
		t.Errorf("after a reordered report: %+v, want the high-water mark 500/20", st.PeerLoss)
	}
	// Cleared when the link ends: a new link has counted nothing.
	a.ep.RemoveLink(peerB)
	a.ep.AddLink(3*time.Second, peerB, addrB, PublicKey{})
	if st, _ := a.ep.Stats(peerB); st.PeerLoss.Known {
		t.Errorf("peer loss survived the link: %+v", st.PeerLoss)
	}
}

func TestTotalsNeverDecrease_L5(t *testing.T) {
	a, b := newPair(t, nil)
	a.ep.AddLink(0, 3, addrC, PublicKey{})
	var prev Totals
	check := func(when string) {
		t.Helper()
		cur := a.ep.Totals()
		if cur.Loss.Sent < prev.Loss.Sent || cur.Loss.Retransmitted < prev.Loss.Retransmitted ||
			cur.Loss.Expected < prev.Loss.Expected || cur.Loss.Missing < prev.Loss.Missing ||
			cur.PeerLoss.Expected < prev.PeerLoss.Expected || cur.PeerLoss.Missing < prev.PeerLoss.Missing ||
			(prev.PeerLoss.Known && !cur.PeerLoss.Known) {
			t.Errorf("%s: totals went down: %+v → %+v", when, prev, cur)
		}
		prev = cur
	}
	for round := range 5 {
		now := time.Duration(round) * time.Second
		for i := range 50 {
			b.ep.Send(now, peerA, ChannelUnreliable, []byte{byte(i)})
			a.ep.Send(now, peerB, ChannelReliable, []byte{byte(i)})
			a.ep.Send(now, 3, ChannelReliable, []byte{byte(i)})
		}
		for i, d := range b.tr.take() {
			if i%5 != 0 {
				a.ep.Receive(now, addrB, d.data)
			}
		}
		a.ep.Receive(now, addrB, reportDatagram(uint64(100*round), uint64(10*round)))
		a.ep.Tick(now + 500*time.Millisecond)
		check(fmt.Sprintf("round %d", round))
	}
	a.ep.RemoveLink(peerB)
	check("after removing a link")
	a.ep.RemoveLink(3)
	check("after removing the last link")
	if got := a.ep.Totals(); got.Loss.Sent < 500 || got.Loss.Missing == 0 || got.PeerLoss.Expected != 400 {
		t.Errorf("retired totals lost: %+v", got)
	}
}

func TestHotPathsDoNotAllocate_L6(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("pre-shared key")} {
		a, b := newPair(t, func(_ PeerID, c *Config) { c.Key = key })
		msg := make([]byte, 200)
		now := time.Duration(0)
		roundTrip := func() {
			now += time.Millisecond
			a.ep.Send(now, peerB, ChannelReliable, msg)
			pass(a, b, now)
			pass(b, a, now)
		}
		// Warm up: every slot of the windows gets its buffer once.
		for range 2 * sendWindow {
			roundTrip()
		}
		// capture's copies and the recording deliver func allocate; count
		// only the endpoints by swapping in a transport and a deliver func
		// that do not.
		at, bt := &sink{}, &sink{}
		a.ep.tr, b.ep.tr = at, bt
		delivered := 0
		b.ep.deliver = func(time.Duration, PeerID, Channel, []byte) { delivered++ }
		allocs := testing.AllocsPerRun(1000, func() {
			now += time.Millisecond
			a.ep.Send(now, peerB, ChannelReliable, msg)
			b.ep.Receive(now, addrA, at.last)
			a.ep.Receive(now, addrB, bt.last)
		})
		if allocs != 0 {
			t.Errorf("key %q: reliable send + receive + ack: %v allocs per run, want 0", key, allocs)
		}
		allocs = testing.AllocsPerRun(1000, func() {
			now += time.Millisecond
			a.ep.Send(now, peerB, ChannelUnreliable, msg)
			b.ep.Receive(now, addrA, at.last)
		})
		if allocs != 0 {
			t.Errorf("key %q: unreliable send + receive: %v allocs per run, want 0", key, allocs)
		}
		if delivered != 2*1001 {
			t.Errorf("key %q: delivered %d, want %d", key, delivered, 2*1001)
		}
	}
}

// sink is a Transport that keeps only the last datagram, in a fixed buffer.
type sink struct {
	buf  [MaxDatagram]byte
	last []byte
}

func (s *sink) Send(_ netip.AddrPort, p []byte) error {
	s.last = s.buf[:copy(s.buf[:], p)]
	return nil
}

func (s *sink) LocalAddr() netip.AddrPort { return addrA }

func TestSimulatedLossIsNotMeasuredLoss_L7(t *testing.T) {
	n, a, b := simPair(t, 3, impair.Profile{Delay: 10 * time.Millisecond, Loss: 1}, nil)
	s := n.Scheduler()
	// Everything before the first arrival is lost by the simulation: that
	// is loss somebody asked for, and nobody observed it.
	for i := range 20 {
		a.send(t, peerB, ChannelUnreliable, []byte{byte(i)})
	}
	s.RunUntil(3 * time.Second) // link reports go and are lost too
	n.SetLink(addrA, addrB, impair.Profile{Delay: 10 * time.Millisecond})
	for i := range 40 {
		a.send(t, peerB, ChannelUnreliable, []byte{byte(i)})
	}
	s.RunUntil(4 * time.Second)
	asked := n.PathStats(addrA, addrB).Dropped
	st, _ := b.ep.Stats(peerA)
	if asked < 20 || st.Loss.Missing != 0 || st.Loss.Expected != 40-33 {
		t.Errorf("simulation dropped %d; receiver measured %d/%d, want 0 missing of 7", asked, st.Loss.Missing, st.Loss.Expected)
	}
}

func TestResendShareAboveLossMeansEstimateBehind_L8(t *testing.T) {
	// No loss at all, but the round trip jumps from 40 ms to 1.2 s: every
	// packet in flight is resent before its ack comes, so Retransmitted/Sent
	// climbs while Missing/Expected stays 0 — the signature of an estimate
	// that has fallen behind, not of a lossy link.
	n, a, b := simPair(t, 5, impair.Profile{Delay: 20 * time.Millisecond}, nil)
	s := n.Scheduler()
	sent := 0
	var next func()
	next = func() {
		a.send(t, peerB, ChannelReliable, fmt.Appendf(nil, "%d", sent))
		sent++
		if sent == 100 {
			n.SetLink(addrA, addrB, impair.Profile{Delay: 600 * time.Millisecond})
		}
		if sent < 300 {
			s.At(s.Now()+20*time.Millisecond, next)
		}
	}
	s.At(0, next)
	s.RunUntil(30 * time.Second)
	out, _ := a.ep.Stats(peerB)
	in, _ := b.ep.Stats(peerA)
	if len(b.got) != 300 {
		t.Fatalf("delivered %d of 300", len(b.got))
	}
	if in.Loss.Missing != 0 {
		t.Errorf("observed inbound loss %d on a lossless link", in.Loss.Missing)
	}
	share := float64(out.Loss.Retransmitted) / float64(out.Loss.Sent)
	if share < 0.2 {
		t.Errorf("resend share %.3f, want far above the zero inbound loss", share)
	}
	t.Logf("resend share %.3f with inbound loss %d/%d; SRTT now %v", share, in.Loss.Missing, in.Loss.Expected, out.SRTT)
}
