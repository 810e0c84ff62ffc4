//go:build unix

package netcore_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// The echo harness: messages of 32 bytes on loopback, each sent when the
// echo of the one before came back, by two contenders:
//
//   - bare: two plain UDP sockets, a server goroutine answering each
//     datagram from a blocking read and a client that writes and then
//     blocks in its read: the floor any program that answers from user
//     space stands on;
//   - lagscope: two sealed Endpoints (as every session's are, Q7) on the
//     reliable channel, each driven as the live Runner drives its own
//     (probe/live/driver.go): one goroutine owns it, waits in its socket
//     (ReadUntil) until a datagram or its next deadline, hands each
//     datagram to Receive at its own arrival time and Ticks when a
//     deadline passed; send times are read at the write (SetEpoch). The
//     echo's answer leaves from the server's delivery callback and the
//     client's next message from its own, so each message costs each end
//     one wake-up, as the bare echo's does.
//
// BenchmarkEcho runs them side by side: rounds of b.N messages each
// (after a warm-up of its own), every contender's round in a child process
// of its own (this test binary, LAGSCOPE_ECHO_CHILD), contenders
// interleaved and their order swapped every round, so that what the
// machine does meanwhile falls on both alike. For every round it logs each
// contender's
//
//   - median and p99 round trip as the client sees it, from just before its
//     send to just after the echo is in its hands;
//   - CPU per echoed message: user+system CPU of the whole child (both
//     ends, the runtime), from getrusage;
//   - datagrams either socket sent, and heap allocations, per message;
//
// and lagscope's against bare: median minus bare's, p99 and CPU as ratios.
// It reports the medians of those over the rounds. Run it as
//
//	go test -run '^$' -bench '^BenchmarkEcho$' -benchtime 20000x ./netcore/
//
// (LAGSCOPE_ECHO_ROUNDS sets the rounds, 5 by default;
// LAGSCOPE_ECHO_CPUPROFILE=DIR writes each child's CPU profile of its
// measured messages to DIR). It is a measurement, not a pass/fail test:
// docs/live.md holds its readings and what they are held against.
//
// A link's SRTT ends at the kernel's receive stamp, not after the reader
// woke up and read, so BenchmarkEchoBareUDPStamped is the bare client again
// (in the benchmark's own process) with its round trip ended the same way
// (rtt-kstamp-med-µs): the reference an SRTT is compared with clock point
// for clock point.

const echoSize = 32

// The child's environment: which contender, how many messages measured,
// how many before them to warm up, and where to put a CPU profile.
const (
	echoChildEnv   = "LAGSCOPE_ECHO_CHILD"
	echoNEnv       = "LAGSCOPE_ECHO_N"
	echoWarmEnv    = "LAGSCOPE_ECHO_WARM"
	echoProfileEnv = "LAGSCOPE_ECHO_CPUPROFILE"
	echoRoundsEnv  = "LAGSCOPE_ECHO_ROUNDS"
)

// echoWarm is each child's warm-up: enough echoes for the link's RTO and
// SRTT to settle and the runtime's pools to fill.
const echoWarm = 2000

// TestMain makes the test binary one contender of the echo harness when
// LAGSCOPE_ECHO_CHILD names one; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if c := os.Getenv(echoChildEnv); c != "" {
		os.Exit(echoChild(c))
	}
	os.Exit(m.Run())
}

// echoResult is one contender's round, as a child prints it.
type echoResult struct {
	Contender string  `json:"contender"`
	N         int     `json:"n"`
	MedUS     float64 `json:"med_us"`
	P99US     float64 `json:"p99_us"`
	CPUUS     float64 `json:"cpu_us_per_msg"`
	Dgrams    float64 `json:"dgrams_per_msg"`
	Allocs    float64 `json:"allocs_per_msg"`
	// SRTT of the client's and the server's link when it ended (lagscope).
	SRTTCliUS float64 `json:"srtt_cli_us,omitempty"`
	SRTTSrvUS float64 `json:"srtt_srv_us,omitempty"`
}

// echoMeter measures the child's measured stretch: CPU, allocations, an
// optional CPU profile.
type echoMeter struct {
	cpu0    time.Duration
	allocs0 uint64
	prof    *os.File
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}

func heapAllocs() uint64 {
	metrics.Read(allocSample)
	return allocSample[0].Value.Uint64()
}

