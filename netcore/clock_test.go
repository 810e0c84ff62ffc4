package netcore

import (
	"testing"
	"time"
)

// clocked is a capture transport with a Clock: the write happens at
// writeAt, later than the now the Endpoint was called with (the work a
// wake-up does before it sends).
type clocked struct {
	capture
	writeAt time.Duration
}

func (c *clocked) Now() time.Duration { return c.writeAt }

// A round trip runs from the write (T2): over a transport with
// a Clock the first send is stamped when the datagram is written, so the
// work between the wake-up and the write does not count as wire.
func TestSampleRunsFromTheWrite_T2(t *testing.T) {
	a, b := newPair(t, nil)
	tr := &clocked{capture: capture{addr: addrA}, writeAt: ms(4)}
	ep, err := NewEndpoint(Config{Self: peerA, Session: token}, tr, a.record)
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.AddLink(0, peerB, addrB, PublicKey{}); err != nil {
		t.Fatal(err)
	}
	a.ep, a.tr = ep, &tr.capture
	a.ep.Send(ms(1), peerB, ChannelReliable, []byte("x")) // woke at 1 ms, wrote at 4
	pass(a, b, ms(10))
	pass(b, a, ms(20))
	st, _ := a.ep.Stats(peerB)
	if st.Estimate != Measured || st.SRTT != ms(16) {
		t.Errorf("SRTT %v (%v), want 16ms: from the write at 4 ms to the ack at 20", st.SRTT, st.Estimate)
	}

	// A clock behind now (none set yet: 0) never moves the send earlier.
	tr.writeAt = 0
	a.ep.Send(ms(30), peerB, ChannelReliable, []byte("y"))
	pass(a, b, ms(35))
	pass(b, a, ms(46))
	st, _ = a.ep.Stats(peerB)
	if want := (7*ms(16) + ms(16)) / 8; st.SRTT != want {
		t.Errorf("SRTT %v, want %v: the second sample is 46−30 = 16 ms", st.SRTT, want)
	}
}
