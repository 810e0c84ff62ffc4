package snapshot

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// Every decoder of outside bytes has a fuzz test: Decode returns an error
// or a state, never panics, and what it accepts is exactly what the
// encoder writes — re-encoding the decoded snapshot against the same base
// gives back the same payload. Seeds: f.Add below and testdata/fuzz/.

// fuzzTelemetry is a player with a few links, the n-th step of a session.
func fuzzTelemetry(n int) Telemetry {
	var t Telemetry
	links := make([]Link, 3)
	for i := range links {
		st := netcore.LinkStats{Peer: netcore.PeerID(i + 1), State: netcore.Measured, Estimate: netcore.Measured,
			SRTT: time.Duration(40000+100*n+i) * time.Microsecond, RTTVAR: 5 * time.Millisecond,
			RTO: 300 * time.Millisecond, ConnTimeout: 2 * time.Second,
			Loss:     netcore.Loss{Sent: uint64(10 * n), Expected: uint64(25 * n), Missing: uint64(n / 3)},
			PeerLoss: netcore.PeerLoss{Expected: uint64(20 * n), Known: n > 1}}
		links[i] = LinkFrom(st, Waits{Caused: time.Duration(n) * time.Millisecond, Frames: int(n % 7), Unacked: time.Duration(n%70000) * time.Millisecond})
	}
	t.SetLinks(links)
	t.Frame = uint32(100 + 3*n)
	proc := time.Duration(2000+n) * time.Microsecond
	t.SetWaits(time.Duration(n)*time.Second, nil, &proc)
	return t
}

// primed returns a receiver holding snapshots 1..3 of a stream and the
// updates 4.. the sender would send next against 3, 2 and the baseline.
func primedTelemetry(tb testing.TB) (*Receiver[Telemetry], [][]byte) {
	s, r := NewTelemetrySender(), NewTelemetryReceiver()
	for n := 1; n <= 3; n++ {
		st := fuzzTelemetry(n)
		if _, _, err := r.Decode(s.encode(nil, 0, &st)); err != nil {
			tb.Fatal(err)
		}
		s.Acked(0, r.Ack())
	}
	var seeds [][]byte
	st := fuzzTelemetry(4)
	seeds = append(seeds, s.encode(nil, 0, &st)) // seq 4 against 3
	s2 := NewTelemetrySender()
	seeds = append(seeds, s2.encode(nil, 0, &st)) // seq 1 full
	return r, seeds
}

func cloneReceiver[S any](r *Receiver[S]) *Receiver[S] {
	c := *r
	c.vals = slices.Clone(r.vals)
	c.scratch = make([]uint32, len(r.scratch))
	c.base = make([]uint32, len(r.base))
	return &c
}

// checkCanonical re-encodes what r accepted from b and compares.
func checkCanonical[S any](t *testing.T, prev, r *Receiver[S], b []byte) {
	seq := binary.LittleEndian.Uint32(b)
	back := uint32(b[4])
	base := prev.zero
	if back != 0 {
		base = prev.get(prev.find(seq-back), prev.base)
	}
	out := make([]uint32, prev.table.numFields())
	rd := bitReader{b: b[HeaderLen:]}
	if err := prev.table.decode(&rd, base, out); err != nil {
		t.Fatalf("Receiver accepted %x but the table decode fails: %v", b, err)
	}
	for i, v := range out {
		if f := prev.table.Field(i); v > f.Max {
			t.Fatalf("field %s decoded %d above its max %d", f.Name, v, f.Max)
		}
	}
	w := bitWriter{buf: slices.Clone(b[:HeaderLen])}
	prev.table.encode(&w, base, out)
	if got := w.flush(); !bytes.Equal(got, b) {
		t.Fatalf("%x decodes to a snapshot that encodes to %x", b, got)
	}
	// A fresh update is now the receiver's state and its ack.
	if r.Ack() > prev.Ack() {
		cur := make([]uint32, len(out))
		r.table.load(&r.state, cur)
		if r.Ack() != seq || !slices.Equal(cur, out) {
			t.Fatalf("fresh update %d: receiver state is not the decoded snapshot", seq)
		}
	}
}

func FuzzDecodeTelemetry(f *testing.F) {
	primed, seeds := primedTelemetry(f)
	for _, s := range seeds {
		f.Add(s)
		f.Add(s[:len(s)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte{4, 0, 0, 0, 31, 0xFF})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := cloneReceiver(primed)
		st, fresh, err := r.Decode(b)
		if err != nil {
			if r.Ack() != primed.Ack() || !slices.Equal(r.vals, primed.vals) {
				t.Fatalf("failed decode (%v) changed the receiver", err)
			}
			return
		}
		if st == nil || (fresh != (r.Ack() > primed.Ack())) {
			t.Fatalf("Decode returned state %v fresh %v with ack %d→%d", st != nil, fresh, primed.Ack(), r.Ack())
		}
		checkCanonical(t, primed, r, b)
	})
}

func FuzzDecodeSeedExample(f *testing.F) {
	tb := seedTable(f)
	s, primed := newSender(tb), newReceiver(tb)
	st := seedState{X: valA, Y: valB, Z: valC, Health: valD}
	m := s.encode(nil, 0, &st)
	if _, _, err := primed.Decode(m); err != nil {
		f.Fatal(err)
	}
	s.Acked(0, 1)
	f.Add(m)
	st.Y = valE
	f.Add(s.encode(nil, 0, &st))
	st.Health = valH
	f.Add(s.encode(nil, 0, &st))
	f.Add([]byte{2, 0, 0, 0, 1, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := cloneReceiver(primed)
		if _, _, err := r.Decode(b); err != nil {
			return
		}
		checkCanonical(t, primed, r, b)
	})
}