func (m *echoMeter) start(contender string) error {
	if dir := os.Getenv(echoProfileEnv); dir != "" {
		f, err := os.CreateTemp(dir, "echo-"+contender+"-*.pprof")
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		m.prof = f
	}
	m.allocs0 = heapAllocs()
	m.cpu0 = processCPU()
	return nil
}

// stop returns the CPU and allocations since start.
func (m *echoMeter) stop() (time.Duration, uint64) {
	cpu := processCPU() - m.cpu0
	allocs := heapAllocs() - m.allocs0
	if m.prof != nil {
		pprof.StopCPUProfile()
		m.prof.Close()
	}
	return cpu, allocs
}

// processCPU is the process's user+system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// echoChild runs one contender's round and prints its echoResult.
func echoChild(contender string) int {
	n, err := strconv.Atoi(os.Getenv(echoNEnv))
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a count of messages\n", echoNEnv, os.Getenv(echoNEnv))
		return 2
	}
	warm, err := strconv.Atoi(os.Getenv(echoWarmEnv))
	if err != nil || warm < 0 {
		warm = echoWarm
	}
	var res echoResult
	switch contender {
	case "bare":
		res, err = echoBareRound(n, warm)
	case "lagscope":
		res, err = echoLagscopeRound(n, warm)
	default:
		err = fmt.Errorf("no contender %q", contender)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo child:", err)
		return 1
	}
	res.Contender, res.N = contender, n
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// quantileUS is the q-quantile of the sorted round trips, in µs.
func quantileUS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Microsecond)
}

// fillTimes sorts the round trips into res with the stretch's CPU and
// allocations.
func fillTimes(res *echoResult, rtts []time.Duration, cpu time.Duration, allocs uint64) {
	slices.Sort(rtts)
	n := float64(len(rtts))
	res.MedUS, res.P99US = quantileUS(rtts, 0.5), quantileUS(rtts, 0.99)
	res.CPUUS = float64(cpu) / float64(time.Microsecond) / n
	res.Allocs = float64(allocs) / n
}

// echoBareRound is the bare contender: warm echoes, then n measured.
func echoBareRound(n, warm int) (echoResult, error) {
	var res echoResult
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return res, err
	}
	cli, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return res, err
	}
	defer cli.Close()
	srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	done := make(chan struct{})
	var sent atomic.Uint64 // datagrams either socket sent
	go func() {
		defer close(done)
		var buf [2048]byte
		for {
			k, from, err := srv.ReadFromUDPAddrPort(buf[:])
			if err != nil {
				return
			}
			if _, err := srv.WriteToUDPAddrPort(buf[:k], from); err == nil {
				sent.Add(1)
			}
		}
	}()
	msg := make([]byte, echoSize)
	var buf [2048]byte
	// echo sends msg until its echo comes back (a lost one is sent again,
	// as the reliable channel would) and returns the round trip.
	echo := func() (time.Duration, error) {
		for range 10 {
			t0 := time.Now()
			if _, err := cli.WriteToUDPAddrPort(msg, srvAddr); err != nil {
				return 0, err
			}
			sent.Add(1)
			cli.SetReadDeadline(time.Now().Add(time.Second))
			if _, _, err := cli.ReadFromUDPAddrPort(buf[:]); err == nil {
				return time.Since(t0), nil
			}
		}
		return 0, fmt.Errorf("no echo in 10 tries")
	}
	for range warm {
		if _, err := echo(); err != nil {
			return res, err
		}
	}
	rtts := make([]time.Duration, 0, n)
	var m echoMeter
	if err := m.start("bare"); err != nil {
		return res, err
	}
	sent0 := sent.Load()
	for range n {
		rtt, err := echo()
		if err != nil {
			return res, err
		}
		rtts = append(rtts, rtt)
	}
	cpu, allocs := m.stop()
	srv.Close()
	<-done
	fillTimes(&res, rtts, cpu, allocs)
	res.Dgrams = float64(sent.Load()-sent0) / float64(n)
	return res, nil
}

