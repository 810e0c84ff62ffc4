//go:build unix

package netcore_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
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
// BenchmarkEcho runs them side by side, each in a child process of its own
// (this test binary, LAGSCOPE_ECHO_CHILD) that warms up once and then
// echoes what it is told to: rounds of b.N messages per contender, each
// round in blocks of echoBlock messages that alternate between the two
// (ABBAABBA…), so that what the machine does meanwhile — a neighbour's
// build, a timer storm — falls on both alike, to within a block's few
// milliseconds. For every round it logs each contender's
//
//   - median and p99 round trip as the client sees it, from just before its
//     send to just after the echo is in its hands;
//   - CPU per echoed message: user+system CPU of the whole child (both
//     ends, the runtime) over its blocks, from getrusage;
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

// The child's environment: which contender, how many messages to warm up
// with, and where to put a CPU profile; and the rounds BenchmarkEcho runs.
const (
	echoChildEnv   = "LAGSCOPE_ECHO_CHILD"
	echoWarmEnv    = "LAGSCOPE_ECHO_WARM"
	echoProfileEnv = "LAGSCOPE_ECHO_CPUPROFILE"
	echoRoundsEnv  = "LAGSCOPE_ECHO_ROUNDS"
)

// echoWarm is each child's warm-up: enough echoes for the link's RTO and
// SRTT to settle and the runtime's pools to fill.
const echoWarm = 2000

// echoBlock is how many messages a contender echoes before the other's
// turn.
const echoBlock = 1000

// TestMain makes the test binary one contender of the echo harness when
// LAGSCOPE_ECHO_CHILD names one; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if c := os.Getenv(echoChildEnv); c != "" {
		os.Exit(echoChild(c, os.Stdin, os.Stdout))
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
	// SRTT of the client's and the server's link at the round's end
	// (lagscope).
	SRTTCliUS float64 `json:"srtt_cli_us,omitempty"`
	SRTTSrvUS float64 `json:"srtt_srv_us,omitempty"`
}

// echoer is one contender as its child runs it.
type echoer interface {
	// echo echoes k messages, appending each round trip to rtts unless
	// it is nil (a warm-up).
	echo(k int, rtts []time.Duration) ([]time.Duration, error)
	// sent is how many datagrams either end has sent so far.
	sent() uint64
	// srtt is the client's and the server's SRTT (zero without links).
	srtt() (cli, srv time.Duration)
	close()
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}

func heapAllocs() uint64 {
	metrics.Read(allocSample)
	return allocSample[0].Value.Uint64()
}

// processCPU is the process's user+system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// echoChild is a contender's child: it warms up, says "ready", and then
// follows the commands on in, one a line — "block K" echoes K messages and
// says "done", "round" prints the round's echoResult since the last one,
// "quit" ends.
func echoChild(contender string, in io.Reader, out io.Writer) int {
	warm := echoWarm
	if v, err := strconv.Atoi(os.Getenv(echoWarmEnv)); err == nil && v >= 0 {
		warm = v
	}
	var (
		e   echoer
		err error
	)
	switch contender {
	case "bare":
		e, err = newBareEcho()
	case "lagscope":
		e, err = newLagscopeEcho()
	default:
		err = fmt.Errorf("no contender %q", contender)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo child:", err)
		return 1
	}
	defer e.close()
	if _, err := e.echo(warm, nil); err != nil {
		fmt.Fprintln(os.Stderr, "echo child: warm-up:", err)
		return 1
	}
	if dir := os.Getenv(echoProfileEnv); dir != "" {
		f, err := os.CreateTemp(dir, "echo-"+contender+"-*.pprof")
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	var (
		rtts        = make([]time.Duration, 0, 1<<16) // not nil: measured
		cpu         time.Duration
		allocs      uint64
		roundSent0  = e.sent()
		sc          = bufio.NewScanner(in)
		settleAfter = 20 * time.Millisecond
	)
	fmt.Fprintln(out, "ready")
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "block":
			k, err := strconv.Atoi(arg)
			if err != nil || k < 1 {
				fmt.Fprintf(os.Stderr, "echo child: block %q\n", arg)
				return 2
			}
			a0, c0 := heapAllocs(), processCPU()
			if rtts, err = e.echo(k, rtts); err != nil {
				fmt.Fprintln(os.Stderr, "echo child:", err)
				return 1
			}
			cpu += processCPU() - c0
			allocs += heapAllocs() - a0
			fmt.Fprintln(out, "done")
		case "round":
			// The last message's ack (and any LinkReports) may still be
			// on their way: count what was sent for the round once it
			// settled.
			time.Sleep(settleAfter)
			sent := e.sent()
			res := echoResult{Contender: contender, N: len(rtts)}
			slices.Sort(rtts)
			n := float64(len(rtts))
			res.MedUS, res.P99US = quantileUS(rtts, 0.5), quantileUS(rtts, 0.99)
			res.CPUUS = float64(cpu) / float64(time.Microsecond) / n
			res.Allocs = float64(allocs) / n
			res.Dgrams = float64(sent-roundSent0) / n
			cli, srv := e.srtt()
			res.SRTTCliUS, res.SRTTSrvUS = float64(cli)/float64(time.Microsecond), float64(srv)/float64(time.Microsecond)
			b, _ := json.Marshal(res)
			fmt.Fprintln(out, string(b))
			rtts, cpu, allocs, roundSent0 = rtts[:0], 0, 0, sent
		case "quit":
			return 0
		}
	}
	return 0
}

