package netcore

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"
)

func TestAcksGoOutOnArrival_T1(t *testing.T) {
	a, b := newPair(t, nil)
	for i := range 3 {
		a.ep.Send(0, peerB, ChannelReliable, fmt.Appendf(nil, "m%d", i))
	}
	ds := a.tr.take()
	// Each arrival is acked inside Receive, before any Tick.
	for i, d := range ds {
		b.ep.Receive(ms(10), addrA, d.data)
		acks := b.tr.take()
		if len(acks) != 1 {
			t.Fatalf("arrival %d: %d datagrams went out, want one ack", i, len(acks))
		}
		h, recs := parse(t, acks[0].data)
		if h.Channel != ChannelControl || len(recs) != 1 || recs[0].typ != RecAck {
			t.Fatalf("arrival %d: answer is %v %v, want one control Ack", i, h.Channel, recs)
		}
		ack, err := decodeAck(recs[0].payload)
		if err != nil || ack.Len() != 1 || ack.Packet(0) != uint32(i) || ack.Cumulative != uint32(i+1) {
			t.Fatalf("arrival %d: ack %+v len %d err %v", i, ack, ack.Len(), err)
		}
	}
	if len(b.got) != 3 {
		t.Fatalf("delivered %d, want 3", len(b.got))
	}
	// Several acks may share one datagram: one record acking all three.
	c, _ := newPair(t, nil)
	for i := range 3 {
		c.ep.Send(0, peerB, ChannelReliable, fmt.Appendf(nil, "m%d", i))
	}
	c.ep.Receive(ms(80), addrB, raw(Header{Token: token, Sender: peerB}, appendAck(nil, ChannelReliable, 0, 2, 0, 1)))
	st, _ := c.ep.Stats(peerB)
	if st.InFlight != 0 || st.Estimate != Measured || st.SRTT != ms(80) {
		t.Errorf("after one datagram acking three: in flight %d, %v, SRTT %v", st.InFlight, st.Estimate, st.SRTT)
	}
}

func TestAckOfResentPacketIsNotClean_T2(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(100)) // SRTT 100, RTO 300
	a.ep.Send(ms(1000), peerB, ChannelReliable, []byte("late"))
	drop(a)
	a.ep.Tick(ms(1300)) // resend
	pass(a, b, ms(1350))
	pass(b, a, ms(1400)) // 400 ms after the first send, 100 after the resend
	st, _ := a.ep.Stats(peerB)
	if st.SRTT != ms(100) || st.RTTVAR != ms(50) {
		t.Errorf("ack of a resent packet moved the estimate: SRTT %v RTTVAR %v", st.SRTT, st.RTTVAR)
	}
	if st.InFlight != 0 {
		t.Errorf("the ack did not free the packet")
	}
}

func TestProvisionalEstimateFromFirstAckOfResentPacket_T4(t *testing.T) {
	a, b := newPair(t, nil)
	a.ep.Send(0, peerB, ChannelReliable, []byte("slow link"))
	drop(a)
	a.ep.Tick(time.Second) // the fixed retry interval (T9)
	if n := countChannel(t, a.tr.sent, ChannelReliable); n != 1 {
		t.Fatalf("%d resends at 1s, want 1", n)
	}
	pass(a, b, ms(1600))
	pass(b, a, ms(2200)) // the ack arrives 2.2 s after the first send
	st, _ := a.ep.Stats(peerB)
	if st.State != Provisional || st.SRTT != ms(2200) || st.RTO != maxRTO {
		t.Fatalf("after first ack: %v SRTT %v RTO %v, want provisional 2.2s (from first send), RTO 4s", st.State, st.SRTT, st.RTO)
	}
	// The first clean sample replaces it.
	measure(t, a, b, ms(3000), ms(120))
	st, _ = a.ep.Stats(peerB)
	if st.State != Measured || st.SRTT != ms(120) || st.RTTVAR != ms(60) {
		t.Errorf("after first clean sample: %v SRTT %v RTTVAR %v, want measured 120/60", st.State, st.SRTT, st.RTTVAR)
	}
}

