package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The load test's tools on the wire (cmd_netns_load_linux_test.go): a
// sampler of nft counters and of the lines the processes print, an echo
// client that keeps many probes in flight through a full queue, and a
// paced flood.

// The sampler's periods: lines are counted every sampleEvery, counters
// read every countEvery (each reading runs nft: a few ms of a core).
// sampleFor bounds its loop.
const (
	sampleEvery = 50 * time.Millisecond
	countEvery  = 200 * time.Millisecond
	sampleFor   = 5 * time.Minute
)

// sampler reads, every countEvery, the load counters of some namespaces
// (the table ip load their rules fill) and, every sampleEvery, how many
// lines each watched process has printed, each reading with the time it
// was taken: when the load flowed and how much of it, and when each
// printed line arrived.
type sampler struct {
	t          *testing.T
	ns         []string
	mu         sync.Mutex
	counts     map[string][]counterReading
	procs      []*proc
	lines      map[*proc][]lineReading
	failed     error
	gap        time.Duration // the longest between two of its rounds
	stop, done chan struct{}
	once       sync.Once
}

// counterReading is one namespace's counters at one time, bytes by name.
type counterReading struct {
	at    time.Time
	took  time.Duration // the counters were read somewhere in [at, at+took]
	bytes map[string]uint64
}

// lineReading: by at, the process had printed n lines.
type lineReading struct {
	at time.Time
	n  int
}

func newSampler(t *testing.T, ns []string) *sampler {
	s := &sampler{t: t, ns: ns, counts: map[string][]counterReading{}, lines: map[*proc][]lineReading{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	t.Cleanup(s.close)
	return s
}

// watch adds processes whose line arrivals the sampler times.
func (s *sampler) watch(ps ...*proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, ps...)
}

func (s *sampler) loop() {
	defer close(s.done)
	var last time.Time
	for i := range int(sampleFor / sampleEvery) {
		select {
		case <-s.stop:
			return
		default:
		}
		now := time.Now()
		if !last.IsZero() {
			s.mu.Lock()
			s.gap = max(s.gap, now.Sub(last))
			s.mu.Unlock()
		}
		last = now
		next := now.Add(sampleEvery)
		s.sample(i%int(countEvery/sampleEvery) == 0)
		time.Sleep(time.Until(next))
	}
}

// sample reads the lines printed so far and, with counters, the counters.
func (s *sampler) sample(counters bool) {
	for i := 0; counters && i < len(s.ns); i++ {
		at := time.Now()
		b, err := readLoadCounters(s.ns[i])
		took := time.Since(at)
		s.mu.Lock()
		if err != nil && s.failed == nil {
			s.failed = err
		}
		if err == nil {
			s.counts[s.ns[i]] = append(s.counts[s.ns[i]], counterReading{at: at, took: took, bytes: b})
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	ps := slices.Clone(s.procs)
	s.mu.Unlock()
	for _, p := range ps {
		at := time.Now()
		p.mu.Lock()
		n := len(p.lines)
		p.mu.Unlock()
		s.mu.Lock()
		s.lines[p] = append(s.lines[p], lineReading{at: at, n: n})
		s.mu.Unlock()
	}
}

// close stops the sampling and fails the test if a reading failed. It
// logs the longest time between two rounds: a machine too busy to run
// this process for a while also held up the runs' processes then.
func (s *sampler) close() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if s.failed != nil {
			s.t.Errorf("reading the load counters: %v", s.failed)
		}
		s.t.Logf("the sampler's rounds, %v apart when on time, were at most %v apart", sampleEvery, s.gap.Round(time.Millisecond))
	})
}

var counterLine = regexp.MustCompile(`counter (\w+) \{\s*packets \d+ bytes (\d+)`)

// readLoadCounters is the bytes of each counter of ns's table ip load.
func readLoadCounters(ns string) (map[string]uint64, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "counters", "table", "ip", "load").CombinedOutput()
	if err != nil {
		return nil, errors.New(ns + ": " + err.Error() + ": " + strings.TrimSpace(string(out)))
	}
	b := map[string]uint64{}
	for _, m := range counterLine.FindAllStringSubmatch(string(out), -1) {
		v, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return nil, err
		}
		b[m[1]] = v
	}
	return b, nil
}

// series is ns's counters of names, summed, reading by reading.
func (s *sampler) series(ns string, names ...string) []counterPoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []counterPoint
	for _, r := range s.counts[ns] {
		var sum uint64
		for _, n := range names {
			sum += r.bytes[n]
		}
		out = append(out, counterPoint{r.at, r.took, sum})
	}
	return out
}

// counterPoint is a counter's bytes at a time.
type counterPoint struct {
	at    time.Time
	took  time.Duration // read somewhere in [at, at+took] (a busy machine runs nft late)
	bytes uint64
}

// burst is a stretch of readings over which a counter grew with no pause
// of gap or more: from the last reading before it grew to the first
// reading that holds all of it, the bytes it grew by, and the index of
// that last reading.
type burst struct {
	from, to time.Time
	bytes    uint64
	last     int
}

func (b burst) String() string { return b.to.Sub(b.from).Round(time.Millisecond).String() }

// bursts splits a series into its bursts.
func bursts(pts []counterPoint, gap time.Duration) []burst {
	var out []burst
	for i := 1; i < len(pts); i++ {
		if pts[i].bytes == pts[i-1].bytes {
			continue
		}
		n := len(out)
		if n > 0 && pts[i].at.Sub(out[n-1].to) < gap {
			out[n-1].to, out[n-1].last = pts[i].at, i
			out[n-1].bytes += pts[i].bytes - pts[i-1].bytes
			continue
		}
		out = append(out, burst{from: pts[i-1].at, to: pts[i].at, bytes: pts[i].bytes - pts[i-1].bytes, last: i})
	}
	return out
}