// quantileUS is the q-quantile of the sorted round trips, in µs.
func quantileUS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Microsecond)
}

// bareEcho is the bare contender.
type bareEcho struct {
	srv, cli *net.UDPConn
	srvAddr  netip.AddrPort
	done     chan struct{}
	n        atomic.Uint64 // datagrams either socket sent
	msg      []byte
	buf      [2048]byte
}

func newBareEcho() (*bareEcho, error) {
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	cli, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		srv.Close()
		return nil, err
	}
	e := &bareEcho{srv: srv, cli: cli, srvAddr: srv.LocalAddr().(*net.UDPAddr).AddrPort(),
		done: make(chan struct{}), msg: make([]byte, echoSize)}
	go func() {
		defer close(e.done)
		var buf [2048]byte
		for {
			k, from, err := srv.ReadFromUDPAddrPort(buf[:])
			if err != nil {
				return
			}
			if _, err := srv.WriteToUDPAddrPort(buf[:k], from); err == nil {
				e.n.Add(1)
			}
		}
	}()
	return e, nil
}

func (e *bareEcho) echo(k int, rtts []time.Duration) ([]time.Duration, error) {
	for range k {
		rtt, err := e.once()
		if err != nil {
			return rtts, err
		}
		if rtts != nil {
			rtts = append(rtts, rtt)
		}
	}
	return rtts, nil
}

// once sends the message until its echo comes back (a lost one is sent
// again, as the reliable channel would) and returns the round trip.
func (e *bareEcho) once() (time.Duration, error) {
	for range 10 {
		t0 := time.Now()
		if _, err := e.cli.WriteToUDPAddrPort(e.msg, e.srvAddr); err != nil {
			return 0, err
		}
		e.n.Add(1)
		e.cli.SetReadDeadline(time.Now().Add(time.Second))
		if _, _, err := e.cli.ReadFromUDPAddrPort(e.buf[:]); err == nil {
			return time.Since(t0), nil
		}
	}
	return 0, fmt.Errorf("no echo in 10 tries")
}

func (e *bareEcho) sent() uint64 { return e.n.Load() }

func (e *bareEcho) srtt() (time.Duration, time.Duration) { return 0, 0 }

func (e *bareEcho) close() {
	e.cli.Close()
	e.srv.Close()
	<-e.done
}

// lagscopeEcho is the lagscope contender: the client's delivery callback
// takes the round trip and sends the next message.
type lagscopeEcho struct {
	srv, cli *liveEndpoint
	msg      []byte
	sentAt   time.Time
	count    int // echoes back in the current stretch
	target   int // echoes the current stretch wants
	rtts     []time.Duration
	measure  bool
	finished chan struct{}
	fail     chan error
	// start is the block's first send, made once: starting a block
	// allocates nothing, so the allocations counted are the datagrams'.
	start   func(now time.Duration)
	started chan struct{}
	limit   *time.Timer
}

const echoCli, echoSrv netcore.PeerID = 1, 2

func newLagscopeEcho() (*lagscopeEcho, error) {
	e := &lagscopeEcho{msg: make([]byte, echoSize), finished: make(chan struct{}, 1), fail: make(chan error, 1)}
	var err error
	e.srv, err = newLive(netcore.Config{Self: echoSrv, Seal: true}, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, m []byte) {
		if ch != netcore.ChannelReliable {
			return
		}
		if err := e.srv.ep.Send(now, from, netcore.ChannelReliable, m); err != nil {
			e.report(err)
		}
	})
	if err != nil {
		return nil, err
	}
	e.cli, err = newLive(netcore.Config{Self: echoCli, Seal: true}, func(now time.Duration, from netcore.PeerID, ch netcore.Channel, m []byte) {
		if ch != netcore.ChannelReliable {
			return
		}
		if e.measure {
			e.rtts = append(e.rtts, time.Since(e.sentAt))
		}
		if e.count++; e.count == e.target {
			e.finished <- struct{}{}
			return
		}
		// The next message leaves in the same wake-up as the echo came
		// in, as the bare client's does.
		e.sentAt = time.Now()
		if err := e.cli.ep.Send(e.cli.now(), from, netcore.ChannelReliable, e.msg); err != nil {
			e.report(err)
		}
	})
	if err != nil {
		e.srv.close()
		return nil, err
	}
	e.cli.do(func(now time.Duration) {
		err = e.cli.ep.AddLink(now, echoSrv, e.srv.tr.LocalAddr(), e.srv.ep.PublicKey())
	})
	if err == nil {
		e.srv.do(func(now time.Duration) {
			err = e.srv.ep.AddLink(now, echoCli, e.cli.tr.LocalAddr(), e.cli.ep.PublicKey())
		})
	}
	if err != nil {
		e.close()
		return nil, err
	}
	e.started = make(chan struct{}, 1)
	e.start = func(now time.Duration) {
		e.sentAt = time.Now()
		if err := e.cli.ep.Send(now, echoSrv, netcore.ChannelReliable, e.msg); err != nil {
			e.report(err)
		}
		e.started <- struct{}{}
	}
	e.limit = time.NewTimer(time.Hour)
	e.limit.Stop()
	return e, nil
}