func TestResetMeasurementIgnoresEarlierPackets_T5(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(100))
	a.ep.Send(ms(1000), peerB, ChannelReliable, []byte("before loading"))
	pass(a, b, ms(1050))
	a.ep.ResetMeasurement() // every player ready
	pass(b, a, ms(9000))    // its ack took the loading time
	st, _ := a.ep.Stats(peerB)
	if st.State != Unmeasured || st.SRTT != 0 || st.RTO != defaultRetryInterval {
		t.Fatalf("after reset: %v SRTT %v RTO %v, want unmeasured with session values", st.State, st.SRTT, st.RTO)
	}
	if st.InFlight != 0 {
		t.Errorf("the ack still frees the packet; in flight %d", st.InFlight)
	}
	measure(t, a, b, ms(9100), ms(60))
	st, _ = a.ep.Stats(peerB)
	if st.State != Measured || st.SRTT != ms(60) {
		t.Errorf("first sample after reset: %v SRTT %v, want measured 60ms", st.State, st.SRTT)
	}
	if st.Loss.Sent != 3 {
		t.Errorf("loss totals were touched by the reset: Sent %d, want 3", st.Loss.Sent)
	}
}

func TestOnlyAckedChannelsAskForAcks_T6(t *testing.T) {
	a, b := newPair(t, nil)
	for _, c := range []struct {
		ch   Channel
		acks int
	}{{ChannelUnreliable, 0}, {ChannelReliable, 1}, {ChannelGlobal, 1}} {
		a.ep.Send(0, peerB, c.ch, []byte("frame"))
		pass(a, b, ms(10))
		if n := countChannel(t, b.tr.take(), ChannelControl); n != c.acks {
			t.Errorf("%v datagram: %d acks, want %d", c.ch, n, c.acks)
		}
	}
	if len(b.got) != 3 {
		t.Errorf("delivered %d messages, want 3", len(b.got))
	}
}

func TestRetriesDoubleUpToConnTimeout_T8(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(100)) // RTO 300
	start := ms(1000)
	a.ep.Send(start, peerB, ChannelReliable, []byte("lost"))
	drop(a)
	var at []time.Duration
	runTicks(t, a, start+12*time.Second, func(now time.Duration) {
		for range countChannel(t, a.tr.take(), ChannelReliable) {
			at = append(at, now-start)
		}
	})
	// First retry after the RTO in force at first send (300 ms); the
	// resend doubles the link's RTO to 600 (T12), so the connection timeout
	// becomes max(8·100+250, 4·600) = 2.4 s, and the wait doubles up to it:
	// 300, 600, 1200, 2400, 2400, ...
	want := []time.Duration{ms(300), ms(900), ms(2100), ms(4500), ms(6900), ms(9300), ms(11700)}
	if !slices.Equal(at, want) {
		t.Errorf("retries at %v, want %v", at, want)
	}
	st, _ := a.ep.Stats(peerB)
	if st.InFlight != 1 || st.Loss.Retransmitted != uint64(len(want)) {
		t.Errorf("in flight %d, retransmitted %d", st.InFlight, st.Loss.Retransmitted)
	}
}

func TestFirstRetryWaitsRTOInForceAtFirstSend_T8(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(100)) // RTO 300
	a.ep.Send(ms(1000), peerB, ChannelReliable, []byte("p0"))
	a.ep.Send(ms(1000), peerB, ChannelReliable, []byte("p1"))
	ds := a.tr.take()
	b.ep.Receive(ms(1200), addrA, ds[1].data)
	pass(b, a, ms(1250)) // clean sample 250 → RTO 418.75 ms
	if st, _ := a.ep.Stats(peerB); st.RTO != ms(418.75) {
		t.Fatalf("RTO %v, want 418.75ms", st.RTO)
	}
	a.ep.Tick(ms(1299))
	if n := countChannel(t, a.tr.take(), ChannelReliable); n != 0 {
		t.Errorf("%d retries before 1.3s", n)
	}
	a.ep.Tick(ms(1300))
	if n := countChannel(t, a.tr.take(), ChannelReliable); n != 1 {
		t.Errorf("%d retries at 1.3s, want p0's first retry after the 300 ms RTO it was sent under", n)
	}
}

