package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// hopsRun runs a scenario with machine ada tracing bob, and returns the
// path events ada printed of that link and every probe any machine sent.
func hopsRun(t *testing.T, doc string) (paths []feed.PathEvent, probes []sentProbe) {
	t.Helper()
	sc, err := ParseScenario(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Trace: map[string]string{"ada": "bob"}}
	opt.onProbe = func(m string, at time.Duration, to netip.AddrPort, hops int) {
		probes = append(probes, sentProbe{m, at, to, hops})
	}
	opt.OnLine = func(_ time.Duration, from string, line []byte) {
		if from != "ada" || !bytes.HasPrefix(line, []byte(`{"type":"path"`)) {
			return
		}
		var e feed.PathEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if e.To == "bob" {
			paths = append(paths, e)
		}
	}
	if _, err := RunWith(sc, io.Discard, opt); err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("ada printed no path event")
	}
	return paths, probes
}

type sentProbe struct {
	machine string
	at      time.Duration
	to      netip.AddrPort
	ttl     int
}

func shippedHops(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", "hops.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The shipped hops scenario, traced by ada toward bob on the virtual
// clock for 300 s (long enough for about 90 outcomes a hop past the silent
// one's timeouts): delay starts at her uplink (hop 2, 120 ms of her 150),
// the router that answers one probe in 5 s is judged rate limited, the
// loss on the link out of hop 4 starts at hop 5 and persists to bob, the
// silent hop 6 has no address and the trace goes on past it, and bob's
// home router answers from bob's address one hop before bob.
func TestTraceThroughSimulatedHops(t *testing.T) {
	doc := strings.Replace(shippedHops(t), `"frames": 3000`, `"frames": 9000`, 1)
	paths, _ := hopsRun(t, doc)
	last := paths[len(paths)-1]
	if !last.Available || !last.Complete || len(last.Hops) != 9 || last.To != "bob" {
		t.Fatalf("last path %+v: want 9 hops to bob, complete", last.PathStat)
	}
	if d := last.DelayStarts; d == nil || d.TTL != 2 || d.Link != "uplink" || math.Abs(d.AddedMs-119) > 3 {
		t.Errorf("delay_starts %+v, want ttl 2 (uplink) adding about 119 ms", d)
	}
	if l := last.LossStarts; l == nil || l.TTL != 5 {
		t.Errorf("loss_starts %+v, want ttl 5, the hop after the lossy one", l)
	}
	for _, h := range last.Hops {
		if want := h.TTL == 3; h.RateLimited != want {
			t.Errorf("hop %d rate_limited %v, want %v", h.TTL, h.RateLimited, want)
		}
	}
	if h := last.Hops[5]; h.Addr != nil || h.Loss != 1 || h.Sent < 10 {
		t.Errorf("silent hop 6: %+v, want no address, all lost", h)
	}
	bob := netip.MustParseAddr("127.77.0.2")
	for _, i := range []int{6, 7, 8} {
		if h := last.Hops[i]; h.RTTMs == nil || h.Addr == nil {
			t.Fatalf("hop %d past the silent one did not answer: %+v", h.TTL, h)
		}
	}
	if a := *last.Hops[7].Addr; a != bob || last.Hops[8].Link != "peer" {
		t.Errorf("hop 8 answers from %v, want bob's %v; hop 9 %q", a, bob, last.Hops[8].Link)
	}
	if r := *last.Hops[1].RTTMs; math.Abs(r-120) > 2 {
		t.Errorf("hop 2 median %.1f ms, want about 120", r)
	}
}

// The loss of one hop, measured by the trace, is the scenario's within
// three binomial standard deviations of the probes it counts (the last
// minutes', at a round a second: ±5.6 points over 256); the seed makes
// the number repeat exactly.
func TestTraceMeasuresAHopsLoss(t *testing.T) {
	doc := `{"frames":9000,"seed":5,"players":["ada","bob"],"network":{"rtt_ms":20},
	 "access":{"ada":{"rtt_ms":30,"hops":[{"addr":"192.168.1.1","rtt_ms":1},{"addr":"10.0.0.1","rtt_ms":10,"loss":0.1},{"addr":"100.64.0.1","rtt_ms":20}]}}}`
	paths, _ := hopsRun(t, doc)
	last := paths[len(paths)-1]
	if len(last.Hops) != 4 {
		t.Fatalf("hops %+v", last.Hops)
	}
	if h := last.Hops[1]; h.Loss != 0 {
		t.Errorf("the lossy hop loses %v of its own probes, want 0: its loss is on the link out of it", h.Loss)
	}
	l := last.LossStarts
	if l == nil || l.TTL != 3 || math.Abs(l.Loss-0.1) > 0.08 {
		t.Fatalf("loss_starts %+v, want ttl 3 at about 10 %%", l)
	}
	if h := last.Hops[3]; h.Sent < 200 || math.Abs(h.Loss-0.1) > 3*math.Sqrt(0.1*0.9/float64(h.Sent)) {
		t.Errorf("the peer: %+v, want the last minutes' outcomes losing about 10 %%", h)
	}
	if l := last.Hops[3].LossCI; l[0] > 0.1 || l[1] < 0.1 {
		t.Errorf("the peer's loss interval %v leaves out the scenario's 10 %%", l)
	}
	again, _ := hopsRun(t, doc)
	a, _ := json.Marshal(again[len(again)-1].PathStat)
	b, _ := json.Marshal(last.PathStat)
	if !bytes.Equal(a, b) {
		t.Error("the same seed traced a different path")
	}
}

// The tracer's budget holds in sim: at most 20 probes in any second of
// virtual time per machine, at most one a second to any router, no hop
// limit past 30. Ada's 26 quick routers could take more: the machine's
// cap is what binds.
func TestTraceCapsHoldOnTheVirtualClock(t *testing.T) {
	var hops []string
	for i := range 26 {
		hops = append(hops, fmt.Sprintf(`{"addr":"10.1.0.%d","rtt_ms":%d}`, i+1, i+1))
	}
	doc := `{"frames":1800,"seed":3,"players":["ada","bob"],"access":{"ada":{"rtt_ms":40,"hops":[` + strings.Join(hops, ",") + `]}}}`
	_, probes := hopsRun(t, doc)
	byMachine := map[string][]time.Duration{}
	lastTo := map[string]time.Duration{}
	for _, p := range probes {
		if p.ttl < 1 || p.ttl > 30 {
			t.Fatalf("probe with hop limit %d", p.ttl)
		}
		// Hops 1–26 are ada's routers; 27 and on reach bob.
		who := fmt.Sprintf("%s>%d", p.machine, min(p.ttl, 27))
		if at, ok := lastTo[who]; ok && p.at-at < time.Second {
			t.Fatalf("%s probed %v after the last, under a second", who, p.at-at)
		}
		lastTo[who] = p.at
		byMachine[p.machine] = append(byMachine[p.machine], p.at)
	}
	ada := byMachine["ada"]
	busiest := 0
	for i := range ada {
		n := 0
		for j := i; j < len(ada) && ada[j]-ada[i] < time.Second; j++ {
			n++
		}
		busiest = max(busiest, n)
	}
	if busiest > 20 || busiest < 18 {
		t.Fatalf("ada's busiest second holds %d probes, want the cap of 20 reached and never passed", busiest)
	}
}

func TestScenarioHopErrorsNameTheKey(t *testing.T) {
	hops := func(access, list string) string {
		return `{"frames":10,"players":["a","b"],"access":{"a":{` + access + `"hops":[` + list + `]}}}`
	}
	var many []string
	for i := range 31 {
		many = append(many, fmt.Sprintf(`{"addr":"10.0.0.%d","rtt_ms":%d}`, i+1, i+1))
	}
	cases := map[string]string{
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":5,"colour":1}`):                     `"colour"`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.300","rtt_ms":5}`):                              `a.hops[0].addr`,
		hops(`"rtt_ms":50,`, `{"addr":"127.0.0.1","rtt_ms":5}`):                               `not a router's`,
		hops(`"rtt_ms":50,`, `{"addr":"fe80::1%eth0","rtt_ms":5}`):                            `zone`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":5},{"addr":"10.0.0.2","rtt_ms":5}`): `a.hops[1].rtt_ms`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":60}`):                               `past the access link's rtt_ms`,
		hops(``, `{"addr":"10.0.0.1","rtt_ms":1}`):                                            `past the access link's rtt_ms`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1"}`):                                           `needs its round trip`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":5,"loss":1}`):                       `a.hops[0].loss`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":5,"icmp_every_ms":-1}`):             `icmp_every_ms`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":5},{"addr":"10.0.0.1","rtt_ms":6}`): `twice`,
		hops(`"rtt_ms":50,`, strings.Join(many, ",")):                                         `31 hops, at most 30`,
		hops(`"rtt_ms":50,`, `{"addr":7,"rtt_ms":5}`):                                         `addr`,
		hops(`"rtt_ms":50,`, `{"addr":"10.0.0.1","rtt_ms":5,"quote":"some"}`):                 `a.hops[0].quote`,
	}
	for in, want := range cases {
		_, err := ParseScenario(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%.120s: error %v, want one line containing %s", in, err, want)
		}
	}
	ok := hops(`"rtt_ms":50,`, `{"addr":"192.168.1.1","rtt_ms":1},{"addr":null},{"rtt_ms":9},{"addr":"2001:db8::1","rtt_ms":10,"loss":0.5,"icmp_every_ms":1000,"quote":"headers"},{"addr":"10.0.0.9","rtt_ms":11,"quote":"all"}`)
	if _, err := ParseScenario(strings.NewReader(ok)); err != nil {
		t.Fatalf("a good list refused: %v", err)
	}
}