// echoLagscopeRound is the lagscope contender: warm echoes, then n
// measured.
func echoLagscopeRound(n, warm int) (echoResult, error) {
	const cliID, srvID netcore.PeerID = 1, 2
	var (
		res      echoResult
		srv, cli *liveEndpoint
		rtts     = make([]time.Duration, 0, n)
		msg      = make([]byte, echoSize)
		sentAt   time.Time
		count    int // echoes back in the current stretch
		target   int // echoes the current stretch wants
		measure  bool
		finished = make(chan struct{}, 1)
		fail     = make(chan error, 1)
	)
	report := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	var err error
	srv, err = newLive(netcore.Config{Self: srvID, Seal: true}, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, m []byte) {
		if ch != netcore.ChannelReliable {
			return
		}
		if err := srv.ep.Send(now, from, netcore.ChannelReliable, m); err != nil {
			report(err)
		}
	})
	if err != nil {
		return res, err
	}
	defer srv.close()
	cli, err = newLive(netcore.Config{Self: cliID, Seal: true}, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, m []byte) {
		if ch != netcore.ChannelReliable {
			return
		}
		if measure {
			rtts = append(rtts, time.Since(sentAt))
		}
		if count++; count == target {
			finished <- struct{}{}
			return
		}
		// The next message leaves in the same wake-up as the echo came
		// in, as the bare client's does.
		sentAt = time.Now()
		if err := cli.ep.Send(cli.now(), from, netcore.ChannelReliable, msg); err != nil {
			report(err)
		}
	})
	if err != nil {
		return res, err
	}
	defer cli.close()
	cli.do(func(now time.Duration) {
		err = cli.ep.AddLink(now, srvID, srv.tr.LocalAddr(), srv.ep.PublicKey())
	})
	if err != nil {
		return res, err
	}
	srv.do(func(now time.Duration) {
		err = srv.ep.AddLink(now, cliID, cli.tr.LocalAddr(), cli.ep.PublicKey())
	})
	if err != nil {
		return res, err
	}
	// stretch echoes k messages; the client's callback counts them.
	stretch := func(k int, measured bool) error {
		if k == 0 {
			return nil
		}
		cli.do(func(now time.Duration) {
			count, target, measure = 0, k, measured
			sentAt = time.Now()
			if err := cli.ep.Send(now, srvID, netcore.ChannelReliable, msg); err != nil {
				report(err)
			}
		})
		select {
		case <-finished:
			return nil
		case err := <-fail:
			return err
		case <-time.After(time.Duration(k)*time.Millisecond + 10*time.Second):
			return fmt.Errorf("echoes stalled after %d of %d", count, k)
		}
	}
	if err := stretch(warm, false); err != nil {
		return res, err
	}
	// The last warm echo's ack settles before the count starts.
	time.Sleep(20 * time.Millisecond)
	sent0 := cli.tr.Stats().Sent + srv.tr.Stats().Sent
	var m echoMeter
	if err := m.start("lagscope"); err != nil {
		return res, err
	}
	if err := stretch(n, true); err != nil {
		return res, err
	}
	cpu, allocs := m.stop()
	// The last message's ack (and any LinkReports) may still be on their
	// way: count what was sent for the n messages once it settled.
	time.Sleep(20 * time.Millisecond)
	sent := cli.tr.Stats().Sent + srv.tr.Stats().Sent - sent0
	fillTimes(&res, rtts, cpu, allocs)
	res.Dgrams = float64(sent) / float64(n)
	res.SRTTCliUS = float64(cli.stats(srvID).SRTT) / float64(time.Microsecond)
	res.SRTTSrvUS = float64(srv.stats(cliID).SRTT) / float64(time.Microsecond)
	return res, nil
}

// runEchoChild runs one contender's round of n messages in a child.
func runEchoChild(b *testing.B, contender string, n int) echoResult {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), echoChildEnv+"="+contender, echoNEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("echo child %s: %v", contender, err)
	}
	var res echoResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if json.Unmarshal(sc.Bytes(), &res) == nil && res.Contender == contender {
			return res
		}
	}
	b.Fatalf("echo child %s printed no result: %s", contender, out)
	return res
}

