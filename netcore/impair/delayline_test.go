package impair

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

func TestDelayLineReleasesByDueTimeThenArrival(t *testing.T) {
	var l delayLine
	to := netip.MustParseAddrPort("127.0.0.1:1")
	tag := func(s string) *[]byte { b := []byte(s); return &b }
	l.push(30*time.Millisecond, to, tag("c1"))
	l.push(10*time.Millisecond, to, tag("a"))
	l.push(30*time.Millisecond, to, tag("c2"))
	l.push(20*time.Millisecond, to, tag("b"))
	l.push(30*time.Millisecond, to, tag("c3"))

	if next, ok := l.next(); !ok || next != 10*time.Millisecond {
		t.Fatalf("next = %v, %v", next, ok)
	}
	if _, ok := l.popDue(9 * time.Millisecond); ok {
		t.Fatal("popped a datagram before it was due")
	}
	var got []string
	for _, now := range []time.Duration{10, 29, 30, 31} {
		for {
			it, ok := l.popDue(now * time.Millisecond)
			if !ok {
				break
			}
			got = append(got, string(*it.buf))
		}
	}
	if want := []string{"a", "b", "c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	if _, ok := l.next(); ok || l.len() != 0 {
		t.Fatal("delay line not empty")
	}
}
