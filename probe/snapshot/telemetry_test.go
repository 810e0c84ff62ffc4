package snapshot

import (
	"fmt"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// The telemetry table as docs/snapshots.md lists it: the player's fields,
// then each link slot. A change here is a wire change; update the doc.
func TestTelemetryTableMatchesDoc_L3_Q3(t *testing.T) {
	tb := telemetryTable
	type row struct {
		name       string
		bits, near uint8
		max        uint32
	}
	want := []row{
		{"frame", 32, 8, 1<<32 - 1},
		{"waited_ms", 32, 12, 1<<32 - 1},
		{"wait_known", 1, 0, 1},
		{"wait_us", 27, 12, 1<<27 - 1},
		{"process_known", 1, 0, 1},
		{"process_us", 24, 12, 1<<24 - 1},
		{"count", 7, 0, 64},
	}
	for i := range MaxLinks {
		p := fmt.Sprintf("links[%d].", i)
		want = append(want,
			row{p + "expected", 32, 8, 1<<32 - 1},
			row{p + "state", 2, 0, 3},
			row{p + "estimate", 2, 0, 3},
			row{p + "srtt_us", 27, 13, 1<<27 - 1},
			row{p + "rttvar_us", 27, 13, 1<<27 - 1},
			row{p + "rto_us", 25, 15, 1<<25 - 1},
			row{p + "conn_timeout_us", 25, 15, 1<<25 - 1},
			row{p + "sent", 32, 8, 1<<32 - 1},
			row{p + "retransmitted", 32, 8, 1<<32 - 1},
			row{p + "peer_known", 1, 0, 1},
			row{p + "peer_expected", 32, 8, 1<<32 - 1},
			row{p + "peer_missing", 32, 8, 1<<32 - 1},
			row{p + "peer", 16, 0, 1<<16 - 1},
			row{p + "loss_known", 1, 0, 1},
			row{p + "missing", 32, 8, 1<<32 - 1},
			row{p + "caused_ms", 32, 12, 1<<32 - 1},
			row{p + "waited_frames", 32, 8, 1<<32 - 1},
			row{p + "unacked_ms", 16, 0, 1<<16 - 1},
		)
	}
	if tb.numFields() != len(want) {
		t.Fatalf("table has %d fields, want %d", tb.numFields(), len(want))
	}
	for i, w := range want {
		f := tb.Field(i)
		if f.Name != w.name || f.Bits != w.bits || f.Near != w.near || f.Max != w.max {
			t.Errorf("field %d: %s %d bits near %d max %d; want %+v", i, f.Name, f.Bits, f.Near, f.Max, w)
		}
	}
	// Groups: the player's report group, a block per 8 slots, and per slot
	// its own group with four inside (timing, sent, peer report, seldom).
	groups := 0
	for _, o := range tb.ops {
		if o.group {
			groups++
		}
	}
	if want := 1 + MaxLinks/linkBlock + 6*MaxLinks; groups != want {
		t.Errorf("%d groups, want %d", groups, want)
	}
	// Worst case, every group and field changed and in full: the player's
	// fields 136 bits, each block 1, each slot 434 (docs/snapshots.md).
	// The caller fragments it (Q5).
	if got, want := tb.maxLen(), (136+MaxLinks/linkBlock+MaxLinks*434+7)/8; got != want {
		t.Errorf("MaxLen %d bytes, want %d", got, want)
	}
}

func stats(peer netcore.PeerID, est netcore.LinkState) netcore.LinkStats {
	return netcore.LinkStats{Peer: peer, State: est, Estimate: est,
		SRTT: 41500 * time.Microsecond, RTTVAR: 9 * time.Millisecond, RTO: 300 * time.Millisecond, ConnTimeout: 2 * time.Second,
		Loss: netcore.Loss{Sent: 100, Retransmitted: 3, Expected: 250, Missing: 2}}
}

// Unknown is not zero (L3): a link without an estimate has no round trip,
// a peer that never reported has no peer totals, a player that never
// reported has no wait — and all three survive the trip.
func TestTelemetryUnknownIsNotZero_L3(t *testing.T) {
	var tel Telemetry
	unmeasured := stats(3, netcore.Unmeasured)
	measured := stats(5, netcore.Measured)
	measured.State = netcore.Bad
	measured.PeerLoss = netcore.PeerLoss{Expected: 240, Missing: 1, Known: true}
	tel.SetLinks([]Link{LinkFrom(unmeasured, Waits{}), LinkFrom(measured, Waits{Caused: 1500 * time.Millisecond, Frames: 12, Unacked: 800 * time.Millisecond})})
	tel.Frame = 1234
	proc := 4 * time.Millisecond
	tel.SetWaits(2*time.Second, nil, &proc)

	got, fresh, err := NewTelemetryReceiver().Decode(NewTelemetrySender().encode(nil, 0, &tel))
	if err != nil || !fresh || *got != tel {
		t.Fatalf("round trip: fresh %v err %v, differs: %v", fresh, err, *got != tel)
	}
	rows := got.Rows(nil)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	u, m := rows[0], rows[1]
	if u.RTTKnown() || u.SRTT != 0 || u.PeerLoss.Known || !u.LossKnown || u.RTO != 300*time.Millisecond {
		t.Errorf("unmeasured link row %+v: want no round trip, no peer totals, loss and RTO known", u)
	}
	if !m.RTTKnown() || m.SRTT != 41500*time.Microsecond || m.RTTVAR != 9*time.Millisecond || m.State != netcore.Bad ||
		m.Estimate != netcore.Measured || m.PeerLoss != measured.PeerLoss || m.Loss != measured.Loss || m.Caused != 1500*time.Millisecond {
		t.Errorf("measured link row %+v", m)
	}
	if ls := m.LinkStats(); !ls.Bad || ls.SRTT != m.SRTT || ls.PeerLoss != m.PeerLoss || ls.Peer != 5 {
		t.Errorf("LinkStats %+v", ls)
	}
	if _, ok := got.Wait(); ok {
		t.Error("wait known before any report")
	}
	if p, ok := got.Process(); !ok || p != proc {
		t.Errorf("process %v %v, want %v", p, ok, proc)
	}
	if got.Waited() != 2*time.Second || got.Frame != 1234 {
		t.Errorf("waited %v frame %d", got.Waited(), got.Frame)
	}
}

// LinkFrom saturates at the field widths instead of wrapping.
func TestLinkFromSaturates_L5(t *testing.T) {
	st := stats(1, netcore.Measured)
	st.SRTT = 10 * time.Minute
	st.ConnTimeout = time.Hour
	st.Loss.Expected = 1 << 40
	st.RTO = -time.Second
	l := LinkFrom(st, Waits{Caused: -time.Second, Frames: -3, Unacked: -time.Second})
	if l.SRTTUs != maxRTT || l.ConnTimeoutUs != maxTimeout || l.Expected != 1<<32-1 || l.RTOUs != 0 || l.CausedMs != 0 {
		t.Errorf("saturated link %+v", l)
	}
}

// SetLinks clears slots a shorter table no longer uses, so a departed
// link neither shows up nor costs more than its slot's bit.
func TestSetLinksClearsUnusedSlots_Q3(t *testing.T) {
	var tel Telemetry
	tel.SetLinks([]Link{LinkFrom(stats(1, netcore.Measured), Waits{}), LinkFrom(stats(2, netcore.Measured), Waits{})})
	tel.SetLinks([]Link{LinkFrom(stats(2, netcore.Measured), Waits{})})
	if tel.Count != 1 || tel.Links[1] != (Link{}) {
		t.Errorf("count %d, slot 1 %+v", tel.Count, tel.Links[1])
	}
	many := make([]Link, MaxLinks+5)
	tel.SetLinks(many)
	if tel.Count != MaxLinks {
		t.Errorf("count %d, want %d", tel.Count, MaxLinks)
	}
	var empty Telemetry
	s := NewTelemetrySender()
	// Empty telemetry: frame, report group and count unchanged, and one
	// bit per block of slots.
	if m := s.encode(nil, 0, &empty); len(m) != HeaderLen+(3+MaxLinks/linkBlock+7)/8 {
		t.Errorf("empty telemetry is %d bytes", len(m))
	}
}
