package netcore

import (
	"errors"
	"net"
	"testing"
	"time"
)

// ReadUntil: the owner reads its socket itself. A datagram
// comes with its source and its own arrival time; with nothing waiting the
// call returns empty once until passes; Wake from another goroutine makes
// a waiting call return at once; Close ends it with net.ErrClosed.
func TestReadUntilTakesDatagramsAndWakes(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	before := time.Now()
	if err := b.Send(a.LocalAddr(), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var ds []*Datagram
	for end := time.Now().Add(udpBound); len(ds) == 0 && time.Now().Before(end); {
		var err error
		if ds, err = a.ReadUntil(end, ds[:0]); err != nil {
			t.Fatal(err)
		}
	}
	if len(ds) != 1 || string(ds[0].Bytes()) != "hello" || ds[0].From != b.LocalAddr() {
		t.Fatalf("ReadUntil gave %d datagrams %v", len(ds), ds)
	}
	if at := ds[0].At; at.Before(before.Add(-maxKernelWait)) || at.After(time.Now()) {
		t.Errorf("arrival %v outside the send (%v) and now", at, before)
	}
	ds[0].Release()

	// Nothing waiting: empty, once until has passed.
	until := time.Now().Add(20 * time.Millisecond)
	ds, err := a.ReadUntil(until, ds[:0])
	if err != nil || len(ds) != 0 {
		t.Fatalf("idle ReadUntil: %d datagrams, %v", len(ds), err)
	}
	if time.Now().Before(until) {
		t.Errorf("idle ReadUntil returned before its time")
	}

	// A Wake before the call: it returns at once, and only once.
	a.Wake()
	if ds, err = a.ReadUntil(time.Now().Add(udpBound), ds[:0]); err != nil || len(ds) != 0 {
		t.Fatalf("ReadUntil after Wake: %d, %v", len(ds), err)
	}
	// A Wake during the call, from another goroutine.
	ret := make(chan error, 1)
	go func() {
		ds, err := a.ReadUntil(time.Now().Add(udpBound), nil)
		if err == nil && len(ds) != 0 {
			err = errors.New("a datagram nobody sent")
		}
		ret <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it wait (a woken call that never waited passes too)
	a.Wake()
	select {
	case err := <-ret:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(udpBound):
		t.Fatal("Wake did not end a waiting ReadUntil")
	}
	// The deadline is set again after a Wake: a datagram still arrives.
	b.Send(a.LocalAddr(), []byte("again"))
	for end := time.Now().Add(udpBound); len(ds) == 0 && time.Now().Before(end); {
		if ds, err = a.ReadUntil(end, ds[:0]); err != nil {
			t.Fatal(err)
		}
	}
	if len(ds) != 1 || string(ds[0].Bytes()) != "again" {
		t.Fatalf("after Wake: %d datagrams", len(ds))
	}
	ds[0].Release()

	// Read by its owner, the socket has no reader goroutine.
	if _, err := a.ReadUntil(time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	b.Send(a.LocalAddr(), []byte("x"))
	select {
	case d := <-a.Inbox():
		t.Fatalf("Inbox delivered %q from a socket read by ReadUntil", d.Bytes())
	case <-time.After(20 * time.Millisecond):
	}
	a.Close()
	if _, err := a.ReadUntil(time.Now().Add(udpBound), nil); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadUntil after Close: %v", err)
	}
}

// A later until keeps the deadline an earlier call set: the call returns
// empty when that one passes, and the next call waits for its own.
func TestReadUntilKeepsAnEarlierDeadline(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	// The first call sets a near deadline and takes the datagram already
	// waiting. A process stalled past that deadline reads nothing (the
	// deadline is checked before the read), so it tries again, bounded.
	var first time.Time
	var ds []*Datagram
	for try := 0; len(ds) == 0; try++ {
		if try == 5 {
			t.Fatal("the first ReadUntil never took the waiting datagram before its deadline")
		}
		first = time.Now().Add(100 * time.Millisecond)
		if err := b.Send(a.LocalAddr(), []byte("early")); err != nil {
			t.Fatal(err)
		}
		var err error
		if ds, err = a.ReadUntil(first, ds[:0]); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range ds {
		d.Release()
	}
	// Nothing waits now. A later until (far later: a stalled machine
	// does not reach it) returns empty once the first deadline passed.
	later := time.Now().Add(30 * time.Second)
	ds, err := a.ReadUntil(later, ds[:0])
	if err != nil || len(ds) != 0 {
		t.Fatalf("ReadUntil after the earlier deadline: %d, %v", len(ds), err)
	}
	if now := time.Now(); now.Before(first) || !now.Before(later) {
		t.Fatalf("returned at %v: want once the earlier deadline (%v) passed, before its own (%v)", now, first, later)
	}
	// Its own deadline now: a datagram sent in a while is waited for.
	go func() {
		time.Sleep(20 * time.Millisecond)
		b.Send(a.LocalAddr(), []byte("late"))
	}()
	for end := time.Now().Add(udpBound); len(ds) == 0; {
		if ds, err = a.ReadUntil(end, ds[:0]); err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 && time.Now().After(end) {
			t.Fatal("the late datagram never came")
		}
	}
	if len(ds) != 1 || string(ds[0].Bytes()) != "late" {
		t.Fatalf("got %d datagrams, the first %q", len(ds), ds[0].Bytes())
	}
	ds[0].Release()
}

func TestReadUntilRefusesASocketWithAReader(t *testing.T) {
	a := listenLoopback(t)
	a.Inbox()
	if _, err := a.ReadUntil(time.Now(), nil); !errors.Is(err, errReaderRunning) {
		t.Fatalf("ReadUntil after Inbox: %v, want ErrReaderRunning", err)
	}
}

// BenchmarkUDPReadUntil is BenchmarkUDPSendReceive read by the owner
// itself: no reader goroutine, no inbox. Nothing allocates per datagram.
func BenchmarkUDPReadUntil(b *testing.B) {
	src, dst := listenLoopback(b), listenLoopback(b)
	p := make([]byte, 64)
	to := dst.LocalAddr()
	ds := make([]*Datagram, 0, MaxReadBatch)
	until := time.Now().Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if err := src.Send(to, p); err != nil {
			b.Fatal(err)
		}
		for len(ds) == 0 {
			var err error
			if ds, err = dst.ReadUntil(until, ds); err != nil {
				b.Fatal(err)
			}
		}
		for _, d := range ds {
			d.Release()
		}
		ds = ds[:0]
	}
}

// A Wake on a socket read through Inbox changes nothing: the reader keeps
// delivering.
func TestWakeLeavesTheReaderAlone(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	a.Wake() // before the reader starts: its deadline in the past is on the socket
	a.Inbox()
	a.Wake()
	b.Send(a.LocalAddr(), []byte("still"))
	if _, got := receive(t, a, 1); string(got[0]) != "still" {
		t.Fatalf("got %q", got[0])
	}
}

// TestReadDelayCountsTheWaitInTheSocket: every kernel-stamped datagram's
// wait in the socket, from the stamp to the read, is counted, and a
// datagram left unread for a while reads as having waited at least that
// long (UDPStats.ReadDelay).
func TestReadDelayCountsTheWaitInTheSocket(t *testing.T) {
	a, b := listenLoopback(t), listenLoopback(t)
	const n, held = 5, 30 * time.Millisecond
	for range n {
		if err := b.Send(a.LocalAddr(), []byte("late")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(held) // the datagrams wait in a's socket at least this long
	var got int
	for end := time.Now().Add(udpBound); got < n && time.Now().Before(end); {
		ds, err := a.ReadUntil(end, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			d.Release()
		}
		got += len(ds)
	}
	if got != n {
		t.Fatalf("read %d datagrams, want %d", got, n)
	}
	st := a.Stats()
	if st.KernelStamped == 0 {
		t.Skip("this kernel stamps no arrivals: no read delay to count")
	}
	if c := st.ReadDelay.Count(); c != st.KernelStamped {
		t.Fatalf("%d read delays counted for %d kernel-stamped datagrams", c, st.KernelStamped)
	}
	// Half a bucket under the true value at most (about 6 %).
	if p50, _ := st.ReadDelay.Quantile(0.5); p50 < held*94/100 {
		t.Errorf("datagrams held %v in the socket read as waiting %v at the median", held, p50)
	}
}
