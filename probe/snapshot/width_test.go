package snapshot

import (
	"reflect"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// widthTelemetry is a state with n links whose values move with step.
func widthTelemetry(n, step int) Telemetry {
	var t Telemetry
	links := make([]Link, n)
	for i := range links {
		st := netcore.LinkStats{Peer: netcore.PeerID(i + 1), State: netcore.Measured, Estimate: netcore.Measured,
			SRTT: time.Duration(1000+10*step+i) * time.Microsecond, RTO: 300 * time.Millisecond, ConnTimeout: 2 * time.Second,
			Loss: netcore.Loss{Sent: uint64(step), Expected: uint64(2 * step)}}
		links[i] = LinkFrom(st, Waits{})
	}
	t.SetLinks(links)
	t.Frame = uint32(step)
	return t
}

// The rings hold a state only as wide as its links need, and the sender
// holds each state once whatever its receivers: a stream of 3 links keeps
// a fraction of the table's width, and when the links grow to MaxLinks
// mid-stream every delta still applies against the narrower snapshots
// held before, on both sides, and the state arrives whole; the ring never
// narrows back, so old bases stay readable.
func TestRingsSizedByNeed_Q2(t *testing.T) {
	s, r := NewTelemetrySender(), NewTelemetryReceiver()
	n := telemetryTable.numFields()
	step := 0
	send := func(links int) {
		step++
		st := widthTelemetry(links, step)
		got, fresh, err := r.Decode(s.encode(nil, 0, &st))
		if err != nil || !fresh {
			t.Fatalf("step %d (%d links): fresh %v, err %v", step, links, fresh, err)
		}
		if !reflect.DeepEqual(*got, st) {
			t.Fatalf("step %d (%d links): the state did not arrive whole", step, links)
		}
		s.Acked(0, r.Ack())
	}
	for range 5 {
		send(3)
	}
	if w := s.hist.width; w >= n/8 {
		t.Fatalf("sender holds %d of %d fields for 3 links", w, n)
	}
	if w := r.width; w >= n/8 {
		t.Fatalf("receiver holds %d of %d fields for 3 links", w, n)
	}
	for range 3 {
		send(MaxLinks)
	}
	if s.hist.width < n*9/10 || r.width < n*9/10 {
		t.Fatalf("widths %d and %d of %d fields for %d links", s.hist.width, r.width, n, MaxLinks)
	}
	for range 3 {
		send(2)
	}
	// A second receiver sent the same states shares them: no new version.
	st := widthTelemetry(2, step)
	v := s.ver
	s.encode(nil, 1, &st)
	if s.ver != v {
		t.Fatalf("the same state for another receiver made version %d after %d", s.ver, v)
	}
}
