package impair

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkDelayLine is the proxy's queue at a standing depth: each
// operation releases the earliest datagram and holds a new one.
func BenchmarkDelayLine(b *testing.B) {
	to := netip.MustParseAddrPort("127.0.0.1:1")
	buf := new([]byte)
	var l delayLine
	rng := rand.New(rand.NewPCG(1, 1))
	for range 1024 {
		l.push(time.Duration(rng.IntN(1000))*time.Microsecond, to, buf)
	}
	b.ReportAllocs()
	for b.Loop() {
		due, _ := l.next()
		l.popDue(due)
		l.push(due+time.Duration(rng.IntN(1000))*time.Microsecond, to, buf)
	}
}