func TestUnmeasuredLinkRetriesAtSessionInterval_T9(t *testing.T) {
	a, _ := newPair(t, func(_ PeerID, c *Config) {
		c.RetryInterval = time.Second
		c.ConnTimeout = 5 * time.Second
	})
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	drop(a)
	var at []time.Duration
	runTicks(t, a, 25*time.Second, func(now time.Duration) {
		for range countChannel(t, a.tr.take(), ChannelReliable) {
			at = append(at, now)
		}
	})
	want := []time.Duration{1 * time.Second, 3 * time.Second, 7 * time.Second, 12 * time.Second, 17 * time.Second, 22 * time.Second}
	if !slices.Equal(at, want) {
		t.Errorf("retries at %v, want %v (1 s doubling, capped at the 5 s connection timeout)", at, want)
	}
	st, _ := a.ep.Stats(peerB)
	if st.Estimate != Unmeasured || st.RTO != time.Second {
		t.Errorf("unmeasured link's RTO changed: %v %v", st.Estimate, st.RTO)
	}
	// The session's connection timeout is held to [2 s, 30 s].
	for _, c := range []struct{ in, want time.Duration }{{time.Second, 2 * time.Second}, {time.Minute, 30 * time.Second}} {
		x, _ := newPair(t, func(_ PeerID, cfg *Config) { cfg.ConnTimeout = c.in })
		if st, _ := x.ep.Stats(peerB); st.ConnTimeout != c.want {
			t.Errorf("session conn timeout %v: in force %v, want %v", c.in, st.ConnTimeout, c.want)
		}
	}
}

func TestConnTimeoutOnLink_T10(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(400)) // SRTT 400, RTTVAR 200, RTO 1200
	st, _ := a.ep.Stats(peerB)
	if st.ConnTimeout != ms(4800) {
		t.Errorf("conn timeout %v, want max(8·400+250, 4·1200) = 4.8s", st.ConnTimeout)
	}
}

type logRecorder struct{ recs []slog.Record }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func (h *logRecorder) messages() []string {
	var m []string
	for _, r := range h.recs {
		var at time.Duration
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "at" {
				at = a.Value.Duration()
			}
			return true
		})
		m = append(m, fmt.Sprintf("%v %s", at, r.Message))
	}
	return m
}

func TestBadConnectionLoggedOnceAndResendingGoesOn_T11(t *testing.T) {
	log := &logRecorder{}
	a, b := newPair(t, func(_ PeerID, c *Config) {
		c.ConnTimeout = 2 * time.Second
		c.Logger = slog.New(log)
	})
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	drop(a)
	resends := 0
	runTicks(t, a, 20*time.Second, func(time.Duration) { resends += countChannel(t, a.tr.take(), ChannelReliable) })
	if want := []string{"2s connection has gone bad"}; !slices.Equal(log.messages(), want) {
		t.Errorf("log %q, want %q", log.messages(), want)
	}
	st, _ := a.ep.Stats(peerB)
	if st.State != Bad || !st.Bad || st.Estimate != Unmeasured || st.InFlight != 1 {
		t.Errorf("stats %+v, want bad with the packet still in flight", st)
	}
	if resends < 5 {
		t.Errorf("%d resends in 20 s, want resending to go on", resends)
	}
	// The next copy gets through: the packet is delivered, acked, and the
	// link recovers — logged once.
	a.ep.Tick(22 * time.Second)
	pass(a, b, 22*time.Second+ms(50))
	pass(b, a, 22*time.Second+ms(100))
	if len(b.got) != 1 || string(b.got[0].msg) != "x" {
		t.Errorf("delivered %v, want the packet that was never dropped", b.got)
	}
	if want := []string{"2s connection has gone bad", "22.1s connection recovered"}; !slices.Equal(log.messages(), want) {
		t.Errorf("log %q, want %q", log.messages(), want)
	}
	if st, _ := a.ep.Stats(peerB); st.State == Bad || st.Bad {
		t.Errorf("still bad after the ack: %v", st.State)
	}
}

