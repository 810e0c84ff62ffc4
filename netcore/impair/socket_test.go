package impair

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// sink records what a Socket hands the real socket, and can refuse.
type sink struct {
	got    []string
	refuse bool
}

func (k *sink) Send(to netip.AddrPort, p []byte) error {
	if k.refuse {
		return errors.New("closed")
	}
	k.got = append(k.got, to.String()+" "+string(p))
	return nil
}

// TestSocketFollowsScript_T1 drives a Socket on virtual time: each path
// takes its profile from the script, re-reads it after a change (and only
// then), copies what it is given, and sends each datagram when it is due.
func TestSocketFollowsScript_T1(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1")
	b := netip.MustParseAddrPort("127.0.0.1:2")
	var reads []string
	script := Script{
		Changes: []time.Duration{100 * time.Millisecond},
		Path: func(to netip.AddrPort, now time.Duration) Profile {
			reads = append(reads, to.String()+"@"+now.String())
			d := 10 * time.Millisecond
			if to == b {
				d = 20 * time.Millisecond
			}
			if now >= 100*time.Millisecond {
				d += 50 * time.Millisecond
			}
			return Profile{Delay: d}
		},
		Seed:       func(netip.AddrPort) uint64 { return 1 },
		BufferSize: 16,
	}
	out := &sink{}
	s := NewSocket(out, script)
	p := []byte("x1")
	s.sendAt(0, a, p)
	p[1] = '9' // the caller reuses its buffer
	s.sendAt(1*time.Millisecond, b, []byte("y1"))
	s.sendAt(2*time.Millisecond, a, []byte("x2"))
	s.sendAt(100*time.Millisecond, a, []byte("x3"))
	if next, ok := s.NextDue(); !ok || next != 10*time.Millisecond {
		t.Fatalf("NextDue = %v, %v; want 10ms", next, ok)
	}
	if want := []string{"127.0.0.1:1@0s", "127.0.0.1:2@1ms", "127.0.0.1:1@100ms"}; !slices.Equal(reads, want) {
		t.Fatalf("profile reads %v, want %v", reads, want)
	}
	s.Flush(9*time.Millisecond + 900*time.Microsecond) // within flushSlack of 10 ms
	if want := []string{"127.0.0.1:1 x1"}; !slices.Equal(out.got, want) {
		t.Fatalf("at 9.9ms sent %v, want %v", out.got, want)
	}
	s.Flush(21 * time.Millisecond)
	s.Flush(159 * time.Millisecond)
	if s.held() != 1 {
		t.Fatalf("held %d before the changed path's delay, want 1", s.held())
	}
	s.Flush(160 * time.Millisecond)
	want := []string{"127.0.0.1:1 x1", "127.0.0.1:1 x2", "127.0.0.1:2 y1", "127.0.0.1:1 x3"}
	if !slices.Equal(out.got, want) {
		t.Fatalf("sent %v, want %v", out.got, want)
	}
	if _, ok := s.NextDue(); ok {
		t.Fatal("datagrams left after the last flush")
	}
}

// TestSocketCountsRefusalsAndDrops: a refused send is counted, not
// retried, and Drop forgets what is held.
func TestSocketCountsRefusalsAndDrops(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1")
	out := &sink{refuse: true}
	s := NewSocket(out, Script{
		Path: func(netip.AddrPort, time.Duration) Profile { return Profile{Delay: time.Millisecond} },
		Seed: func(netip.AddrPort) uint64 { return 1 },
	})
	s.sendAt(0, a, []byte("x"))
	s.Flush(time.Second)
	if s.sendErrors != 1 || s.held() != 0 {
		t.Fatalf("send errors %d, held %d; want 1, 0", s.sendErrors, s.held())
	}
	s.sendAt(time.Second, a, []byte("y"))
	s.Drop()
	if s.held() != 0 {
		t.Fatalf("held %d after Drop", s.held())
	}
	if _, ok := s.NextDue(); ok {
		t.Fatal("NextDue after Drop")
	}
}

// BenchmarkSocketSendFlush is the demo's per-datagram cost: once the pool
// has buffers, holding and sending a datagram allocates nothing.
func BenchmarkSocketSendFlush(b *testing.B) {
	a := netip.MustParseAddrPort("127.0.0.1:1")
	s := NewSocket(discard{}, Script{
		Path: func(netip.AddrPort, time.Duration) Profile {
			return Profile{Delay: time.Millisecond, Jitter: time.Millisecond}
		},
		Seed:       func(netip.AddrPort) uint64 { return 1 },
		BufferSize: 64,
	})
	p := make([]byte, 60)
	b.ReportAllocs()
	for i := range b.N {
		now := time.Duration(i) * time.Millisecond
		s.sendAt(now, a, p)
		s.Flush(now)
	}
}

