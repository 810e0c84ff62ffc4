package netcore

import (
	"encoding/binary"
	"runtime"
	"syscall"
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

// TestKernelStampParsing: the control-message walk finds the stamp among
// others, and refuses lengths that run past the buffer.
func TestKernelStampParsing(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, ok := kernelStamp(make([]byte, 64)); ok {
			t.Error("a stamp found where the platform gives none")
		}
		return
	}
	hdr := syscall.CmsgLen(0)
	msg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, syscall.CmsgSpace(len(data)))
		if ptrSize == 8 {
			binary.NativeEndian.PutUint64(b, uint64(hdr+len(data)))
		} else {
			binary.NativeEndian.PutUint32(b, uint32(hdr+len(data)))
		}
		binary.NativeEndian.PutUint32(b[ptrSize:], uint32(level))
		binary.NativeEndian.PutUint32(b[ptrSize+4:], uint32(typ))
		copy(b[hdr:], data)
		return b
	}
	var ts []byte
	if ptrSize == 8 {
		ts = binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 1700000000), 123456789)
	} else {
		ts = binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(nil, 1700000000), 123456789)
	}
	other := msg(syscall.SOL_IP, 8 /* IP_PKTINFO */, make([]byte, 12))
	oob := append(other, msg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, ts)...)
	k, ok := kernelStamp(oob)
	if !ok || !k.Equal(time.Unix(1700000000, 123456789)) {
		t.Errorf("stamp %v %v, want 1700000000.123456789", k, ok)
	}
	if _, ok := kernelStamp(other); ok {
		t.Error("a stamp found in a message without one")
	}
	bad := msg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, ts)
	binary.NativeEndian.PutUint32(bad, uint32(len(bad)+1)) // low bytes of cmsg_len on either size
	if _, ok := kernelStamp(bad); ok {
		t.Error("a length past the buffer was read")
	}
	for i := range len(oob) {
		kernelStamp(oob[:i]) // every cut: no panic
	}
}