func TestLinkRTODoublesOncePerRound_T12(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(100)) // RTO 300
	for i := range 3 {
		a.ep.Send(ms(1000), peerB, ChannelReliable, fmt.Appendf(nil, "p%d", i))
	}
	drop(a)
	a.ep.Tick(ms(1300)) // three resends, one round
	if n := countChannel(t, a.tr.take(), ChannelReliable); n != 3 {
		t.Fatalf("%d resends, want 3", n)
	}
	if st, _ := a.ep.Stats(peerB); st.RTO != ms(600) {
		t.Fatalf("RTO after one round of three resends: %v, want 600ms (doubled once)", st.RTO)
	}
	a.ep.Tick(ms(1900)) // their second retries: first sent under 300 < 600
	if st, _ := a.ep.Stats(peerB); st.RTO != ms(600) {
		t.Errorf("RTO after second retries of old packets: %v, want still 600ms", st.RTO)
	}
	a.ep.Send(ms(2000), peerB, ChannelReliable, []byte("under 600"))
	drop(a)
	a.ep.Tick(ms(2600))
	if st, _ := a.ep.Stats(peerB); st.RTO != ms(1200) {
		t.Errorf("RTO after a packet sent under 600 ms was resent: %v, want 1200ms", st.RTO)
	}
}

func TestCleanSampleRecomputesRTOOnLink_T13(t *testing.T) {
	a, b := newPair(t, nil)
	measure(t, a, b, 0, ms(100)) // SRTT 100 RTTVAR 50 RTO 300
	a.ep.Send(ms(1000), peerB, ChannelReliable, []byte("lost"))
	drop(a)
	a.ep.Tick(ms(1300))
	st, _ := a.ep.Stats(peerB)
	if st.RTO != ms(600) || st.SRTT != ms(100) {
		t.Fatalf("after resend: RTO %v SRTT %v, want 600ms with SRTT kept", st.RTO, st.SRTT)
	}
	drop(a)
	measure(t, a, b, ms(1400), ms(100))
	st, _ = a.ep.Stats(peerB)
	if want := ms(100) + 4*ms(37.5); st.RTO != want {
		t.Errorf("after next clean sample: RTO %v, want %v", st.RTO, want)
	}
}

