//go:build unix

package netcore_test

import (
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// The echo harness: N messages of 32 bytes, each sent when the
// echo of the one before came back, on loopback — once over bare UDP
// sockets and once between two Endpoints on the reliable channel, each
// driven as the live peer drives it (a goroutine that owns it and reads
// its socket itself, ReadUntil, with send times read at the write). Both
// report
//
//   - rtt-med-µs, rtt-p90-µs: the round trip as the sender sees it, from
//     just before its send to just after the echo is in its hands;
//   - cpu-µs/msg: user+system CPU of the whole process (both ends, the
//     readers, the runtime) per echoed message, from getrusage;
//   - dgrams/msg: datagrams either socket sent per echoed message.
//
// lagscope's run also reports the SRTT each end's link settled on and the
// smallest SRTT the echo server read during the run (a sub-µs reading on
// loopback is a timing error). A link's SRTT ends at the
// kernel's receive stamp, not after the reader woke up and read, so a third
// run, BenchmarkEchoBareUDPStamped, is the bare client again with its
// round trip ended the same way (rtt-kstamp-med-µs): the reference an SRTT
// is compared with clock point for clock point. It reads its datagrams
// with their control messages, so its CPU is not the bare baseline's.
// Run them side by side:
//
//	go test -run '^$' -bench Echo -benchtime 20000x ./netcore/
//
// They are measurements, not pass/fail tests: docs/live.md holds readings
// of them and what they are held against.

const echoSize = 32

// echoTimes turns the per-message round trips into the reported metrics.
func echoTimes(b *testing.B, rtts []time.Duration, cpu time.Duration, datagrams uint64) {
	b.StopTimer()
	slices.Sort(rtts)
	at := func(q float64) float64 {
		if len(rtts) == 0 {
			return 0
		}
		return float64(rtts[int(q*float64(len(rtts)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(at(0.5), "rtt-med-µs")
	b.ReportMetric(at(0.9), "rtt-p90-µs")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/msg")
	b.ReportMetric(float64(datagrams)/float64(b.N), "dgrams/msg")
}

// cpuTime is the process's user+system CPU so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkEchoBareUDP(b *testing.B) { echoBare(b, false) }

func BenchmarkEchoBareUDPStamped(b *testing.B) { echoBare(b, true) }

// echoBare runs the bare echo; stamped, the client also ends each round
// trip at the kernel's receive stamp of the echo (Linux; elsewhere there
// is none and that metric is not reported).
func echoBare(b *testing.B, stamped bool) {
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	cli, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [2048]byte
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf[:])
			if err != nil {
				return
			}
			srv.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	defer func() { srv.Close(); <-done }()

	if stamped && !netcore.EnableTimestamps(cli) {
		stamped = false
	}
	rtts := make([]time.Duration, 0, b.N)
	var kRTTs []time.Duration
	if stamped {
		kRTTs = make([]time.Duration, 0, b.N)
	}
	msg := make([]byte, echoSize)
	var buf [2048]byte
	oob := make([]byte, netcore.OOBSize)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := cli.WriteToUDPAddrPort(msg, srvAddr); err != nil {
			b.Fatal(err)
		}
		// Reliable as the other run is: a lost echo is sent again.
		cli.SetReadDeadline(time.Now().Add(time.Second))
		if !stamped {
			if _, _, err := cli.ReadFromUDPAddrPort(buf[:]); err != nil {
				i--
				continue
			}
			rtts = append(rtts, time.Since(t0))
			continue
		}
		_, oobn, _, err := netcore.ReadStamped(cli, buf[:], oob)
		if err != nil {
			i--
			continue
		}
		rtts = append(rtts, time.Since(t0))
		// The stamp is the wall clock's; so is t0's wall reading.
		if at, ok := netcore.KernelStamp(oob[:oobn]); ok {
			kRTTs = append(kRTTs, at.Sub(t0.Round(0)))
		}
	}
	echoTimes(b, rtts, cpuTime(b)-cpu0, 2*uint64(len(rtts)))
	if len(kRTTs) > 0 {
		slices.Sort(kRTTs)
		b.ReportMetric(float64(kRTTs[len(kRTTs)/2])/float64(time.Microsecond), "rtt-kstamp-med-µs")
		b.ReportMetric(float64(kRTTs[len(kRTTs)*9/10])/float64(time.Microsecond), "rtt-kstamp-p90-µs")
	}
}

func BenchmarkEchoEndpoint(b *testing.B) {
	const cliID, srvID netcore.PeerID = 1, 2
	var (
		srv, cli *liveEndpoint
		rtts     = make([]time.Duration, 0, b.N)
		msg      = make([]byte, echoSize)
		sentAt   time.Time
		finished = make(chan struct{})
		minSRTT  = time.Duration(-1)
		underUS  int
	)
	srv = startLive(b, srvID, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, m []byte) {
		if ch != netcore.ChannelReliable {
			return
		}
		if err := srv.ep.Send(now, from, netcore.ChannelReliable, m); err != nil {
			b.Error(err)
		}
		if st, ok := srv.ep.Stats(from); ok && st.SRTT > 0 {
			if minSRTT < 0 || st.SRTT < minSRTT {
				minSRTT = st.SRTT
			}
			if st.SRTT < time.Microsecond {
				underUS++
			}
		}
	})
	cli = startLive(b, cliID, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, m []byte) {
		if ch != netcore.ChannelReliable {
			return
		}
		rtts = append(rtts, time.Since(sentAt))
		if len(rtts) == b.N {
			close(finished)
			return
		}
		// The next message leaves in the same wake-up as the echo came
		// in, as the bare client's does.
		sentAt = time.Now()
		if err := cli.ep.Send(cli.now(), from, netcore.ChannelReliable, msg); err != nil {
			b.Error(err)
		}
	})
	addr := func(l *liveEndpoint) netip.AddrPort { return l.tr.LocalAddr() }
	cli.do(func(now time.Duration) { cli.ep.AddLink(now, srvID, addr(srv), netcore.PublicKey{}) })
	srv.do(func(now time.Duration) { srv.ep.AddLink(now, cliID, addr(cli), netcore.PublicKey{}) })

	b.ReportAllocs()
	sent0 := cli.tr.Stats().Sent + srv.tr.Stats().Sent
	cpu0 := cpuTime(b)
	b.ResetTimer()
	cli.do(func(now time.Duration) {
		sentAt = time.Now()
		if err := cli.ep.Send(now, srvID, netcore.ChannelReliable, msg); err != nil {
			b.Error(err) // on the endpoint's goroutine: no Fatal here
		}
	})
	select {
	case <-finished:
	case <-time.After(time.Duration(b.N)*time.Millisecond + 10*time.Second):
		b.Fatalf("echoes stalled after %d of %d", len(rtts), b.N)
	}
	cpu := cpuTime(b) - cpu0
	// The last message's ack (and any LinkReports) may still be on their
	// way: count what was sent for the N messages only once it settled.
	time.Sleep(20 * time.Millisecond)
	sent := cli.tr.Stats().Sent + srv.tr.Stats().Sent - sent0
	echoTimes(b, rtts, cpu, sent)
	cs, ss := cli.stats(srvID), srv.stats(cliID)
	b.ReportMetric(float64(cs.SRTT)/float64(time.Microsecond), "srtt-cli-µs")
	b.ReportMetric(float64(ss.SRTT)/float64(time.Microsecond), "srtt-srv-µs")
	b.ReportMetric(float64(minSRTT)/float64(time.Microsecond), "srtt-srv-min-µs")
	b.ReportMetric(float64(underUS), "srtt<1µs")
}