func TestParseTrace(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader(`{"frames":10,"players":["ada","bob","x:y"],"observers":["ovo"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTrace(sc, []string{"ada:bob", "x:y:ada", "ovo:ada"})
	if err != nil || got["ada"] != "bob" || got["x:y"] != "ada" || got["ovo"] != "ada" || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range [][]string{{"ada"}, {"ada:zed"}, {"ada:ada"}, {"ada:bob", "ada:ovo"}, {""}} {
		if _, err := ParseTrace(sc, bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want a one-line error", bad, err)
		}
	}
}

// FuzzParseScenarioHops: no `hops` list makes the decoder panic, and what
// it accepts the network can carry: at most 30 routers, round trips that
// grow and stay within the access link's, losses below 1.
func FuzzParseScenarioHops(f *testing.F) {
	f.Add([]byte(shippedHopsSeed))
	f.Add([]byte(`{"frames":3,"players":["a"],"access":{"a":{"rtt_ms":5,"hops":[{"addr":null},{"addr":"::1"}]}}}`))
	f.Add([]byte(`{"frames":3,"players":["a"],"access":{"a":{"rtt_ms":5,"hops":[{"rtt_ms":5},{"rtt_ms":4}]}},"timeline":[{"at_ms":1,"access":{"a":{"hops":[]}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := ParseScenario(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, access := range append([]map[string]AccessSpec{sc.Access}, timelineAccess(sc)...) {
			for name, a := range access {
				rs := routers(a.Hops)
				if len(rs) > maxAccessHops {
					t.Fatalf("%s: %d routers accepted", name, len(rs))
				}
				up, _ := a.profiles()
				for i, r := range rs {
					if r.Loss < 0 || r.Loss >= 1 || r.ICMPEvery < 0 || r.RTT > 2*up.Delay+time.Millisecond ||
						(i > 0 && r.RTT < rs[i-1].RTT) || (r.Addr.IsValid() && (r.Addr.IsLoopback() || r.Addr.Zone() != "")) {
						t.Fatalf("%s: accepted router %d %+v", name, i, r)
					}
				}
			}
		}
	})
}

const shippedHopsSeed = `{"frames":3,"players":["a","b"],"access":{"a":{"rtt_ms":150,"jitter_ms":1,"hops":[` +
	`{"addr":"192.168.1.1","rtt_ms":1},{"addr":"10.20.0.1","rtt_ms":120},{"addr":"100.64.0.1","rtt_ms":125,"icmp_every_ms":5000},` +
	`{"addr":"100.64.1.1","rtt_ms":128,"loss":0.1},{"addr":null,"rtt_ms":135}]},"b":{"rtt_ms":10,"hops":[{"addr":"192.168.7.1","rtt_ms":2}]}}}`
