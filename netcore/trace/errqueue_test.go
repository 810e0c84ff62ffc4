package trace

import (
	"net/netip"
	"testing"
	"time"
)

func TestParseErrQueue(t *testing.T) {
	stamp := time.Unix(1_700_000_000, 123_456_789)
	probe := Probe{Num: 5, TTL: 2}
	pktinfo := cmsg(solIP, 8, make([]byte, 12)) // IP_PKTINFO: skipped
	mapped := netip.AddrFrom16(r2.As16())       // ::ffff:100.64.0.1
	v6 := netip.MustParseAddr("2001:db8::1")
	for _, c := range []struct {
		name    string
		oob     []byte
		payload []byte
		want    Answer
	}{
		{
			"IPv4 time exceeded, quote with the probe, stamped",
			cat(pktinfo, recvErr(113, originICMP, 11, 0, r1), stampNS(stamp)),
			quotedBody(probe),
			Answer{Offender: r1, Origin: originICMP, Type: 11, Errno: 113, Kind: kindTimeExceeded, Stamp: stamp, Quote: QuoteProbe, Probe: probe},
		},
		{
			"IPv4 port unreachable, nothing quoted",
			recvErr(111, originICMP, 3, 3, peerA),
			nil,
			Answer{Offender: peerA, Origin: originICMP, Type: 3, Code: 3, Errno: 111, Kind: kindPortUnreachable},
		},
		{
			"IPv4 net unreachable",
			recvErr(101, originICMP, 3, 0, r2),
			nil,
			Answer{Offender: r2, Origin: originICMP, Type: 3, Errno: 101, Kind: kindUnreachable},
		},
		{
			"IPv6 socket, ICMPv4 from a v4-mapped offender",
			recvErr6(113, originICMP, 11, 0, mapped),
			nil,
			Answer{Offender: r2, Origin: originICMP, Type: 11, Errno: 113, Kind: kindTimeExceeded},
		},
		{
			"ICMPv6 time exceeded, SCM_TIMESTAMPING software stamp",
			cat(cmsg(solSocket, scmTimestamping, cat(timespec(stamp, ptrSize), make([]byte, 4*ptrSize))), recvErr6(113, originICMP6, 3, 0, v6)),
			nil,
			Answer{Offender: v6, Origin: originICMP6, Type: 3, Errno: 113, Kind: kindTimeExceeded, Stamp: stamp},
		},
		{
			"ICMPv6 port unreachable, SO_TIMESTAMPING_NEW hardware stamp",
			cat(recvErr6(111, originICMP6, 1, 4, v6), cmsg(solSocket, scmTimestampingNew, cat(make([]byte, 32), timespec(stamp, 8)))),
			nil,
			Answer{Offender: v6, Origin: originICMP6, Type: 1, Code: 4, Errno: 111, Kind: kindPortUnreachable, Stamp: stamp},
		},
		{
			"ICMPv6 packet too big is not about a hop",
			recvErr6(90, originICMP6, 2, 0, v6),
			nil,
			Answer{Offender: v6, Origin: originICMP6, Type: 2, Errno: 90, Kind: kindOther},
		},
		{
			"local error: no offender",
			cat(recvErr(90, originLocal, 0, 0, netip.Addr{}), cmsg(solSocket, scmTimestampNSNew, timespec(stamp, 8))),
			nil,
			Answer{Origin: originLocal, Errno: 90, Kind: kindOther, Stamp: stamp},
		},
		{
			"bare sock_extended_err",
			cmsg(solIP, ipRecvErr, extErr(113, originICMP, 11, 0, r1, false)[:sockExtErrLen]),
			nil,
			Answer{Origin: originICMP, Type: 11, Errno: 113, Kind: kindTimeExceeded},
		},
	} {
		got, err := parseQuoted(c.oob, c.payload)
		if err != nil || got != c.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", c.name, got, err, c.want)
		}
	}
}

func TestParseErrQueueRejects(t *testing.T) {
	good := recvErr(113, originICMP, 11, 0, r1)
	long := cat(good) // cmsg_len past the end of the buffer
	if ptrSize == 8 {
		ne.PutUint64(long, 1000)
	} else {
		ne.PutUint32(long, 1000)
	}
	v6bad := extErr(113, originICMP6, 3, 0, netip.MustParseAddr("2001:db8::1"), true)
	ne.PutUint16(v6bad[sockExtErrLen:], 99)
	for name, oob := range map[string][]byte{
		"none":                 nil,
		"only a timestamp":     stampNS(time.Unix(1, 0)),
		"header cut":           good[:cmsgHdrLen-1],
		"length past the end":  long,
		"length below header":  cat(cmsg(solIP, ipRecvErr, nil)[:cmsgHdrLen-1], make([]byte, 1)),
		"short extended error": cmsg(solIP, ipRecvErr, make([]byte, 8)),
		"offender cut":         cmsg(solIP, ipRecvErr, extErr(113, originICMP, 11, 0, r1, false)[:sockExtErrLen+6]),
		"offender family 99":   cmsg(solIPv6, ipv6RecvErr, v6bad),
		"short timestamp":      cat(good, cmsg(solSocket, scmTimestampNS, make([]byte, ptrSize))),
		"garbage after":        cat(good, []byte{1, 2, 3}),
	} {
		if a, err := parseQuoted(oob, nil); err == nil {
			t.Errorf("%s: parsed %+v", name, a)
		}
	}
}

func TestParseErrQueueDoesNotAllocate(t *testing.T) {
	oob := cat(recvErr(113, originICMP, 11, 0, r1), stampNS(time.Unix(5, 0)))
	quote := quotedBody(Probe{Num: 1, TTL: 1})
	if n := testing.AllocsPerRun(100, func() { _, _ = parseQuoted(oob, quote) }); n != 0 {
		t.Fatalf("%v allocations per answer", n)
	}
}
