package simnet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
)

// lineBytes is a 1400-byte datagram on an IPv4 line: 1428 bytes.
const lineBytes = 1400 + 28

// txOf is how long rate bit/s takes to send n bytes.
func txOf(n int, rate float64) time.Duration {
	return time.Duration(float64(8*n) / rate * float64(time.Second))
}

// An up queue of 10 Mbit/s holding 100 datagrams, offered a burst of 150
// at once: each leaves one transmission time after the one before, the
// last one queued waits for the 99 ahead of it, the 50 that find it full
// are dropped at the tail, and what arrives keeps its order.
func TestUpQueueDrainsAtItsRateAndDropsAtTheTail(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetPath(alice, bob, impair.Profile{Delay: 5 * time.Millisecond})
	const rate = 10e6
	n.SetAccessQueue(alice, Queue{Rate: rate, Limit: 100 * lineBytes}, Queue{})
	var log []arrival
	a := n.Attach(alice, recorder(&log, alice))
	n.Attach(bob, recorder(&log, bob))
	p := make([]byte, 1400)
	for i := range 150 {
		p[0] = byte(i)
		if err := a.Send(bob, p); err != nil {
			t.Fatal(err)
		}
	}
	s.Run(nil)
	if len(log) != 100 {
		t.Fatalf("%d arrived, want the 100 the queue holds", len(log))
	}
	tx := txOf(lineBytes, rate)
	for i, e := range log {
		want := time.Duration(i+1)*tx + 5*time.Millisecond
		if d := e.at - want; d < -time.Microsecond || d > time.Microsecond || e.data[0] != byte(i) {
			t.Fatalf("datagram %d (#%d) arrived at %v, want %v", i, e.data[0], e.at, want)
		}
	}
	if st := n.Stats(); st.QueueDropped != 50 || st.Dropped != 0 {
		t.Fatalf("queue dropped %d, impairment %d; want 50 and 0", st.QueueDropped, st.Dropped)
	}
	// 100 datagrams of 1428 bytes at 10 Mbit/s: 114.24 ms for the last.
	if last := log[99].at - 5*time.Millisecond; last < 114*time.Millisecond || last > 115*time.Millisecond {
		t.Fatalf("the last datagram left after %v, want the queue's 114.24 ms", last)
	}
}

// A down queue takes datagrams in the order they arrive, from whoever
// sent them: a small datagram from carol that arrives behind bob's
// burst waits for all of it, as a game's datagram waits behind a load
// test's on a real line.
func TestDownQueueServesArrivalsInOrder(t *testing.T) {
	s := NewScheduler()
	n := NewNetwork(s, 1)
	n.SetPath(bob, alice, impair.Profile{Delay: 10 * time.Millisecond})
	n.SetPath(carol, alice, impair.Profile{Delay: 2 * time.Millisecond})
	const rate = 1e6
	n.SetAccessQueue(alice, Queue{}, Queue{Rate: rate, Limit: 64_000})
	var log []arrival
	n.Attach(alice, recorder(&log, alice))
	b := n.Attach(bob, func(time.Duration, netip.AddrPort, []byte) {})
	c := n.Attach(carol, func(time.Duration, netip.AddrPort, []byte) {})
	p := make([]byte, 1000)
	for range 10 {
		_ = b.Send(alice, p)
	}
	// carol sends at 9 ms: hers arrives at 11 ms, after bob's ten (10 ms).
	s.At(9*time.Millisecond, func() { _ = c.Send(alice, []byte("game")) })
	s.Run(nil)
	if len(log) != 11 || log[10].from != carol {
		t.Fatalf("arrivals %d, last from %v: want bob's ten, then carol's", len(log), log[len(log)-1].from)
	}
	burst := 10 * txOf(1000+28, rate)
	want := 10*time.Millisecond + burst + txOf(4+48, rate)
	if d := log[10].at - want; d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("carol's datagram arrived at %v, want %v: behind bob's %v of queue", log[10].at, want, burst)
	}
}

// A router's answer from past the first router crosses the line both
// ways, so a loaded up queue delays it; the first router, on this side of
// the line, answers as if nothing were queued.
func TestQueueSitsPastTheFirstRouter(t *testing.T) {
	hops := []Hop{
		{Addr: netip.MustParseAddr("192.168.1.1"), RTT: time.Millisecond},
		{Addr: netip.MustParseAddr("10.0.0.1"), RTT: 20 * time.Millisecond},
	}
	n, a, b, _ := hopWorld(t, hops)
	const rate = 8e6 // a byte a microsecond
	n.SetAccessQueue(a.addr, Queue{Rate: rate, Limit: 200_000}, Queue{Rate: rate, Limit: 200_000})
	load := make([]byte, 1000)
	for range 100 { // 102.8 ms of queue
		_ = a.Send(b.addr, load)
	}
	_ = a.SendHopLimit(b.addr, []byte{1, 1}, 1)
	_ = a.SendHopLimit(b.addr, []byte{2, 1}, 2)
	n.sched.RunUntil(time.Second)
	got := a.TakeICMP(nil)
	if len(got) != 2 {
		t.Fatalf("answers %+v, want hops 1 and 2", got)
	}
	if got[0].Quote[0] != 1 || got[0].At != time.Millisecond {
		t.Errorf("hop 1 answered at %v, want 1 ms: it is before the line", got[0].At)
	}
	queued := 100 * txOf(1028, rate)
	want := 20*time.Millisecond + queued + txOf(2+28, rate) + txOf(2+28, rate)
	if g := got[1]; g.Quote[0] != 2 || g.At < want-time.Microsecond || g.At > want+time.Microsecond {
		t.Errorf("hop 2 answered at %v, want %v: behind the %v queued, both ways", g.At, want, queued)
	}
}

// Queues are an addition: a network whose access links set none, or set
// them to nothing, delivers exactly what it delivered without them.
func TestNoQueueChangesNothing(t *testing.T) {
	run := func(queues bool) []arrival {
		s := NewScheduler()
		n := NewNetwork(s, 3)
		n.SetDefault(impair.Profile{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.1})
		n.SetAccess(alice, impair.Profile{Delay: time.Millisecond, Jitter: time.Millisecond}, impair.Profile{Loss: 0.05})
		if queues {
			n.SetAccessQueue(alice, Queue{}, Queue{})
			n.SetAccessQueue(bob, Queue{}, Queue{})
		}
		var log []arrival
		a := n.Attach(alice, recorder(&log, alice))
		b := n.Attach(bob, recorder(&log, bob))
		for i := range 500 {
			_ = a.Send(bob, []byte{byte(i)})
			_ = b.Send(alice, []byte{byte(i)})
		}
		s.Run(nil)
		return log
	}
	plain, zero := run(false), run(true)
	if len(plain) != len(zero) {
		t.Fatalf("%d arrivals with zero queues, %d without", len(zero), len(plain))
	}
	for i := range plain {
		if plain[i] != zero[i] {
			t.Fatalf("arrival %d: %+v with zero queues, %+v without", i, zero[i], plain[i])
		}
	}
}

func TestSetAccessQueuePanicsOnNonsense(t *testing.T) {
	for _, q := range []Queue{{Rate: -1, Limit: 1}, {Rate: 1e6}, {Rate: 1e6, Limit: -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("queue %+v accepted", q)
				}
			}()
			NewNetwork(NewScheduler(), 1).SetAccessQueue(alice, q, Queue{})
		}()
	}
}
