package diagnosis

import (
	"encoding/binary"
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lagscope/lagscope/rungs"
)

// inputFrom turns arbitrary bytes into an Input: any number of players and
// pairs, indices out of range, negative and huge durations, missing more
// than expected. The diagnosis comes from other machines' reports, so it
// must take anything.
func inputFrom(data []byte) Input {
	next := func(k int) uint64 {
		var b [8]byte
		k = min(k, 8)
		n := copy(b[:k], data)
		data = data[n:]
		return binary.LittleEndian.Uint64(b[:])
	}
	in := Input{Speed: int(int8(next(1))), Window: time.Duration(int32(next(4))) * time.Millisecond}
	in.Target = rungs.Timing{SendPeriod: int(int8(next(1))), LookAhead: int(int16(next(2)))}
	n := int(next(1) % 12)
	for i := 0; i < n; i++ {
		f := next(1)
		in.Players = append(in.Players, Player{
			Name:       "p" + strconv.Itoa(i),
			Process:    time.Duration(int64(next(4)) - 1<<31),
			CausedWait: time.Duration(next(8)),
			RecentWait: time.Duration(int32(next(4))) * time.Millisecond,
			Measured:   f&1 == 0,
			Stale:      f&2 != 0,
			Bad:        f&4 != 0,
		})
	}
	links := []vocab.HopLink{linkLAN, linkUplink, linkISP, linkBeyond, linkPeer, "garage"}
	for k := int(next(1) % 6); k > 0; k-- {
		tr := Trace{From: int(int8(next(1))) % 13, To: int(int8(next(1))) % 13}
		if f := next(1); f&1 == 0 {
			tr.Delay = &TraceStart{TTL: int(int8(next(1))), Link: links[next(1)%6], AddedMs: float64(int32(next(4))) / 8}
		}
		for h := int(next(1) % 5); h > 0; h-- {
			var a [4]byte
			binary.LittleEndian.PutUint32(a[:], uint32(next(4)))
			tr.Hops = append(tr.Hops, netip.AddrFrom4(a))
		}
		in.Traces = append(in.Traces, tr)
	}
	// Loads: any player's name or one not in the input, any figure (a
	// float's bits: NaN, infinities, negatives, huge).
	for k := int(next(1) % 4); k > 0; k-- {
		in.Loads = append(in.Loads, Load{Player: "p" + strconv.Itoa(int(next(1)%13)),
			UploadMs: math.Float64frombits(next(8)), DownloadMs: math.Float64frombits(next(8))})
	}
	for len(data) > 0 {
		p := Pair{A: int(int8(next(1))) % 13, B: int(int8(next(1))) % 13}
		p.RTT = time.Duration(int64(next(8)))
		p.RTTVar = time.Duration(int64(next(3)) - 1<<20)
		p.ExpectedAB, p.MissingAB = next(3), next(3)
		p.ExpectedBA, p.MissingBA = next(8), next(8)
		in.Pairs = append(in.Pairs, p)
	}
	return in
}

func FuzzDiagnose(f *testing.F) {
	w := world{names: names(5), share: []float64{20, 25, 30, 35, 150}, noise: 3, seed: 1,
		up: []float64{0, 0, 0.05, 0, 0}, down: []float64{0, 0, 0, 0, 0}}
	in := w.build()
	seed := []byte{30, 0, 0, 0, 0, 3, 9, 0, 5}
	for range in.Players {
		seed = append(seed, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	for _, p := range in.Pairs {
		seed = append(seed, byte(p.A), byte(p.B))
		seed = binary.LittleEndian.AppendUint64(seed, uint64(p.RTT))
		seed = append(seed, 1, 2, 3, 0x10, 0x27, 0, 5, 0, 0)
		seed = binary.LittleEndian.AppendUint64(seed, p.ExpectedBA)
		seed = binary.LittleEndian.AppendUint64(seed, p.MissingBA)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 4})
	// Three players, no traces, two loads: p0 bloated upload (380 ms,
	// download NaN), p1 a negative upload and an infinite download.
	loads := []byte{30, 0, 0, 0, 0, 3, 9, 0, 3}
	for range 3 {
		loads = append(loads, make([]byte, 17)...)
	}
	loads = append(loads, 0, 2, 0)
	loads = binary.LittleEndian.AppendUint64(loads, math.Float64bits(380))
	loads = binary.LittleEndian.AppendUint64(loads, math.Float64bits(math.NaN()))
	loads = append(loads, 1)
	loads = binary.LittleEndian.AppendUint64(loads, math.Float64bits(-5))
	loads = binary.LittleEndian.AppendUint64(loads, math.Float64bits(math.Inf(1)))
	f.Add(loads)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := inputFrom(data)
		d := Diagnose(in)
		checkFinite(t, in, d)
	})
}

// checkFinite asserts what every diagnosis must be: one line per player in
// house order, known numbers finite and in range, a verdict, valid JSON.
func checkFinite(t *testing.T, in Input, d Diagnosis) {
	t.Helper()
	if d.Verdict == "" {
		t.Fatal("empty verdict")
	}
	if len(d.Players) != len(in.Players) {
		t.Fatalf("%d player lines for %d players", len(d.Players), len(in.Players))
	}
	ok := func(what string, v float64) {
		if math.IsInf(v, 0) || (!math.IsNaN(v) && v < 0) {
			t.Fatalf("%s = %v", what, v)
		}
	}
	for i, p := range d.Players {
		if p.Player != in.Players[i].Name {
			t.Fatalf("player %d is %q", i, p.Player)
		}
		ok("access_rtt_ms", p.AccessRTTMs)
		ok("jitter_ms", p.JitterMs)
		ok("access_loss", p.AccessLoss)
		if p.AccessLoss > 1 {
			t.Fatalf("access_loss %v", p.AccessLoss)
		}
		if p.RungWithout < 0 || p.RungWithout > rungs.Rungs || p.FPSWithout < 1 {
			t.Fatalf("rung_without %d fps_without %d", p.RungWithout, p.FPSWithout)
		}
		if b := p.Bufferbloat; b != nil {
			ok("bufferbloat upload", b.UploadMs)
			ok("bufferbloat download", b.DownloadMs)
			if math.IsNaN(b.UploadMs) && math.IsNaN(b.DownloadMs) {
				t.Fatalf("%s: a bufferbloat line with neither direction", p.Player)
			}
		}
		if has(p.Causes, CauseBufferbloat) != bloated(p.Bufferbloat) {
			t.Fatalf("%s: causes %v for bufferbloat %+v", p.Player, p.Causes, p.Bufferbloat)
		}
	}
	for _, l := range d.Links {
		ok("rtt_ms", l.RTTMs)
		ok("expected_rtt_ms", l.ExpectedRTTMs)
		if math.IsInf(l.ExcessRTTMs, 0) || l.Loss > 1 {
			t.Fatalf("link %+v", l)
		}
	}
	b, err := json.Marshal(Event{Frame: 1, Diagnosis: d})
	if err != nil {
		t.Fatal(err)
	}
	// What a diagnosis writes, its decoder reads.
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("cannot read back %s: %v", b, err)
	}
}

// TestMedianOf checks the selection against a sort on many random slices
// with repeats.
func TestMedianOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 2000; trial++ {
		v := make([]float64, 1+rng.IntN(40))
		for i := range v {
			v[i] = float64(rng.IntN(10))
		}
		s := slices.Clone(v)
		slices.Sort(s)
		want := s[len(s)/2]
		if len(s)%2 == 0 {
			want = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		if got := medianOf(v); got != want {
			t.Fatalf("median of %v = %v, want %v", s, got, want)
		}
	}
}
