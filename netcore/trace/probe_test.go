package trace

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestProbeRoundTrip(t *testing.T) {
	for _, p := range []Probe{
		{Num: 0, TTL: 1},
		{Num: 1, TTL: 30},
		{Num: 0xDEADBEEF, TTL: 255, Answer: true},
	} {
		b := AppendProbe([]byte("x"), p)
		if len(b) != 1+ProbeLen {
			t.Fatalf("%+v: %d bytes, want %d", p, len(b), 1+ProbeLen)
		}
		got, err := DecodeProbe(b[1:])
		if err != nil || got != p {
			t.Fatalf("%+v: decoded %+v, %v", p, got, err)
		}
	}
}

// The record byte by byte, as docs/path.md gives it.
func TestProbeLayout(t *testing.T) {
	got := AppendProbe(nil, Probe{Num: 0x04030201, TTL: 7, Answer: true})
	want := []byte{0x25, 6, 0, 1, 2, 3, 4, 7, 1}
	if !bytes.Equal(got, want) {
		t.Fatalf("record % x, want % x", got, want)
	}
}

// RecProbe must differ from every record type netcore defines: the test
// reads them from netcore's wire.go, exported or not.
func TestProbeTypeIsFree(t *testing.T) {
	src, err := os.ReadFile("../wire.go")
	if err != nil {
		t.Fatal(err)
	}
	recs := regexp.MustCompile(`(?m)^\s*[Rr]ec\w+\s+uint8\s*=\s*0x([0-9A-Fa-f]{2})`).FindAllStringSubmatch(string(src), -1)
	if len(recs) < 5 {
		t.Fatalf("found %d record types in netcore/wire.go: the pattern no longer matches it", len(recs))
	}
	for _, m := range recs {
		if v, _ := strconv.ParseUint(m[1], 16, 8); uint8(v) == RecProbe {
			t.Fatalf("RecProbe %#x is netcore's already: %s", RecProbe, strings.TrimSpace(m[0]))
		}
	}
}

func TestDecodeProbeRejects(t *testing.T) {
	good := AppendProbe(nil, Probe{Num: 9, TTL: 3})
	mod := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for name, b := range map[string][]byte{
		"empty":         nil,
		"header only":   good[:3],
		"cut":           good[:ProbeLen-1],
		"other type":    mod(0, recKeepAlive),
		"length 7":      mod(1, 7),
		"ttl 0":         mod(7, 0),
		"reserved flag": mod(8, 0x02),
	} {
		if p, err := DecodeProbe(b); err == nil {
			t.Errorf("%s: decoded %+v", name, p)
		}
	}
}

func TestAppendProbeDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendProbe(buf[:0], Probe{Num: 1, TTL: 2}) }); n != 0 {
		t.Fatalf("%v allocations per probe", n)
	}
}

func TestQuoteOf(t *testing.T) {
	probe := Probe{Num: 77, TTL: 4}
	body := quotedBody(probe)
	keep := bytes.Clone(body)
	keep[0] = recKeepAlive
	for _, c := range []struct {
		name  string
		quote []byte
		want  Quote
	}{
		{"nothing quoted", nil, QuoteNone},
		{"the probe", body, QuoteProbe},
		{"the probe and more", append(bytes.Clone(body), 1, 2, 3), QuoteProbe},
		{"half the record", body[:4], QuoteNone},
		{"another control record", keep, QuoteOther},
		{"the peer's answer going out", quotedBody(probe.Reply()), QuoteOther},
	} {
		p, q := QuoteOf(c.quote)
		if q != c.want || (q == QuoteProbe && p != probe) {
			t.Errorf("%s: %+v %v, want %v", c.name, p, q, c.want)
		}
	}
}

// recKeepAlive is netcore's KeepAlive record type, another control record.
const recKeepAlive = 0x22
