package live

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/session"
)

// Scale measurements (the targets, docs/live.md: a demo of 64 at ≥ 29 fps, largest
// wait < 200 ms, < 1 core, < 200 MiB; 64 machines on their own sockets at
// < 30 MiB and < 3 % of a core each at rung 1). They are measurements, not
// pass/fail tests: they run for tens of seconds of wall time, so they run
// only with LAGSCOPE_SCALE=1 and log their numbers (go test -v). Profile
// them with go test's -cpuprofile and -memprofile.
//
//	LAGSCOPE_SCALE=1 go test ./probe/live/ -run TestScaleDemo -v -cpuprofile cpu.out
//	LAGSCOPE_SCALE=1 LAGSCOPE_PLAYERS=8 LAGSCOPE_SECONDS=20 go test ./probe/live/ -run TestScaleDemo -v
//	LAGSCOPE_SCALE=1 LAGSCOPE_DEMO_PROFILE=lan LAGSCOPE_SECONDS=30 go test ./probe/live/ -run TestScaleDemo -v
//	LAGSCOPE_SCALE=1 go test ./probe/live/ -run TestScaleSockets -v

func longScale(t *testing.T) (players int, length time.Duration) {
	t.Helper()
	if os.Getenv("LAGSCOPE_SCALE") == "" {
		t.Skip("a wall-clock measurement of tens of seconds: set LAGSCOPE_SCALE=1 to run it (CI does not: its tests share two cores)")
	}
	players, length = 64, 60*time.Second
	if v, err := strconv.Atoi(os.Getenv("LAGSCOPE_PLAYERS")); err == nil && v > 0 {
		players = v
	}
	if v, err := strconv.Atoi(os.Getenv("LAGSCOPE_SECONDS")); err == nil && v > 0 {
		length = time.Duration(v) * time.Second
	}
	return players, length
}

// procStatus reads a field of /proc/self/status in KiB (VmRSS, VmHWM).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return -1
}

