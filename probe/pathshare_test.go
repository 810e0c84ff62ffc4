package probe

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"

	"github.com/lagscope/lagscope/probe/diagnosis"
)

// A summary reads back as written: the delay's start to the µs, every
// hop's address (IPv4, IPv6, a silent hop), nothing more.
func TestPathSummaryRoundTrip(t *testing.T) {
	s := pathSummary{to: 7, complete: true, delay: &diagnosis.TraceStart{TTL: 2, Link: "uplink", AddedMs: 197.125},
		hops: []netip.Addr{netip.MustParseAddr("192.168.1.1"), {}, netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("::ffff:198.51.100.10")}}
	b := s.appendTo(nil)
	if len(b) != 10+5+1+17+5 {
		t.Fatalf("%d bytes", len(b))
	}
	got, err := decodePathSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.hops = append([]netip.Addr(nil), s.hops...)
	want.hops[3] = netip.MustParseAddr("198.51.100.10")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v (%+v)\nwant      %+v (%+v)", got, got.delay, want, want.delay)
	}
	none, err := decodePathSummary((&pathSummary{to: 3}).appendTo(nil))
	if err != nil || none.delay != nil || len(none.hops) != 0 || none.to != 3 {
		t.Fatalf("an empty summary read back %+v, %v", none, err)
	}
}

// Thirty IPv6 hops do not fit: the summary keeps the hops up to where the
// delay starts and stops within pathSummaryMax; the hop limit is 30.
func TestPathSummaryBounded_Q5(t *testing.T) {
	var hops []netip.Addr
	for i := range 40 {
		hops = append(hops, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}))
	}
	s := pathSummary{to: 1, delay: &diagnosis.TraceStart{TTL: 12, Link: "beyond", AddedMs: 40}, hops: hops}
	b := s.appendTo(nil)
	if len(b) > pathSummaryMax+17 {
		t.Fatalf("%d bytes, over %d", len(b), pathSummaryMax)
	}
	got, err := decodePathSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.hops) < 12 || len(got.hops) > maxTrace || got.hops[11] != hops[11] {
		t.Fatalf("%d hops kept; the delay's hop (12) must be among them", len(got.hops))
	}
	s.hops = hops[:3]
	for i := range 3 {
		s.hops[i] = netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})
	}
	s.delay = nil
	if got, _ := decodePathSummary(s.appendTo(nil)); len(got.hops) != 3 {
		t.Errorf("short summary lost hops: %v", got.hops)
	}
}

func TestPathSummaryRefusesBadBytes(t *testing.T) {
	good := (&pathSummary{to: 1, delay: &diagnosis.TraceStart{TTL: 1, Link: "lan", AddedMs: 5},
		hops: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}).appendTo(nil)
	bad := map[string][]byte{
		"short":        good[:9],
		"wrong kind":   append([]byte{kindTelemetry}, good[1:]...),
		"ttl past 30":  patch(good, 3, 31),
		"link unknown": patch(good, 4, 9),
		"link no ttl":  patch(good, 3, 0),
		"hops past 30": patch(good, 9, 31),
		"hop cut":      good[:len(good)-1],
		"family 5":     patch(good, 10, 5),
		"trailing":     append(bytes.Clone(good), 0),
	}
	for what, b := range bad {
		if _, err := decodePathSummary(b); err == nil {
			t.Errorf("%s: read without an error", what)
		}
	}
}

func patch(b []byte, i int, v byte) []byte {
	c := bytes.Clone(b)
	c[i] = v
	return c
}

// FuzzPathSummary: bytes from the network never panic the decoder, and
// what it accepts writes the same bytes back.
func FuzzPathSummary(f *testing.F) {
	f.Add((&pathSummary{to: 9, delay: &diagnosis.TraceStart{TTL: 3, Link: "isp", AddedMs: 12.5},
		hops: []netip.Addr{netip.MustParseAddr("192.168.1.1"), {}, netip.MustParseAddr("2001:db8::7")}}).appendTo(nil))
	f.Add([]byte{kindPathSummary, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{kindPathSummary})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodePathSummary(b)
		if err != nil {
			return
		}
		again, err := decodePathSummary(s.appendTo(nil))
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("accepted %x as %+v, wrote it back as %+v (%v)", b, s, again, err)
		}
	})
}