func TestGlobalChannelFixedRetryDropsAtTimeout_T14(t *testing.T) {
	a, b := newPair(t, func(_ PeerID, c *Config) {
		c.GlobalRetry = 500 * time.Millisecond
		c.GlobalTimeout = 2 * time.Second
	})
	a.ep.Send(0, peerB, ChannelGlobal, []byte("hello lobby"))
	drop(a)
	var at []time.Duration
	runTicks(t, a, 5*time.Second, func(now time.Duration) {
		for range countChannel(t, a.tr.take(), ChannelGlobal) {
			at = append(at, now)
		}
	})
	if want := []time.Duration{ms(500), ms(1000), ms(1500)}; !slices.Equal(at, want) {
		t.Errorf("global retries at %v, want %v (fixed, never doubling)", at, want)
	}
	st, _ := a.ep.Stats(peerB)
	if st.Global.Dropped != 1 || st.GlobalInFlight != 0 || st.Global.Sent != 4 || st.Global.Retransmitted != 3 {
		t.Errorf("global stats %+v in flight %d, want 4 sent, 3 resent, 1 dropped", st.Global, st.GlobalInFlight)
	}
	if st.Loss.Sent != 0 {
		t.Errorf("global datagrams counted in the reliable Sent total: %d", st.Loss.Sent)
	}
	// Acks on the global channel never measure the link.
	a.ep.Send(6*time.Second, peerB, ChannelGlobal, []byte("chat"))
	pass(a, b, 6*time.Second+ms(50))
	pass(b, a, 6*time.Second+ms(100))
	st, _ = a.ep.Stats(peerB)
	if st.Estimate != Unmeasured || st.GlobalInFlight != 0 {
		t.Errorf("after an acked global message: %v, in flight %d", st.Estimate, st.GlobalInFlight)
	}
	if len(b.got) != 1 || string(b.got[0].msg) != "chat" || b.got[0].ch != ChannelGlobal {
		t.Errorf("delivered %+v", b.got)
	}
}

func TestGlobalChannelIsNotBlockedByUnansweredPacket_T14(t *testing.T) {
	a, b := newPair(t, func(_ PeerID, c *Config) { c.GlobalTimeout = 3 * time.Second })
	a.ep.Send(0, peerB, ChannelGlobal, []byte("lost"))
	drop(a)
	a.ep.Send(ms(10), peerB, ChannelGlobal, []byte("next"))
	pass(a, b, ms(20))
	pass(b, a, ms(30))
	if len(b.got) != 1 || string(b.got[0].msg) != "next" {
		t.Fatalf("delivered %+v, want the later message without waiting", b.got)
	}
	// Unanswered global packets are dropped at the timeout and free room
	// in the send window; messages waiting for room go out. At 100 ms
	// "lost" still holds the window's start (packets 0 and 1 occupy it), so
	// 254 of 266 go out and 12 wait; at 3 s "lost" is dropped and 2 go
	// out, at 3.1 s the 254 are dropped and the last 10 go out.
	for i := range sendWindow + 10 {
		a.ep.Send(ms(100), peerB, ChannelGlobal, fmt.Appendf(nil, "g%d", i))
	}
	drop(a)
	runTicks(t, a, 4*time.Second, func(time.Duration) { drop(a) })
	st, _ := a.ep.Stats(peerB)
	if st.GlobalInFlight != 12 || st.Global.Dropped != 255 {
		t.Errorf("in flight %d dropped %d, want 12 and 255", st.GlobalInFlight, st.Global.Dropped)
	}
	// Exactly once: a duplicate global datagram is acked but not delivered again.
	a.ep.Send(5*time.Second, peerB, ChannelGlobal, []byte("once"))
	d := a.tr.take()[0].data
	b.ep.Receive(5*time.Second, addrA, d)
	b.ep.Receive(5*time.Second, addrA, d)
	if n := countChannel(t, b.tr.take(), ChannelControl); n != 2 {
		t.Errorf("%d acks for two copies, want 2", n)
	}
	if got := b.got[len(b.got)-1]; string(got.msg) != "once" || len(b.got) != 2 {
		t.Errorf("deliveries %d, last %q", len(b.got), got.msg)
	}
}

