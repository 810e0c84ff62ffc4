package snapshot

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestBitsRoundTrip_Q3(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type wv struct {
		v uint32
		n uint
	}
	var ws []wv
	var w bitWriter
	total := 0
	for range 1000 {
		n := uint(1 + rng.IntN(32))
		v := rng.Uint32() & uint32(1<<n-1)
		ws = append(ws, wv{v, n})
		w.write(v, n)
		total += int(n)
	}
	b := w.flush()
	if w.bits != total || len(b) != (total+7)/8 {
		t.Fatalf("wrote %d bits into %d bytes, want %d bits in %d", w.bits, len(b), total, (total+7)/8)
	}
	r := bitReader{b: b}
	for i, x := range ws {
		got, err := r.read(x.n)
		if err != nil || got != x.v {
			t.Fatalf("read %d: %d bits = %#x, %v; want %#x", i, x.n, got, err, x.v)
		}
	}
	if err := r.done(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.read(8); err == nil {
		t.Error("reading past the end did not fail")
	}
}

func TestPaddingMustBeZero_Q3(t *testing.T) {
	var w bitWriter
	w.write(4, 3) // 100 + 5 padding bits
	b := w.flush()
	if b[0] != 0x80 {
		t.Fatalf("flushed %08b, want 10000000", b[0])
	}
	r := bitReader{b: []byte{0x81}}
	r.read(3)
	if r.done() == nil {
		t.Error("nonzero padding accepted")
	}
	r = bitReader{b: []byte{0x80, 0x00}}
	r.read(3)
	if r.done() == nil {
		t.Error("a whole spare byte accepted")
	}
}

func TestNewTableRejectsBadFields_Q3(t *testing.T) {
	get := func(*seedState) uint32 { return 0 }
	set := func(*seedState, uint32) {}
	for _, c := range []struct {
		name    string
		entries []entry[seedState]
		want    string
	}{
		{"empty", nil, "no fields"},
		{"no name", []entry[seedState]{field[seedState]{Bits: 1, Get: get, Set: set}}, "without a name"},
		{"no accessor", []entry[seedState]{field[seedState]{Name: "a", Bits: 1, Get: get}}, "accessor"},
		{"zero width", []entry[seedState]{field[seedState]{Name: "a", Get: get, Set: set}}, "bits wide"},
		{"too wide", []entry[seedState]{field[seedState]{Name: "a", Bits: 33, Get: get, Set: set}}, "bits wide"},
		{"near too wide", []entry[seedState]{field[seedState]{Name: "a", Bits: 8, Near: 8, Get: get, Set: set}}, "near width"},
		{"max too big", []entry[seedState]{field[seedState]{Name: "a", Bits: 4, Max: 16, Get: get, Set: set}}, "does not fit"},
		{"twice", []entry[seedState]{field[seedState]{Name: "a", Bits: 1, Get: get, Set: set}, field[seedState]{Name: "a", Bits: 1, Get: get, Set: set}}, "twice"},
		{"empty group", []entry[seedState]{group[seedState]{Name: "g"}}, "empty"},
	} {
		if _, err := newTable(c.entries...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	deep := entry[seedState](field[seedState]{Name: "a", Bits: 1, Get: get, Set: set})
	for range maxDepth + 1 {
		deep = group[seedState]{Entries: []entry[seedState]{deep}}
	}
	if _, err := newTable(deep); err == nil {
		t.Error("groups nested too deep accepted")
	}
}

// groupState has a group in the middle, nested groups, and a near field.
type groupState struct {
	A    uint32
	G    [3]uint32
	N    uint32
	Tail uint32
}

func groupTable(t testing.TB) *fieldTable[groupState] {
	t.Helper()
	type S = groupState
	f := func(name string, bits, near uint8, p func(*S) *uint32) field[S] {
		return field[S]{Name: name, Bits: bits, Near: near, Get: func(s *S) uint32 { return *p(s) }, Set: func(s *S, v uint32) { *p(s) = v }}
	}
	tb, err := newTable[S](
		f("a", 8, 0, func(s *S) *uint32 { return &s.A }),
		group[S]{Name: "g.", Entries: []entry[S]{
			f("0", 8, 0, func(s *S) *uint32 { return &s.G[0] }),
			group[S]{Name: "in.", Entries: []entry[S]{
				f("1", 8, 0, func(s *S) *uint32 { return &s.G[1] }),
				f("2", 8, 0, func(s *S) *uint32 { return &s.G[2] }),
			}},
		}},
		f("n", 16, 4, func(s *S) *uint32 { return &s.N }),
		f("tail", 4, 0, func(s *S) *uint32 { return &s.Tail }),
	)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// payloadBits encodes cur against base with the table and returns the bit
// string without padding.
func payloadBits[S any](tb *fieldTable[S], base, cur *S) string {
	bv, cv := make([]uint32, tb.numFields()), make([]uint32, tb.numFields())
	tb.load(base, bv)
	tb.load(cur, cv)
	var w bitWriter
	tb.encode(&w, bv, cv)
	var sb strings.Builder
	for _, c := range w.flush() {
		for i := 7; i >= 0; i-- {
			sb.WriteByte('0' + c>>i&1)
		}
	}
	return sb.String()[:w.bits]
}

// A group whose fields are all unchanged costs one bit; a changed one costs
// its bit plus its fields' (Q3, our grouping).
func TestGroupCostsOneBitWhenUnchanged_Q3(t *testing.T) {
	tb := groupTable(t)
	base := groupState{A: 1, G: [3]uint32{2, 3, 4}, N: 1000, Tail: 5}
	cur := base
	if got := payloadBits(tb, &base, &cur); got != "0"+"0"+"0"+"0" {
		t.Errorf("unchanged: %s, want 4 zero bits (a, group g, n, tail)", got)
	}
	cur.G[2] = 0xFF
	// a:0, g:1, g.0:0, in:1, in.1:0, in.2:1 11111111, n:0, tail:0
	if got, want := payloadBits(tb, &base, &cur), "0"+"1"+"0"+"1"+"0"+"1"+"11111111"+"0"+"0"; got != want {
		t.Errorf("one nested change: %s, want %s", got, want)
	}
}

// A near field sends a small change as a zigzag difference in Near bits
// behind a flag, a large one in full (our extension of Q3).
func TestNearFieldSendsSmallDifferences_Q3(t *testing.T) {
	tb := groupTable(t)
	base := groupState{N: 1000}
	for _, c := range []struct {
		n    uint32
		want string // bits of field n: changed, near flag, value
	}{
		{1001, "1" + "1" + "0001"},               // +1: zigzag 2, sent as 2−1
		{999, "1" + "1" + "0000"},                // −1: zigzag 1, sent as 0
		{1008, "1" + "1" + "1111"},               // +8: zigzag 16, the largest near value
		{992, "1" + "1" + "1110"},                // −8: zigzag 15
		{1009, "1" + "0" + "0000001111110001"},   // +9: too far, 16 bits in full
		{0, "1" + "0" + "0000000000000000"},      // back to zero
		{0xFFFF, "1" + "0" + "1111111111111111"}, // the top of the range
	} {
		cur := base
		cur.N = c.n
		want := "0" + "0" + c.want + "0"
		if got := payloadBits(tb, &base, &cur); got != want {
			t.Errorf("n %d→%d: %s, want %s", base.N, c.n, got, want)
		}
		// And it decodes back.
		bv, cv, out := make([]uint32, tb.numFields()), make([]uint32, tb.numFields()), make([]uint32, tb.numFields())
		tb.load(&base, bv)
		tb.load(&cur, cv)
		var w bitWriter
		tb.encode(&w, bv, cv)
		r := bitReader{b: w.flush()}
		if err := tb.decode(&r, bv, out); err != nil || out[4] != c.n {
			t.Errorf("n %d: decoded %d, %v", c.n, out[4], err)
		}
	}
}

// The decoder accepts only the encoder's own form, so each update has one
// encoding (and fuzzing can check decode→encode gives the same bytes).
func TestDecodeRejectsNonCanonical_Q3(t *testing.T) {
	tb := groupTable(t)
	base := []uint32{1, 2, 3, 4, 1000, 5} // a, g.0, g.in.1, g.in.2, n, tail
	for _, c := range []struct {
		name string
		base []uint32
		bits string
	}{
		{"changed but equal", base, "1" + "00000001" + "0" + "0" + "0"},
		{"group changed, nothing in it", base, "0" + "1" + "0" + "0" + "0" + "0"},
		{"full form for a near value", base, "0" + "0" + "1" + "0" + "0000001111101001" + "0"}, // 1001
		{"near difference below zero", make([]uint32, 6), "0" + "0" + "1" + "1" + "0000" + "0"},
		{"cut short", base, "1" + "0000"}, // a needs 8 bits, 7 are left
	} {
		r := bitReader{b: pack(c.bits)}
		err := tb.decode(&r, c.base, make([]uint32, tb.numFields()))
		if err == nil {
			err = r.done()
		}
		if err == nil {
			t.Errorf("%s: %s accepted", c.name, c.bits)
		}
		t.Logf("%s: %v", c.name, err)
	}
	// Max: a count field of 7 bits that stops at 64.
	tm := telemetryTable
	cur := make([]uint32, tm.numFields())
	var w bitWriter
	cur[6] = 64
	tm.encode(&w, make([]uint32, tm.numFields()), cur)
	ok := w.flush()
	r := bitReader{b: ok}
	if err := tm.decode(&r, make([]uint32, tm.numFields()), cur); err != nil {
		t.Fatalf("count 64: %v", err)
	}
	cur[6] = 65
	w = bitWriter{}
	tm.encode(&w, make([]uint32, tm.numFields()), cur)
	r = bitReader{b: w.flush()}
	if err := tm.decode(&r, make([]uint32, tm.numFields()), cur); err == nil {
		t.Error("count 65 accepted, max is 64")
	}
}

func pack(bits string) []byte {
	var w bitWriter
	for _, c := range bits {
		w.bit(c == '1')
	}
	return w.flush()
}

// Values beyond a field's range are saturated at its max, never wrapped
// (so a counter never appears to go backwards, L5).
func TestEncodeSaturates_Q3(t *testing.T) {
	s, r := NewTelemetrySender(), NewTelemetryReceiver()
	var st Telemetry
	st.Count = 200
	st.Links[0].SRTTUs = 1 << 30
	st.ProcessUs = 1<<24 + 5
	got, _, err := r.Decode(s.encode(nil, 0, &st))
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != MaxLinks || got.Links[0].SRTTUs != maxRTT || got.ProcessUs != maxProcess {
		t.Errorf("decoded count %d srtt %d process %d, want %d %d %d", got.Count, got.Links[0].SRTTUs, got.ProcessUs, MaxLinks, maxRTT, maxProcess)
	}
}