// TestScaleDemo runs `lagscope demo --json` (RunDemo) and reports its frame
// rate once the game runs, its largest wait, CPU in cores and peak RSS.
func TestScaleDemo(t *testing.T) {
	players, length := longScale(t)
	// LAGSCOPE_DEMO_PROFILE: the access links (demo --profile), mix by
	// default.
	profile := "mix"
	if p := os.Getenv("LAGSCOPE_DEMO_PROFILE"); p != "" {
		profile = p
	}
	// The NDJSON is read as it comes (a 64-player run writes ~100 MB of
	// link lines), so that the peak RSS is the demo's own.
	pr, pw := io.Pipe()
	type result struct {
		cpu  time.Duration
		wall time.Duration
		err  error
	}
	done := make(chan result, 1)
	// Two thirds in, the game is in full swing: the heap then (and, with
	// LAGSCOPE_HEAPPROFILE=FILE, a heap profile for go tool pprof).
	var midHeap atomic.Uint64
	mid := time.AfterFunc(length*2/3, func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		midHeap.Store(ms.HeapInuse)
		if path := os.Getenv("LAGSCOPE_HEAPPROFILE"); path != "" {
			if f, err := os.Create(path); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	})
	defer mid.Stop()
	go func() {
		cpu0, _ := processCPU()
		start := time.Now()
		err := RunDemo(RunConfig{Cmd: "demo", Name: "you", Duration: length, Stdout: pw},
			DemoConfig{Players: players, Profile: profile, Seed: 1, Spike: true})
		wall := time.Since(start)
		cpu1, _ := processCPU()
		pw.Close()
		done <- result{cpu1 - cpu0, wall, err}
	}()
	type point struct {
		t     float64
		frame int
	}
	var (
		points             []point
		maxWait, calmWait  float64
		maxLate            float64
		sent               int
		stalls, links, evs int
	)
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e struct {
			Type    string   `json:"type"`
			Frame   int      `json:"frame"`
			TMs     *float64 `json:"t_ms"`
			WaitMs  float64  `json:"wait_ms"`
			Process *struct {
				MaxLateMs float64 `json:"max_late_ms"`
				Sent      int     `json:"datagrams_sent"`
			} `json:"process"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		evs++
		switch e.Type {
		case "stall":
			stalls++
			maxWait = max(maxWait, e.WaitMs)
			// Outside the scripted spike and the Wi-Fi interference
			// (spikeStart…calmAt): the waits the process causes itself.
			if at := time.Duration(*e.TMs * float64(time.Millisecond)); at < spikeStart || at > calmAt+5*time.Second {
				calmWait = max(calmWait, e.WaitMs)
			}
		case "link":
			links++
		case "summary":
			if e.Process != nil {
				maxLate, sent = e.Process.MaxLateMs, e.Process.Sent
			}
		}
		if e.TMs != nil && e.Frame > 0 && e.Type != "summary" {
			points = append(points, point{*e.TMs, e.Frame})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	// fps between two times: frames executed over the time between the
	// first and last events seen in the window.
	fps := func(from, to float64) float64 {
		var a, b *point
		for i := range points {
			if pt := &points[i]; pt.t >= from && pt.t <= to {
				if a == nil {
					a = pt
				}
				b = pt
			}
		}
		if a == nil || b.t <= a.t {
			return 0
		}
		return float64(b.frame-a.frame) / ((b.t - a.t) / 1000)
	}
	end := float64(length / time.Millisecond)
	calm := float64((calmAt + 5*time.Second) / time.Millisecond)
	frames := 0
	if len(points) > 0 {
		frames = points[len(points)-1].frame
	}
	// CPU per machine and frame: what the process spends to run one
	// frame on one machine, whatever else the box is doing.
	perFrame := time.Duration(0)
	if frames > 0 {
		perFrame = res.cpu / time.Duration(frames*players)
	}
	t.Logf("demo --players %d --profile %s for %v: %.1f fps over the game, %.1f fps after %v; %d stalls, largest wait %.0f ms (%.0f ms outside %v…%v), driver late by up to %.0f ms; %.2f cores, %v CPU per machine-frame (%d frames); peak RSS %d MiB, heap in use %d MiB at %v; %d events (%d link lines); %d datagrams sent",
		players, profile, length, fps(0, end), fps(calm, end), calmAt+5*time.Second, stalls, maxWait, calmWait, spikeStart, calmAt+5*time.Second, maxLate,
		float64(res.cpu)/float64(res.wall), perFrame.Round(time.Microsecond), frames, procStatus("VmHWM")/1024, midHeap.Load()>>20, length*2/3, evs, links, sent)
}

// TestScaleSockets runs 64 machines (LAGSCOPE_PLAYERS), each a live session
// with its own UDP socket on 127.0.0.1 and its own driver, as 64
// `lagscope join` processes would, minus the process: no impairment, so the
// master comes down to the lowest rung the round trips allow (S9). At 64
// machines the first decisions, taken while the lobby's handshakes still
// load the box, keep rung 3 for a while; the test waits (up to two
// minutes) until rung 1 is in force, then measures LAGSCOPE_SECONDS
// (default 30) and reports fps, the highest rung in force during the
// measurement, RSS and CPU per machine. Without rung 1 in two minutes it
// measures at the rung it has and says so.
func TestScaleSockets(t *testing.T) {
	players, length := longScale(t)
	if os.Getenv("LAGSCOPE_SECONDS") == "" {
		length = 30 * time.Second
	}
	var socks []*netcore.UDPTransport
	var runners []*Runner
	defer func() {
		for _, r := range runners {
			r.Abort()
		}
		for _, r := range runners {
			_ = r.Wait()
		}
		for _, s := range socks {
			s.Close()
		}
	}()
	start := time.Now()
	for i := range players {
		udp, err := netcore.ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		socks = append(socks, udp)
		c := session.Config{Name: fmt.Sprintf("m%d", i), Players: players, CommandsPerMinute: liveCommandsPerMinute,
			Seed: uint64(i), FrameClock: frameClock()}
		var s *session.Session
		if i == 0 {
			s, err = session.NewHost(c, udp)
		} else {
			s, err = session.NewJoiner(c, session.RolePlayer, udp, socks[0].LocalAddr())
		}
		if err != nil {
			t.Fatal(err)
		}
		runners = append(runners, Run(s, udp, Options{Start: start, Publish: i == 0}))
	}
	// Your machine publishes: wait until its game runs at rung 1.
	you := runners[0]
	deadline := time.After(60 * time.Second)
	running := false
	var last feed.View
	for !running {
		select {
		case u, ok := <-you.Updates():
			if !ok {
				t.Fatal("the host ended before the game ran")
			}
			last = u.View
			// Past the master's first decisions (frame 128 on, S10).
			running = u.View.Started && u.View.Frame > 400
		case <-deadline:
			t.Fatalf("no game past frame 400 within 60 s: started %v, frame %d, timing %+v, %d players seated", last.Started, last.Frame, last.InForce, len(last.Players))
		}
	}
	firstTiming := last.InForce
	atRung1 := time.After(2 * time.Minute)
	for waiting := last.InForce.Rung() != 1; waiting; {
		select {
		case u, ok := <-you.Updates():
			if !ok {
				t.Fatal("the host ended before rung 1")
			}
			last = u.View
			waiting = u.View.InForce.Rung() != 1
		case <-atRung1:
			t.Logf("rung 1 not in force within two minutes of frame 400: measuring at %d/%d", last.InForce.SendPeriod, last.InForce.LookAhead)
			waiting = false
		}
	}
	joined, timing := time.Since(start), last.InForce
	var frame, highest atomic.Int64
	var endView atomic.Pointer[feed.View]
	go func() {
		for u := range you.Updates() {
			frame.Store(int64(u.View.Frame))
			endView.Store(&u.View)
			if r := int64(u.View.InForce.Rung()); r > highest.Load() {
				highest.Store(r)
			}
		}
	}()
	cpu0, _ := processCPU()
	t0 := time.Now()
	time.Sleep(200 * time.Millisecond)
	f0 := frame.Load()
	time.Sleep(length)
	wall := time.Since(t0)
	cpu1, _ := processCPU()
	fps := float64(frame.Load()-f0) / length.Seconds()
	rss := procStatus("VmRSS")
	if path := os.Getenv("LAGSCOPE_HEAPPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var sent, recv uint64
	for _, s := range socks {
		st := s.Stats()
		sent += st.Sent
		recv += st.Received
	}
	cores := float64(cpu1-cpu0) / float64(wall)
	// What the master decides on at the end: the worst reported round
	// trip and wait (S5) and the rung in force.
	var endRung int
	var worstRTT, worstWait time.Duration
	if v := endView.Load(); v != nil {
		endRung = v.InForce.Rung()
		for _, pl := range v.Players {
			if r := pl.Report; r != nil {
				if r.RTT != nil {
					worstRTT = max(worstRTT, *r.RTT)
				}
				worstWait = max(worstWait, r.Wait)
			}
		}
	}
	t.Logf("past frame 400 at %d/%d (rung %d); measured from %v; during it rung %d at most, rung %d at the end: worst reported round trip %v, worst reported wait %v",
		firstTiming.SendPeriod, firstTiming.LookAhead, firstTiming.Rung(), joined.Round(100*time.Millisecond), max(highest.Load(), int64(timing.Rung())), endRung, worstRTT, worstWait)
	t.Logf("%d machines on their own sockets, measuring from %.1f s at %d/%d (rung %d); over %v: %.1f fps, %.2f cores in all, %.2f %% of a core per machine; RSS %d MiB in all, %.2f MiB per machine (heap in use %d MiB); %d datagrams sent, %d received since the start",
		players, joined.Seconds(), timing.SendPeriod, timing.LookAhead, timing.Rung(), length, fps, cores, 100*cores/float64(players), rss/1024, float64(rss)/1024/float64(players), ms.HeapInuse>>20, sent, recv)
}

// BenchmarkPlayDemo64 plays the 64-player demo for 20 s in virtual time
// (PlayDemo: the same sessions and plan on the simulated network, no
// sockets): the engine's own CPU per machine and frame, free of the
// kernel's loopback and of whatever else the machine runs.
func BenchmarkPlayDemo64(b *testing.B) {
	const players, length = 64, 20 * time.Second
	b.ReportAllocs()
	var frames int
	for b.Loop() {
		ups, err := PlayDemo(DemoConfig{Players: players, Profile: "mix", Seed: 1, Spike: true}, length, 100*time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		frames = ups[len(ups)-1].View.Frame
	}
	b.ReportMetric(float64(frames), "frames")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(frames*players), "ns/machine-frame")
}
