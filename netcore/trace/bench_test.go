package trace

import (
	"testing"
	"time"
)

// BenchmarkProbeSendAndMatch: encode a probe into its datagram, record it
// sent, parse the router's error-queue answer quoting it, match it and
// add the outcome to the path — the per-probe work of a live tracer.
func BenchmarkProbeSendAndMatch(b *testing.B) {
	m := makeMatcher()
	m.AddLink(linkA, peerA)
	var path hopPath
	buf := quotedBody(Probe{Num: 0, TTL: 1})
	oob := cat(recvErr(113, originICMP, icmpTimeExceeded, 0, r1), stampNS(time.Unix(1_700_000_000, 0)))
	now := time.Duration(0)
	num := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		num++
		now += time.Millisecond
		buf = AppendProbe(buf[:0], Probe{Num: num, TTL: 1})
		m.Sent(linkA, num, 1, now, time.Second, false)
		a, err := parseQuoted(oob, buf)
		if err != nil {
			b.Fatal(err)
		}
		o, ok := m.Answer(linkA, a, now+500*time.Microsecond)
		if !ok {
			b.Fatal("no match")
		}
		path.Add(o)
	}
}
