package trace

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

// FuzzDecodeProbe: any bytes decode or fail without panicking, and a
// record that decodes encodes back to the same bytes.
func FuzzDecodeProbe(f *testing.F) {
	f.Add(AppendProbe(nil, Probe{Num: 1, TTL: 1}))
	f.Add(AppendProbe(nil, Probe{Num: 0xFFFFFFFF, TTL: 255, Answer: true}))
	f.Add(append(AppendProbe(nil, Probe{Num: 7, TTL: 9}), 0x10, 1, 0))
	f.Add([]byte{RecProbe, 6, 0, 0, 0, 0, 0, 0, 2})
	f.Add([]byte{RecProbe})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeProbe(b)
		if err != nil {
			return
		}
		if again := AppendProbe(nil, p); !bytes.Equal(again, b[:ProbeLen]) {
			t.Fatalf("% x decoded to %+v, which encodes to % x", b[:ProbeLen], p, again)
		}
		if p.TTL == 0 {
			t.Fatalf("decoded a probe with ttl 0: %+v", p)
		}
	})
}

// FuzzParseErrQueue: any control bytes parse or fail without panicking,
// and what parses names an unmapped offender; QuoteOf finds a probe only
// in a quote that holds one.
func FuzzParseErrQueue(f *testing.F) {
	quote := quotedBody(Probe{Num: 3, TTL: 2})
	f.Add(cat(recvErr(113, originICMP, 11, 0, r1), stampNS(time.Unix(9, 9))), quote)
	f.Add(recvErr6(113, originICMP, 11, 0, netip.AddrFrom16(r2.As16())), []byte(nil))
	f.Add(recvErr6(111, originICMP6, 1, 4, netip.MustParseAddr("2001:db8::1")), quote[:10])
	f.Add(cat(cmsg(solSocket, scmTimestampingNew, make([]byte, 48)), recvErr(90, originLocal, 0, 0, netip.Addr{})), []byte{})
	f.Add(cmsg(solIP, ipRecvErr, make([]byte, 3)), quote)
	f.Fuzz(func(t *testing.T, oob, payload []byte) {
		a, err := ParseErrQueue(oob)
		if err != nil {
			return
		}
		if a.Offender.Is4In6() {
			t.Fatalf("offender %v left v4-mapped", a.Offender)
		}
		if a.Quote != QuoteNone {
			t.Fatalf("the parser read a quote: %+v", a)
		}
		if p, q := QuoteOf(payload); q == QuoteProbe {
			if d, err := DecodeProbe(payload); err != nil || d != p || p.Answer {
				t.Fatalf("quote % x gave probe %+v", payload, p)
			}
		}
	})
}
