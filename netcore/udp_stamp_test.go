package netcore

import (
	"runtime"
	"testing"
	"time"
)

// TestUDPArrivalTimePerDatagram: datagrams that wait in the
// inbox and are drained in one batch each keep their own arrival time —
// distinct, in arrival order, none before its send and none after the
// drain — where one clock reading per wake-up would give them all the same.
func TestUDPArrivalTimePerDatagram(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	const n = 100
	sent := make([]time.Time, n)
	for i := range n {
		sent[i] = time.Now()
		if err := a.Send(b.LocalAddr(), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Only now does the owner look: the whole run waits in the inbox (or
	// the socket buffer behind it), a batch like the live driver's drain.
	deadline := time.After(udpBound)
	at := make([]time.Time, 0, n)
	for len(at) < n {
		select {
		case d := <-b.Inbox():
			if int(d.Bytes()[0]) != len(at) {
				t.Fatalf("datagram %d arrived as number %d", d.Bytes()[0], len(at))
			}
			at = append(at, d.At)
			d.Release()
		case <-deadline:
			t.Fatalf("received %d of %d", len(at), n)
		}
	}
	drained := time.Now()
	for i, x := range at {
		if x.Before(sent[i]) {
			t.Errorf("datagram %d arrived %v before it was sent", i, sent[i].Sub(x))
		}
		if x.After(drained) {
			t.Errorf("datagram %d arrived %v after it was drained", i, x.Sub(drained))
		}
		if i > 0 && !x.After(at[i-1]) {
			t.Errorf("datagram %d arrived at %v, datagram %d at %v: not distinct and in order", i, x, i-1, at[i-1])
		}
	}
	if st := b.Stats(); runtime.GOOS == "linux" && st.KernelStamped != n {
		t.Errorf("%d of %d datagrams carry the kernel's stamp on Linux", st.KernelStamped, n)
	}
}

// TestArrivalOnTheMonotonicClock: a kernel stamp becomes the reading taken
// after the read less the wait, on the monotonic clock; a stamp after the
// reading or implausibly far before it (the wall clock stepped) gives the
// reading itself.
func TestArrivalOnTheMonotonicClock(t *testing.T) {
	start := time.Now()
	read := start.Add(10 * time.Millisecond)
	wall := read.Round(0) // the same instant without its monotonic reading, as a kernel stamp is
	for _, c := range []struct {
		k    time.Time
		want time.Duration
	}{
		{wall.Add(-300 * time.Microsecond), 10*time.Millisecond - 300*time.Microsecond},
		{wall, 10 * time.Millisecond},
		{wall.Add(time.Millisecond), 10 * time.Millisecond},   // after the reading
		{wall.Add(-2 * maxKernelWait), 10 * time.Millisecond}, // stepped
		{wall.Add(-maxKernelWait), 10*time.Millisecond - maxKernelWait},
	} {
		d := &Datagram{At: arrivedAt(read, c.k)}
		if got := d.Arrival(start); got != c.want {
			t.Errorf("stamp %v before the reading: arrival %v, want %v", read.Sub(c.k), got, c.want)
		}
	}
	if got := (&Datagram{}).Arrival(start); got < 0 || got > time.Since(start) {
		t.Errorf("a datagram without a time arrived at %v", got)
	}
}