func BenchmarkEcho(b *testing.B) {
	rounds := 5
	if v := os.Getenv(echoRoundsEnv); v != "" {
		r, err := strconv.Atoi(v)
		if err != nil || r < 1 {
			b.Fatalf("%s=%q: want a count of rounds", echoRoundsEnv, v)
		}
		rounds = r
	}
	var bare, lag []echoResult
	for r := range rounds {
		order := []string{"bare", "lagscope"}
		if r%2 == 1 {
			order = []string{"lagscope", "bare"}
		}
		for _, c := range order {
			res := runEchoChild(b, c, b.N)
			if c == "bare" {
				bare = append(bare, res)
			} else {
				lag = append(lag, res)
			}
		}
	}
	var medDiff, p99Ratio, cpuRatio, dgrams, allocs, bareMed, lagMed, bareCPU, lagCPU []float64
	for r := range rounds {
		bb, l := bare[r], lag[r]
		medDiff = append(medDiff, l.MedUS-bb.MedUS)
		p99Ratio = append(p99Ratio, l.P99US/bb.P99US)
		cpuRatio = append(cpuRatio, l.CPUUS/bb.CPUUS)
		dgrams = append(dgrams, l.Dgrams)
		allocs = append(allocs, l.Allocs)
		bareMed, lagMed = append(bareMed, bb.MedUS), append(lagMed, l.MedUS)
		bareCPU, lagCPU = append(bareCPU, bb.CPUUS), append(lagCPU, l.CPUUS)
		if b.N == 1 {
			continue // the benchmark framework's first call, before the real one
		}
		b.Logf("round %d (%s first): bare median %.1f µs, p99 %.1f µs, CPU %.2f µs/msg, %.2f dgrams/msg, %.3f allocs/msg | "+
			"lagscope median %.1f µs (bare %+.1f µs), p99 %.1f µs (%.2f× bare), CPU %.2f µs/msg (%.2f× bare), %.2f dgrams/msg, %.3f allocs/msg, SRTT client %.1f µs, server %.1f µs",
			r+1, map[bool]string{true: "bare", false: "lagscope"}[r%2 == 0],
			bb.MedUS, bb.P99US, bb.CPUUS, bb.Dgrams, bb.Allocs,
			l.MedUS, l.MedUS-bb.MedUS, l.P99US, l.P99US/bb.P99US, l.CPUUS, l.CPUUS/bb.CPUUS, l.Dgrams, l.Allocs, l.SRTTCliUS, l.SRTTSrvUS)
	}
	b.ReportMetric(median(bareMed), "bare-med-µs")
	b.ReportMetric(median(lagMed), "med-µs")
	b.ReportMetric(median(medDiff), "med-minus-bare-µs")
	b.ReportMetric(median(p99Ratio), "p99-x-bare")
	b.ReportMetric(median(bareCPU), "bare-cpu-µs/msg")
	b.ReportMetric(median(lagCPU), "cpu-µs/msg")
	b.ReportMetric(median(cpuRatio), "cpu-x-bare")
	b.ReportMetric(median(dgrams), "dgrams/msg")
	b.ReportMetric(median(allocs), "allocs/msg")
}

// median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// BenchmarkEchoBareUDPStamped is the bare echo, in this process, with the
// client's round trip also ended at the kernel's receive stamp of the
// echo (Linux; elsewhere there is none and that metric is not reported).
func BenchmarkEchoBareUDPStamped(b *testing.B) {
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

	stamped := netcore.EnableTimestamps(cli)
	rtts := make([]time.Duration, 0, b.N)
	kRTTs := make([]time.Duration, 0, b.N)
	msg := make([]byte, echoSize)
	var buf [2048]byte
	oob := make([]byte, netcore.OOBSize)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := cli.WriteToUDPAddrPort(msg, srvAddr); err != nil {
			b.Fatal(err)
		}
		// A lost echo is sent again.
		cli.SetReadDeadline(time.Now().Add(time.Second))
		_, oobn, _, err := netcore.ReadStamped(cli, buf[:], oob)
		if err != nil {
			i--
			continue
		}
		rtts = append(rtts, time.Since(t0))
		// The stamp is the wall clock's; so is t0's wall reading.
		if at, ok := netcore.KernelStamp(oob[:oobn]); ok && stamped {
			kRTTs = append(kRTTs, at.Sub(t0.Round(0)))
		}
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	slices.Sort(rtts)
	b.ReportMetric(quantileUS(rtts, 0.5), "rtt-med-µs")
	b.ReportMetric(quantileUS(rtts, 0.99), "rtt-p99-µs")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/msg")
	if len(kRTTs) > 0 {
		slices.Sort(kRTTs)
		b.ReportMetric(quantileUS(kRTTs, 0.5), "rtt-kstamp-med-µs")
		b.ReportMetric(quantileUS(kRTTs, 0.99), "rtt-kstamp-p99-µs")
	}
}