// wallOf is when p's clock read tms, on this process's wall clock: p's
// clock starts when its session does, so it is t_ms after an origin, the
// earliest any of its lines arrived less its t_ms (a line arrives after it
// is stamped; the earliest arrival has waited least). It is no earlier
// than the true time, by what a line waits at least: a pipe's hop and the
// sampler's period at most.
func (s *sampler) wallOf(p *proc, tms float64) time.Time {
	s.mu.Lock()
	rs := slices.Clone(s.lines[p])
	s.mu.Unlock()
	origin, found := time.Time{}, false
	j := 0
	for i, e := range p.events() {
		v, ok := e["t_ms"].(float64)
		if !ok {
			continue
		}
		for j < len(rs) && rs[j].n <= i {
			j++
		}
		if j == len(rs) {
			break
		}
		o := rs[j].at.Add(-time.Duration(v * float64(time.Millisecond)))
		if !found || o.Before(origin) {
			origin, found = o, true
		}
	}
	if !found {
		s.t.Fatalf("%s: no line with t_ms arrived while the sampler ran", p.name)
	}
	return origin.Add(time.Duration(tms * float64(time.Millisecond)))
}

// tmsOf is wallOf's inverse: p's t_ms at wall.
func (s *sampler) tmsOf(p *proc, wall time.Time) float64 {
	zero := s.wallOf(p, 0)
	return float64(wall.Sub(zero)) / float64(time.Millisecond)
}

// startEchoServer starts a bare UDP echo in ns at at, a process of its
// own (the test binary as serveEcho), until the test ends, and returns the
// address it listens at.
func startEchoServer(t *testing.T, ns string, at netip.AddrPort) netip.AddrPort {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0])
	cmd.Env = append(os.Environ(), echoChildEnv+"="+at.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("echo server: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close() // the server ends when its stdin does
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("echo server printed no address: %v", err)
	}
	to, err := netip.ParseAddrPort(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("echo server address %q: %v", line, err)
	}
	return to
}

// queuedEcho probes the echo at to from ns (address from) every gap for
// d, as a load test's probes go: 32-byte datagrams, each numbered, many in
// flight at once when a queue holds each longer than gap. Each round trip
// runs from just before the probe's write to the kernel's receive stamp
// of its echo. It returns the round trips sorted, in ms; a probe the
// queue dropped has none.
func queuedEcho(t *testing.T, ns string, from netip.Addr, to netip.AddrPort, gap, d time.Duration) []float64 {
	t.Helper()
	c, err := listenUDPIn(ns, netip.AddrPortFrom(from, 0))
	if err != nil {
		t.Fatalf("echo client in %s: %v", ns, err)
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		t.Fatalf("SO_TIMESTAMPNS: %v %v", err, serr)
	}
	n := int(d / gap)
	sent, back := make([]time.Time, n), make([]time.Time, n)
	// The reader stops a second after the last probe: no queue here
	// holds a datagram that long.
	c.SetReadDeadline(time.Now().Add(d + 2*time.Second))
	var wg sync.WaitGroup
	wg.Go(func() {
		var buf [64]byte
		oob := make([]byte, 128)
		for {
			m, oobn, _, _, err := c.ReadMsgUDPAddrPort(buf[:], oob)
			if err != nil {
				return // the deadline, or the socket closed
			}
			at, ok := stampOf(oob[:oobn])
			if i := int(binary.LittleEndian.Uint32(buf[:])); m == 32 && ok && i < n && back[i].IsZero() {
				back[i] = at
			}
		}
	})
	msg := make([]byte, 32)
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * gap)))
		binary.LittleEndian.PutUint32(msg, uint32(i))
		sent[i] = time.Now()
		if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
			t.Errorf("echo probe: %v", err)
			break
		}
	}
	wg.Wait()
	var rtts []float64
	for i := range n {
		if !back[i].IsZero() && !sent[i].IsZero() {
			rtts = append(rtts, float64(back[i].Sub(sent[i].Round(0)))/float64(time.Millisecond))
		}
	}
	if len(rtts) < n/2 {
		t.Fatalf("queued echo: %d of %d probes came back", len(rtts), n)
	}
	slices.Sort(rtts)
	return rtts
}

// paceStep is a rate, bit/s of IP datagrams, held for a while.
type paceStep struct {
	rate float64
	hold time.Duration
}

// loadDatagram is the flood's datagram: 1372 bytes of UDP payload, 1400
// on the path, as a load test's.
const loadDatagram = 1372

// paceFlood sends from ns (address from) to to at each step's rate in
// turn, paced by the clock: a late wake-up is made up, at most 50
// datagrams at once. The returned func stops it early and waits.
func paceFlood(t *testing.T, ns string, from netip.Addr, to netip.AddrPort, steps []paceStep) func() {
	t.Helper()
	c, err := listenUDPIn(ns, netip.AddrPortFrom(from, 0))
	if err != nil {
		t.Fatalf("flood from %s: %v", ns, err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer c.Close()
		p := make([]byte, loadDatagram)
		const onPath = (loadDatagram + 28) * 8
		owed, sent := 0.0, 0
		for _, s := range steps {
			end := time.Now().Add(s.hold)
			for last := time.Now(); time.Now().Before(end); {
				select {
				case <-stop:
					return
				default:
				}
				now := time.Now()
				owed += s.rate * now.Sub(last).Seconds() / onPath
				last = now
				for n := 0; float64(sent) < math.Floor(owed) && n < 50; n++ {
					_, _ = c.WriteToUDPAddrPort(p, to)
					sent++
				}
				sent = max(sent, int(owed)-50)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-done }) }
	t.Cleanup(end)
	return end
}
