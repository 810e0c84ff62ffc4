package netcore

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// TestBadLinkStaysBadUntilAnAck_T11_T10: on a
// measured link, a peer that falls silent goes bad once and stays bad for
// a minute — although retries double the RTO and so the connection
// timeout grows past the oldest packet's age (T10, T12) — with no
// "recovered" in between; when an ack finally arrives it recovers once.
func TestBadLinkStaysBadUntilAnAck_T11_T10(t *testing.T) {
	// Each stall makes the old rule (bad while the oldest packet is older
	// than the connection timeout in force) flap: bad at 3.4 s, then
	// "recovered" at 3.6 s (stall 2 s), 4.6 s (3 s) or 8.2 s (5 s), as a
	// keep-alive's resend doubled the RTO.
	for _, stall := range []time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second} {
		t.Run(stall.String(), func(t *testing.T) { badLinkStaysBad(t, stall) })
	}
}

func badLinkStaysBad(t *testing.T, stall time.Duration) {
	log := &logRecorder{}
	a, b := newPair(t, func(_ PeerID, c *Config) { c.Logger = slog.New(log) })
	measure(t, a, b, 0, ms(100)) // SRTT 100 ms: RTO 300 ms, conn timeout 2 s
	// From 1 s on b hears nothing. a's last frame packet asked for an ack
	// at 1 s; later a stalls and sends a reliable keep-alive every
	// second, as a live peer does. Each is first sent under the RTO that
	// the resends before it doubled, so its own resends double it again
	// (T12) and the connection timeout, 4·RTO, climbs to 16 s (T10) — past
	// the age at which the first packet made the link bad.
	start := time.Second
	var wentBad time.Duration
	grew := false
	watch := func(now time.Duration) {
		drop(a)
		st, _ := a.ep.Stats(peerB)
		switch {
		case wentBad == 0 && st.Bad:
			wentBad = now
		case wentBad != 0 && !st.Bad:
			t.Fatalf("at %v: recovered without an ack (bad since %v, conn timeout now %v)", now, wentBad, st.ConnTimeout)
		case wentBad != 0:
			grew = grew || st.ConnTimeout > now-start
		}
	}
	a.ep.Send(start, peerB, ChannelReliable, []byte("frame"))
	drop(a)
	runTicks(t, a, start+stall-1, watch)
	for sec := start + stall; sec < start+time.Minute; sec += time.Second {
		a.ep.Send(sec, peerB, ChannelReliable, []byte("alive"))
		drop(a)
		runTicks(t, a, sec+time.Second-1, watch)
	}
	if wentBad == 0 || !grew {
		t.Fatalf("bad at %v, conn timeout outgrew the packet's age: %v — the test shows nothing", wentBad, grew)
	}
	if want := []string{fmt.Sprint(wentBad, " connection has gone bad")}; !slices.Equal(log.messages(), want) {
		t.Fatalf("log %q, want %q", log.messages(), want)
	}
	// b comes back: the next copy arrives and is acked.
	now := start + time.Minute
	a.ep.Tick(now + 30*time.Second) // every packet's retry is due by then
	pass(a, b, now+30*time.Second+ms(50))
	pass(b, a, now+30*time.Second+ms(100))
	if want := []string{fmt.Sprint(wentBad, " connection has gone bad"), "1m31.1s connection recovered"}; !slices.Equal(log.messages(), want) {
		t.Errorf("log %q, want %q", log.messages(), want)
	}
	if st, _ := a.ep.Stats(peerB); st.Bad || st.InFlight != 0 {
		t.Errorf("after the ack: bad %v, %d in flight", st.Bad, st.InFlight)
	}
	checkDeadline(t, a.ep)
}

// TestAckThatLeavesAnOldPacketKeepsTheLinkBad_T11: an ack is evidence, but
// a link recovers only if nothing older than the connection timeout is
// still unanswered: an ack of a newer packet, while the oldest is still
// lost, leaves it bad.
func TestAckThatLeavesAnOldPacketKeepsTheLinkBad_T11(t *testing.T) {
	log := &logRecorder{}
	a, b := newPair(t, func(_ PeerID, c *Config) {
		c.ConnTimeout = 2 * time.Second
		c.Logger = slog.New(log)
	})
	a.ep.Send(0, peerB, ChannelReliable, []byte("old"))
	drop(a)
	runTicks(t, a, 3*time.Second, func(time.Duration) { drop(a) })
	a.ep.Send(3*time.Second, peerB, ChannelReliable, []byte("new"))
	pass(a, b, 3*time.Second+ms(5)) // held by b behind "old", acked
	pass(b, a, 3*time.Second+ms(10))
	if want := []string{"2s connection has gone bad"}; !slices.Equal(log.messages(), want) {
		t.Errorf("log %q, want %q", log.messages(), want)
	}
	if st, _ := a.ep.Stats(peerB); !st.Bad {
		t.Error("an ack of the new packet made the link good while the old one is still lost")
	}
	checkDeadline(t, a.ep)
}
