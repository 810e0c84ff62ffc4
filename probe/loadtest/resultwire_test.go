package loadtest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fp(v float64) *float64 { return &v }
func sp(s string) *string   { return &s }

// wireResults are results as a tester publishes them: complete, stopped
// after the upload hold, refused before anything ran.
func wireResults() []Result {
	return []Result{
		{IdleRTTMS: fp(12.1),
			Upload: &DirResult{AddedMS: fp(368), P90AddedMS: fp(420.5), Mbps: fp(9.6), Loss: fp(0.0972), Grade: sp("D"),
				Added: 368 * time.Millisecond, HasAdded: true},
			Download: &DirResult{AddedMS: fp(0), P90AddedMS: fp(0.3), Mbps: fp(49.2), Loss: fp(0), Grade: sp("A+"), Capped: true,
				HasAdded: true},
			Both:  &BothResult{AddedMS: fp(371), P90AddedMS: fp(430), Loss: fp(0.003)},
			Where: &WhereAt{Link: "uplink", TTL: 2, AddedMS: 360.5},
			Cost:  &GameCost{FramesLate: 38, MaxWaitMS: 1803.4, RungFrom: 1, RungTo: 4, ForMS: 9000},
			Cap:   50e6},
		{IdleRTTMS: fp(0.3), Upload: &DirResult{AddedMS: fp(4.1), P90AddedMS: nil, Mbps: nil, Loss: nil, Grade: sp("A+"),
			Added: 4100 * time.Microsecond, HasAdded: true},
			Both: &BothResult{}, Cost: &GameCost{RungFrom: 2, RungTo: 2}, Stopped: sp("peer left"), Cap: 5e6},
		{Stopped: sp("peer refused")},
		{},
	}
}

// A result decodes to what was encoded, field for field and in its JSON.
func TestResultWireRoundTrips(t *testing.T) {
	for i, r := range wireResults() {
		b := AppendResult(nil, r)
		if len(b) != ResultLen {
			t.Fatalf("result %d encodes to %d bytes, want %d", i, len(b), ResultLen)
		}
		got, err := DecodeResult(b)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("result %d decodes to %+v, want %+v", i, got, r)
		}
		a, _ := json.Marshal(r)
		c, _ := json.Marshal(got)
		if !bytes.Equal(a, c) {
			t.Errorf("result %d: JSON %s, want %s", i, c, a)
		}
	}
}

// A tester's own result and the copy every other machine decodes are the
// same, the added round trip's Duration included: at every halfway point
// of a tenth of a ms, and a nanosecond either side, up to 10 s.
func TestResultWireKeepsTheTestersAdded(t *testing.T) {
	const idle = 20 * time.Millisecond
	for k := range time.Duration(100_000) {
		for _, m := range []time.Duration{k*tenth + tenth/2 - 1, k*tenth + tenth/2, k*tenth + tenth/2 + 1} {
			r := Result{Upload: direction([]time.Duration{idle + m}, idle, &window{}, false)}
			got, err := DecodeResult(AppendResult(nil, r))
			if err != nil || !reflect.DeepEqual(got, r) || !got.Upload.HasAdded {
				t.Fatalf("%v added: the tester's %+v, decoded %+v, %v", m, *r.Upload, got.Upload, err)
			}
		}
	}
}

// The bytes of a refused test's result, as docs/load-test.md shows them.
func TestResultWireBytes(t *testing.T) {
	want := "00 ffffffff" + strings.Repeat("00", 36+12+6+14) + "01" + "0000000000000000"
	if got := hex.EncodeToString(AppendResult(nil, Result{Stopped: sp("peer refused")})); got != strings.ReplaceAll(want, " ", "") {
		t.Errorf("refused result encodes to %s", got)
	}
}

// Out-of-range bytes are refused: a wrong length, an unknown flag, grade,
// link or reason, a part not present that is not zeros, a loss above 1,
// a rung or hop of 0.
func TestResultWireRefuses(t *testing.T) {
	good := AppendResult(nil, wireResults()[0])
	set := func(off int, v byte) []byte { b := bytes.Clone(good); b[off] = v; return b }
	for name, b := range map[string][]byte{
		"short":      good[:ResultLen-1],
		"long":       append(bytes.Clone(good), 0),
		"flag":       set(0, good[0]|0x40),
		"grade":      set(5+16, 7),
		"capped":     set(5+17, 2),
		"link":       set(53, 9),
		"ttl":        set(54, 0),
		"rung":       set(59+8, 0),
		"stopped":    set(73, 6),
		"loss":       set(5+12+3, 0x7f),
		"absent set": func() []byte { b := AppendResult(nil, Result{}); b[60] = 1; return b }(),
	} {
		if _, err := DecodeResult(b); err == nil {
			t.Errorf("%s: % x decodes", name, b)
		}
	}
}

// FuzzResultWire: any bytes decode or fail without panicking, and what
// decodes encodes to the same bytes.
func FuzzResultWire(f *testing.F) {
	for _, r := range wireResults() {
		f.Add(AppendResult(nil, r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResult(b)
		if err != nil {
			return
		}
		if again := AppendResult(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("% x decoded to %+v, which encodes to % x", b, r, again)
		}
	})
}