type discard struct{}

func (discard) Send(netip.AddrPort, []byte) error { return nil }

// batchSink is a sink that takes batches, recording each batch's size; it
// refuses the datagrams whose payload is "bad".
type batchSink struct {
	sink
	batches []int
}

func (k *batchSink) SendBatch(to []netip.AddrPort, ps [][]byte) (failed int) {
	k.batches = append(k.batches, len(ps))
	for i, p := range ps {
		if string(p) == "bad" {
			failed++
			continue
		}
		k.got = append(k.got, to[i].String()+" "+string(p))
	}
	return failed
}

// TestSocketFlushesDueDatagramsAsOneBatch: what comes due
// together leaves in one SendBatch, in due order; refusals are counted;
// what is not due yet stays held.
func TestSocketFlushesDueDatagramsAsOneBatch(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1")
	b := netip.MustParseAddrPort("127.0.0.1:2")
	out := &batchSink{}
	s := NewSocket(out, Script{
		Path: func(to netip.AddrPort, _ time.Duration) Profile {
			if to == b {
				return Profile{Delay: 2 * time.Millisecond}
			}
			return Profile{Delay: time.Millisecond}
		},
		Seed: func(netip.AddrPort) uint64 { return 1 },
	})
	s.sendAt(0, a, []byte("1"))
	s.sendAt(0, b, []byte("3"))
	s.sendAt(0, a, []byte("bad"))
	s.sendAt(time.Millisecond/2, a, []byte("2"))
	s.sendAt(10*time.Millisecond, a, []byte("later"))
	s.Flush(3 * time.Millisecond)
	want := []string{"127.0.0.1:1 1", "127.0.0.1:1 2", "127.0.0.1:2 3"}
	if !slices.Equal(out.got, want) || !slices.Equal(out.batches, []int{4}) {
		t.Fatalf("sent %q in batches %v; want %q in one batch of 4", out.got, out.batches, want)
	}
	if s.sendErrors != 1 || s.held() != 1 {
		t.Fatalf("send errors %d held %d; want 1, 1", s.sendErrors, s.held())
	}
	s.Flush(3 * time.Millisecond) // nothing due: no empty batch
	if len(out.batches) != 1 {
		t.Fatalf("an empty flush sent a batch: %v", out.batches)
	}
}

// TestSocketHoldsDatagramsInBuffersOfTheirSize: a datagram is
// held in the smallest buffer class that fits it (powers of two from
// minClass, then BufferSize); each comes out whole and its buffer is
// reused.
func TestSocketHoldsDatagramsInBuffersOfTheirSize(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1")
	out := &sink{}
	s := NewSocket(out, Script{
		Path:       func(netip.AddrPort, time.Duration) Profile { return Profile{Delay: time.Millisecond} },
		Seed:       func(netip.AddrPort) uint64 { return 1 },
		BufferSize: 1400,
	})
	sizes := []struct{ n, held int }{{1, 64}, {64, 64}, {65, 128}, {256, 256}, {420, 512}, {1024, 1024}, {1025, 1400}, {1400, 1400}}
	var want []string
	for round := range 3 {
		now := time.Duration(round) * time.Second
		for _, sz := range sizes {
			d := make([]byte, sz.n)
			d[0] = byte(round)
			s.sendAt(now, a, d)
			want = append(want, "127.0.0.1:1 "+string(d))
		}
		for i := range s.line.heap.Len() {
			it := s.line.heap.At(i).Val
			for _, sz := range sizes {
				if len(*it.buf) == sz.n && cap(*it.buf) != sz.held {
					t.Fatalf("a %d-byte datagram held in a buffer of %d, want %d", sz.n, cap(*it.buf), sz.held)
				}
			}
		}
		s.Flush(now + time.Second/2)
	}
	pooled := 0
	for _, p := range s.pools {
		pooled += len(p)
	}
	if len(out.got) != len(want) || pooled != len(sizes) {
		t.Fatalf("sent %d, %d buffers pooled; want %d sent and the first round's %d buffers reused", len(out.got), pooled, len(want), len(sizes))
	}
	for i, g := range out.got {
		if g != want[i] {
			t.Fatalf("datagram %d came out %d bytes, want %d", i, len(g), len(want[i]))
		}
	}
}