func (e *lagscopeEcho) report(err error) {
	select {
	case e.fail <- err:
	default:
	}
}

func (e *lagscopeEcho) echo(k int, rtts []time.Duration) ([]time.Duration, error) {
	if k == 0 {
		return rtts, nil
	}
	// The client's goroutine is idle in its socket: what it reads next is
	// set before the first send, which it makes (liveEndpoint.run runs the
	// calls it is handed, then reads).
	e.count, e.target, e.measure, e.rtts = 0, k, rtts != nil, rtts
	e.cli.calls <- e.start
	e.cli.tr.Wake()
	<-e.started
	e.limit.Reset(time.Duration(k)*time.Millisecond + 10*time.Second)
	defer e.limit.Stop()
	select {
	case <-e.finished:
	case err := <-e.fail:
		return rtts, err
	case <-e.limit.C:
		return rtts, fmt.Errorf("echoes stalled in a block of %d", k)
	}
	// The callback has finished with e.rtts (it sent on finished last).
	rtts, e.rtts = e.rtts, nil
	return rtts, nil
}

func (e *lagscopeEcho) sent() uint64 { return e.cli.tr.Stats().Sent + e.srv.tr.Stats().Sent }

func (e *lagscopeEcho) srtt() (time.Duration, time.Duration) {
	return e.cli.stats(echoSrv).SRTT, e.srv.stats(echoCli).SRTT
}

func (e *lagscopeEcho) close() {
	e.cli.close()
	e.srv.close()
}

// echoProc is a contender's child as the benchmark drives it.
type echoProc struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
}

func startEchoChild(b *testing.B, contender string) *echoProc {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), echoChildEnv+"="+contender)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &echoProc{name: contender, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	b.Cleanup(func() {
		p.in.Close()
		p.cmd.Wait()
	})
	p.expect(b, "ready")
	return p
}

// say sends one command line.
func (p *echoProc) say(b *testing.B, line string) {
	b.Helper()
	if _, err := fmt.Fprintln(p.in, line); err != nil {
		b.Fatalf("echo child %s: %v", p.name, err)
	}
}

// expect reads the child's next line, which must be want.
func (p *echoProc) expect(b *testing.B, want string) {
	b.Helper()
	if !p.out.Scan() || p.out.Text() != want {
		b.Fatalf("echo child %s said %q, want %q (%v)", p.name, p.out.Text(), want, p.out.Err())
	}
}

// round reads the child's result of the round.
func (p *echoProc) round(b *testing.B) echoResult {
	b.Helper()
	p.say(b, "round")
	var res echoResult
	if !p.out.Scan() || json.Unmarshal(p.out.Bytes(), &res) != nil {
		b.Fatalf("echo child %s printed %q, want its round", p.name, p.out.Text())
	}
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
	bare, lag := startEchoChild(b, "bare"), startEchoChild(b, "lagscope")
	var bs, ls []echoResult
	for r := range rounds {
		pair := [2]*echoProc{bare, lag}
		if r%2 == 1 {
			pair = [2]*echoProc{lag, bare}
		}
		for i, left := 0, b.N; left > 0; i++ {
			k := min(echoBlock, left)
			left -= k
			order := pair
			if i%2 == 1 {
				order = [2]*echoProc{pair[1], pair[0]}
			}
			for _, p := range order {
				p.say(b, "block "+strconv.Itoa(k))
				p.expect(b, "done")
			}
		}
		bs, ls = append(bs, bare.round(b)), append(ls, lag.round(b))
	}
	bare.say(b, "quit")
	lag.say(b, "quit")
	var medDiff, p99Ratio, cpuRatio, dgrams, allocs, bareMed, lagMed, bareCPU, lagCPU []float64
	for r := range rounds {
		bb, l := bs[r], ls[r]
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
		b.Logf("round %d (%s first): bare median %.1f µs, p99 %.1f µs, CPU %.2f µs/msg, %.3f dgrams/msg, %.3f allocs/msg | "+
			"lagscope median %.1f µs (bare %+.1f µs), p99 %.1f µs (%.2f× bare), CPU %.2f µs/msg (%.2f× bare), %.3f dgrams/msg, %.3f allocs/msg, SRTT client %.1f µs, server %.1f µs",
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