// The deliver func may call back into the endpoint: echo with Send, or end
// the link in the middle of delivering a run of buffered packets.
func TestDeliverMayCallBackIntoTheEndpoint(t *testing.T) {
	a, b := newPair(t, nil)
	b.ep.deliver = func(now time.Duration, from PeerID, ch Channel, msg []byte) {
		b.record(now, from, ch, msg)
		if string(msg) == "stop" {
			b.ep.RemoveLink(from)
			return
		}
		if err := b.ep.Send(now, from, ChannelReliable, append([]byte("echo "), msg...)); err != nil {
			t.Errorf("echo: %v", err)
		}
	}
	for _, m := range []string{"0", "1", "stop", "3"} {
		a.ep.Send(0, peerB, ChannelReliable, []byte(m))
	}
	ds := a.tr.take()
	// 1, stop, 3 arrive before 0: all four become deliverable at once.
	for _, i := range []int{1, 2, 3, 0} {
		b.ep.Receive(ms(10), addrA, ds[i].data)
	}
	var got []string
	for _, d := range b.got {
		got = append(got, string(d.msg))
	}
	if fmt.Sprint(got) != "[0 1 stop]" {
		t.Errorf("delivered %q, want delivery to stop with the link", got)
	}
	pass(b, a, ms(20))
	var echoes []string
	for _, d := range a.got {
		echoes = append(echoes, string(d.msg))
	}
	if fmt.Sprint(echoes) != "[echo 0 echo 1]" {
		t.Errorf("echoes %q", echoes)
	}
	if _, ok := b.ep.Stats(peerA); ok {
		t.Error("link still there")
	}
	if err := b.ep.Send(ms(30), peerA, ChannelReliable, nil); err != errUnknownPeer {
		t.Errorf("send on removed link: %v", err)
	}
}

func TestConfigAndLinkErrors(t *testing.T) {
	if _, err := NewEndpoint(Config{Self: 1, Session: token}, nil, func(time.Duration, PeerID, Channel, []byte) {}); err != errConfig {
		t.Errorf("nil transport: %v", err)
	}
	a, _ := newPair(t, nil)
	if err := a.ep.AddLink(0, peerA, addrB, PublicKey{}); err != errPeerID {
		t.Errorf("link to self: %v", err)
	}
	if err := a.ep.AddLink(0, PeerUnassigned, addrB, PublicKey{}); err != errPeerID {
		t.Errorf("link to unassigned: %v", err)
	}
	if err := a.ep.Send(0, peerB, ChannelControl, nil); err != errSendChannel {
		t.Errorf("send on control: %v", err)
	}
	// Re-adding a peer moves it to the new address and keeps the link.
	a.ep.Send(0, peerB, ChannelReliable, []byte("x"))
	a.ep.AddLink(0, peerB, addrC, PublicKey{})
	a.tr.take()
	a.ep.Tick(time.Second)
	if ds := a.tr.take(); len(ds) == 0 || ds[0].to != addrC {
		t.Errorf("resend went to %v, want the new address", ds)
	}
	if st, _ := a.ep.Stats(peerB); st.InFlight != 1 || st.Addr != addrC {
		t.Errorf("stats after move: %+v", st)
	}
	if got := a.ep.Peers(nil); len(got) != 1 || got[0] != peerB {
		t.Errorf("peers %v", got)
	}
}

func TestBacklogBeyondSendWindowNeverDrops_T11(t *testing.T) {
	a, b := newPair(t, nil)
	const n = 3 * sendWindow
	for i := range n {
		if err := a.ep.Send(0, peerB, ChannelReliable, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := a.ep.Stats(peerB)
	if st.InFlight != sendWindow || st.Backlog != n-sendWindow {
		t.Fatalf("in flight %d, waiting %d", st.InFlight, st.Backlog)
	}
	for now := ms(10); len(b.got) < n && now < time.Minute; now += ms(10) {
		pass(a, b, now)
		pass(b, a, now)
	}
	if len(b.got) != n {
		t.Fatalf("delivered %d of %d", len(b.got), n)
	}
	for i, d := range b.got {
		if string(d.msg) != fmt.Sprint(i) {
			t.Fatalf("delivery %d = %q", i, d.msg)
		}
	}
	// The backlog is bounded: a peer that never answers gets errBacklog,
	// not unbounded memory.
	big := make([]byte, maxMessage)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = a.ep.Send(time.Minute, peerB, ChannelReliable, big)
	}
	if err != errBacklog {
		t.Errorf("after flooding: %v, want ErrBacklog", err)
	}
}
