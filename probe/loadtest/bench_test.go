package loadtest

import (
	"testing"
	"time"
)

// sendOne is the tester's per-datagram work in the upload hold: a Tick
// that finds one datagram due, encodes it and hands it over.
func sendOne() (one func(), x *Test) {
	x = New(Config{ID: 1, Send: func([]byte) {}})
	t := x.t
	t.started, t.ph = true, phaseUpHold
	t.pace.set(0, 50e6)
	t.nextProbe = time.Duration(1 << 62)
	interval := time.Duration(wireBits(maxMessage) / 50e6 * float64(time.Second))
	now := time.Duration(0)
	return func() {
		now += interval
		t.lastHeard, t.lastReport, t.at[phaseUpHold] = now, now, now
		x.Tick(now)
	}, x
}

// receiveOne is the peer's per-datagram work: decode a load datagram and
// count it.
func receiveOne() func() {
	req := appendMessage(nil, message{kind: kindRequest, id: 1, version: protoVersion, rate: 50e6})
	x := New(Config{Request: req})
	x.Tick(0)
	msg := appendMessage(nil, message{kind: kindLoad, id: 1, phase: phaseUpHold, size: maxMessage})
	now := time.Duration(0)
	return func() {
		now += 200 * time.Microsecond
		le.PutUint32(msg[6:], uint32(now/time.Microsecond))
		if !x.Receive(now, msg) {
			panic("the load datagram was not taken")
		}
	}
}

func BenchmarkSendLoad(b *testing.B) {
	one, x := sendOne()
	b.ReportAllocs()
	for b.Loop() {
		one()
	}
	if x.t.seq == 0 {
		b.Fatal("nothing sent")
	}
}

func BenchmarkReceiveLoad(b *testing.B) {
	one := receiveOne()
	b.ReportAllocs()
	for b.Loop() {
		one()
	}
}

func TestHotPathAllocatesNothing(t *testing.T) {
	send, x := sendOne()
	if n := testing.AllocsPerRun(1000, send); n != 0 {
		t.Errorf("sending a load datagram allocates %v times", n)
	}
	if x.t.seq < 1000 {
		t.Errorf("%d datagrams sent in 1000 ticks", x.t.seq)
	}
	if n := testing.AllocsPerRun(1000, receiveOne()); n != 0 {
		t.Errorf("receiving a load datagram allocates %v times", n)
	}
}
