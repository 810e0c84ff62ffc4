package snapshot_test

import (
	"fmt"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/snapshot"
)

// One player streams its link table to another; the second update is
// lost, and the third carries its change anyway because it is a delta
// from the last acked snapshot (Q4).
func Example() {
	snd := snapshot.NewTelemetrySender()
	rcv := snapshot.NewTelemetryReceiver()
	const bob = 1

	var tel snapshot.Telemetry
	link := netcore.LinkStats{Peer: 2, State: netcore.Measured, Estimate: netcore.Measured,
		SRTT: 40 * time.Millisecond, RTTVAR: 5 * time.Millisecond, RTO: 100 * time.Millisecond, ConnTimeout: 2 * time.Second}
	update := func(srtt time.Duration, expected uint64) []byte {
		link.SRTT, link.Loss.Expected = srtt, expected
		tel.SetLinks([]snapshot.Link{snapshot.LinkFrom(link, snapshot.Waits{})})
		snd.Set(&tel)
		return snd.Next(nil, bob)
	}

	m1 := update(40*time.Millisecond, 100)
	st, _, _ := rcv.Decode(m1)
	snd.Acked(bob, rcv.Ack()) // the ack rides back on a frame packet
	fmt.Println("full update:", len(m1), "bytes")

	m2 := update(42*time.Millisecond, 103) // lost
	m3 := update(42*time.Millisecond, 105)
	st, fresh, err := rcv.Decode(m3)
	fmt.Println("deltas:", len(m2), "and", len(m3), "bytes; applied:", fresh, err)
	for _, r := range st.Rows(nil) {
		fmt.Println("peer", r.Peer, r.State, "srtt", r.SRTT, "known", r.RTTKnown(), "expected", r.Loss.Expected, "peer totals known", r.PeerLoss.Known)
	}
	// Output:
	// full update: 28 bytes
	// deltas: 12 and 12 bytes; applied: true <nil>
	// peer 2 measured srtt 42ms known true expected 105 peer totals known false
}
