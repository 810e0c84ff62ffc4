package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/simnet"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// stallAt is a stall line and the run's clock when it was printed.
type stallAt struct {
	at    time.Duration
	who   string
	cause string
	wait  float64
}

// loadRunOf runs a scenario and returns its output, its load events in
// the order they were printed and its stalls; also, when set, sees every
// line.
func loadRunOf(t *testing.T, sc *Scenario, also func(from string, line []byte)) (out []byte, loads []feed.LoadEvent, stalls []stallAt, res *Result) {
	t.Helper()
	opt := Options{OnLine: func(at time.Duration, from string, line []byte) {
		if also != nil {
			also(from, line)
		}
		switch {
		case bytes.HasPrefix(line, []byte(`{"type":"load",`)):
			var e feed.LoadEvent
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if e.From != from || e.TMs == nil || units.FromMillis(*e.TMs) != at {
				t.Fatalf("load line %s printed by %q at %v: want the tester's, stamped with the run's clock", line, from, at)
			}
			loads = append(loads, e)
		case bytes.HasPrefix(line, []byte(`{"type":"stall"`)):
			var e feed.StallEvent
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			stalls = append(stalls, stallAt{at, e.Player, e.Cause, e.WaitMs})
		}
	}}
	var buf bytes.Buffer
	res, err := RunWith(sc, &buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), loads, stalls, res
}

func shipped(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// depth is how long a queue of kb kB takes to drain at mbit Mbit/s.
func depth(mbit, kb float64) float64 { return kb * 1000 * 8 / (mbit * 1e6) * 1000 }

// dgram is how long one full load datagram (1400 bytes and 28 of headers,
// at most) takes at mbit Mbit/s: the room a full queue's tail leaves.
func dgram(mbit float64) float64 { return 1428 * 8 / (mbit * 1e6) * 1000 }

// The shipped bufferbloat scenario, on the virtual clock: ada's deep
// upload queue (625 kB at 10 Mbit/s, 500 ms) adds its depth under load
// and grades F, her shallow download and bob's shallow queues grade A or
// A+; each added round trip is the queue's depth, less at most the room a
// full queue's tail leaves free; the tail drops what the test's 110 %
// sends too much. Bob's test, asked for 2 s after ada's began, waits for
// hers to end. While ada's upload queue is full the game's own packets
// wait in it: hal and bob stall for her, and only then.
func TestLoadTestGradesTheLinesQueues(t *testing.T) {
	_, loads, stalls, _ := loadRunOf(t, parse(t, shipped(t, "bufferbloat.json")), nil)
	if len(loads) != 2 || loads[0].From != "ada" || loads[1].From != "bob" {
		t.Fatalf("load events %+v, want ada's then bob's", loads)
	}
	ada, bob := loads[0], loads[1]
	for _, e := range loads {
		r := e.Result
		if r.Stopped != nil || r.Upload == nil || r.Download == nil || r.Both == nil || r.IdleRTTMS == nil {
			t.Fatalf("%s's test incomplete: %+v", e.From, r)
		}
		if r.Upload.Capped || r.Download.Capped {
			t.Errorf("%s's test capped (up %v, down %v): every line here is below the 25 Mbit/s cap", e.From, r.Upload.Capped, r.Download.Capped)
		}
		for dir, l := range map[string]*float64{"upload": r.Upload.Loss, "download": r.Download.Loss} {
			if l == nil || *l < 0.06 || *l > 0.12 {
				t.Errorf("%s's %s loss %v, want about 1 - 1/1.1 = 0.091: the tail drops the 10 %% excess", e.From, dir, l)
			}
		}
	}
	check := func(who, dir string, got *float64, grade *string, want, room float64, wantGrade ...string) {
		t.Helper()
		if got == nil || *got > want+0.5 || *got < want-room {
			t.Errorf("%s %s added %v ms, want the queue's %.1f ms less at most %.1f", who, dir, got, want, room)
		}
		if grade == nil || !contains(wantGrade, *grade) {
			t.Errorf("%s %s grade %s, want %v", who, dir, str(grade), wantGrade)
		}
	}
	check("ada", "upload", ada.Result.Upload.AddedMS, ada.Result.Upload.Grade, depth(10, 625), 2*dgram(10), "F")
	check("ada", "download", ada.Result.Download.AddedMS, ada.Result.Download.Grade, depth(20, 32), 2*dgram(20), "A")
	check("bob", "upload", bob.Result.Upload.AddedMS, bob.Result.Upload.Grade, depth(5, 4), 2*dgram(5), "A+", "A")
	check("bob", "download", bob.Result.Download.AddedMS, bob.Result.Download.Grade, depth(15, 16), 2*dgram(15), "A+", "A")
	if b := ada.Result.Both.AddedMS; b == nil || *b < depth(10, 625) || *b > depth(10, 625)+depth(20, 32)+1 {
		t.Errorf("ada both added %v ms, want about both queues' %.1f ms", b, depth(10, 625)+depth(20, 32))
	}
	adaEnd, bobEnd := *ada.TMs, *bob.TMs
	if adaEnd < 10_000+17_000 || adaEnd > 10_000+30_000 || bobEnd < adaEnd+17_000 {
		t.Errorf("ada's test ended at %.0f ms, bob's at %.0f: want ada's 17–30 s after 10 s, bob's a whole test after hers", adaEnd, bobEnd)
	}
	if c := ada.Result.Cost; c == nil || c.FramesLate == 0 {
		t.Errorf("ada's cost %+v: the game's packets waited behind her load", c)
	}
	long := map[bool]int{}
	for _, s := range stalls {
		if s.wait >= 50 && s.who != "ada" && s.cause == "ada" {
			during := s.at >= 10*time.Second && s.at <= time.Duration(adaEnd*float64(time.Millisecond))+time.Second
			long[during]++
		}
	}
	if long[true] < 30 || long[false] != 0 {
		t.Errorf("long stalls for ada: %d during her test, %d outside it; want many, and none", long[true], long[false])
	}
}

// A peer that takes no tests refuses at once: the tester prints one load
// line, stopped "peer refused" with every figure null, and the game runs
// its course as it runs with no test asked for — no load was sent. (The
// session's notes of the test's beginning and result travel on the
// reliable channel: round trips and link counts gain their samples.)
func TestLoadTestRefusedInTheSim(t *testing.T) {
	sc := parse(t, shipped(t, "load_refused.json"))
	withTest, loads, _, res := loadRunOf(t, sc, nil)
	if len(loads) != 1 || loads[0].Result.Stopped == nil || *loads[0].Result.Stopped != "peer refused" {
		t.Fatalf("load events %+v, want one stopped peer refused", loads)
	}
	r := loads[0].Result
	if r.Upload != nil || r.Download != nil || r.Both != nil || r.IdleRTTMS != nil || r.Cost != nil {
		t.Errorf("a refused test has figures: %+v", r)
	}
	if at := *loads[0].TMs; at < 2000 || at > 2500 {
		t.Errorf("refused at %.0f ms, want soon after the 2000 it was asked for", at)
	}
	if res.Network.QueueDropped != 0 {
		t.Errorf("ada's queue dropped %d datagrams: load was sent", res.Network.QueueDropped)
	}
	sc.LoadTests = nil
	var without bytes.Buffer
	if _, err := Run(sc, &without); err != nil {
		t.Fatal(err)
	}
	course := func(out string) string {
		var game []string
		for _, l := range strings.SplitAfter(out, "\n") {
			for _, k := range []string{"stall", "timing", "timing_active", "master", "removed", "message"} {
				if strings.HasPrefix(l, `{"type":"`+k+`"`) {
					game = append(game, l)
				}
			}
		}
		return strings.Join(game, "")
	}
	if course(string(withTest)) != course(without.String()) {
		t.Errorf("the refused test changed the game's course")
	}
}

// With routers on ada's access link the queue sits past her first one:
// a trace of her link during her test sees hop 1 as fast as ever, hop 2
// (her uplink) and the peer behind the queue, and the test's where names
// her uplink with what the queue adds.
func TestLoadTestQueueSitsPastTheFirstRouter(t *testing.T) {
	doc := shipped(t, "bufferbloat.json")
	doc = strings.Replace(doc, `"ada": {"rtt_ms": 10, `, `"ada": {"rtt_ms": 10, "hops": [{"addr": "192.168.1.1", "rtt_ms": 1}, {"addr": "100.64.0.1", "rtt_ms": 8}], `, 1)
	doc = strings.Replace(doc, `"frames": 1800`, `"frames": 1100`, 1)
	sc := parse(t, doc)
	if len(sc.Access["ada"].Hops) != 2 {
		t.Fatal("the hops did not go in")
	}
	worst := map[int]float64{}
	_, loads, _, _ := loadRunOf(t, sc, func(from string, line []byte) {
		if from != "ada" || !bytes.HasPrefix(line, []byte(`{"type":"path"`)) {
			return
		}
		var e feed.PathEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		for _, h := range e.Hops {
			if h.WorstMs != nil {
				worst[h.TTL] = max(worst[h.TTL], *h.WorstMs)
			}
		}
	})
	if len(loads) != 1 || loads[0].Result.Where == nil {
		t.Fatalf("load events %+v, want ada's with a where", loads)
	}
	// The where reads the holds alone: it adds about what the queue holds
	// (its hop-2 median over the hold minus hop 1's), not a mix of the
	// idle and the loaded line.
	if w := loads[0].Result.Where; w.Link != "uplink" || w.TTL != 2 || w.AddedMS < 0.75*depth(10, 625) || w.AddedMS > 1.1*depth(10, 625) {
		t.Errorf("where %+v, want ada's uplink, hop 2, adding about the queue's %.0f ms", w, depth(10, 625))
	}
	if worst[1] > 2 || worst[2] < depth(10, 625)-10 || worst[3] < depth(10, 625) {
		t.Errorf("worst round trips by hop %v: want hop 1 at its 1 ms, hop 2 and the peer past the queue's %.0f ms", worst, depth(10, 625))
	}
}

// A timeline entry's access replaces a player's whole, queue included:
// with ada's queue taken away before her test, her upload has no
// bottleneck below the cap.
func TestLoadTestQueueGoesWithTheAccess(t *testing.T) {
	doc := shipped(t, "bufferbloat.json")
	doc = strings.Replace(doc, `"frames": 1800`, `"frames": 1100, "timeline": [{"at_ms": 0, "access": {"ada": {"rtt_ms": 10}}}]`, 1)
	doc = strings.Replace(doc, `,
    {"from": "bob", "to": "hal", "at_ms": 12000}`, ``, 1)
	_, loads, _, _ := loadRunOf(t, parse(t, doc), nil)
	if len(loads) != 1 || loads[0].Result.Upload == nil || loads[0].Result.Download == nil {
		t.Fatalf("load events %+v, want ada's, complete", loads)
	}
	up, down := loads[0].Result.Upload, loads[0].Result.Download
	if !up.Capped || str(up.Grade) != "A+" || !down.Capped || str(down.Grade) != "A+" {
		t.Errorf("upload %+v download %+v: want both capped at A+, no queue left", up, down)
	}
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestQueueAndLoadErrorsNameTheKey(t *testing.T) {
	base := func(extra string) string {
		return `{"frames":10,"players":["a","b"],"observers":["o"]` + extra + `}`
	}
	queue := func(q string) string { return base(`,"access":{"a":{"queue":{` + q + `}}}`) }
	cases := map[string]string{
		queue(`"up_mbit":0`):                       `a.queue.up_mbit`,
		queue(`"down_mbit":20000`):                 `a.queue.down_mbit`,
		queue(`"up_buffer_kb":64`):                 `needs the line's rate, up_mbit`,
		queue(`"down_mbit":10,"down_buffer_kb":1`): `a.queue.down_buffer_kb`,
		queue(`"up_mbit":10,"up_buffer_kb":1e6`):   `a.queue.up_buffer_kb`,
		queue(`"up_mbit":"ten"`):                   `up_mbit`,
		queue(`"up_kbit":10`):                      `"up_kbit"`,
		base(`,"timeline":[{"at_ms":1,"access":{"b":{"queue":{"down_mbit":-1}}}}]`): `timeline[0].access.b.queue.down_mbit`,
		base(`,"load_tests":[{"from":"a","to":"z","at_ms":1}]`):                     `load_tests[0].to`,
		base(`,"load_tests":[{"from":"o","to":"a","at_ms":1}]`):                     `load_tests[0].from`,
		base(`,"load_tests":[{"from":"a","to":"a","at_ms":1}]`):                     `cannot test against itself`,
		base(`,"load_tests":[{"from":"a","to":"b"}]`):                               `load_tests[0].at_ms`,
		base(`,"load_tests":[{"from":"a","to":"b","at_ms":-5}]`):                    `load_tests[0].at_ms`,
		base(`,"load_tests":[{"from":"a","to":"b","at_ms":1,"wait":true}]`):         `"wait"`,
		base(`,"no_load_tests":["a","a"]`):                                          `"a" appears twice`,
		base(`,"no_load_tests":["o"]`):                                              `no_load_tests`,
		base(`,"no_load_tests":true`):                                               `no_load_tests`,
		base(`,"load_cap_mbit":{"a":0.5}`):                                          `load_cap_mbit.a`,
		base(`,"load_cap_mbit":{"z":5}`):                                            `load_cap_mbit`,
	}
	var many []string
	for range maxLoadTests + 1 {
		many = append(many, `{"from":"a","to":"b","at_ms":1}`)
	}
	cases[base(`,"load_tests":[`+strings.Join(many, ",")+`]`)] = fmt.Sprintf("at most %d", maxLoadTests)
	for in, want := range cases {
		_, err := ParseScenario(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%.140s: error %v, want one line containing %s", in, err, want)
		}
	}
	ok := base(`,"access":{"a":{"queue":{"up_mbit":10,"up_buffer_kb":625,"down_mbit":0.01}},"b":{"queue":{}}},` +
		`"load_tests":[{"from":"a","to":"b","at_ms":0},{"from":"b","to":"a","at_ms":1e10}],"no_load_tests":["b"],"load_cap_mbit":{"a":1,"b":10000}`)
	sc, err := ParseScenario(strings.NewReader(ok))
	if err != nil {
		t.Fatalf("good keys refused: %v", err)
	}
	up, down := sc.Access["a"].Queue.queues()
	if up != (simnet.Queue{Rate: 10e6, Limit: 625_000}) || down != (simnet.Queue{Rate: 1e4, Limit: defaultBufferKB * 1000}) {
		t.Errorf("queues %+v %+v, want 10 Mbit/s holding 625 kB, and 0.01 Mbit/s holding the default", up, down)
	}
	if c := sc.loadConfig("a"); c.Cap != 1e6 || c.Refuse {
		t.Errorf("a's load config %+v", c)
	}
	if c := sc.loadConfig("b"); c.Cap != 10e9 || !c.Refuse {
		t.Errorf("b's load config %+v", c)
	}
}

// FuzzParseScenarioLoad: no queue or load key makes the decoder panic,
// and what it accepts the network and the sessions can take: queues
// with a rate hold at least a datagram, tests are between two players,
// caps are within --load-cap's bounds.
func FuzzParseScenarioLoad(f *testing.F) {
	f.Add([]byte(shipped(f, "bufferbloat.json")))
	f.Add([]byte(shipped(f, "load_refused.json")))
	f.Add([]byte(`{"frames":3,"players":["a","b"],"access":{"a":{"queue":{"down_mbit":1}}},"timeline":[{"at_ms":1,"access":{"a":{"queue":{"up_mbit":1,"up_buffer_kb":1.5}}}}]}`))
	f.Add([]byte(`{"frames":3,"players":["a","b"],"load_tests":[{"from":"b","to":"a","at_ms":0}],"load_cap_mbit":{"b":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := ParseScenario(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, access := range append([]map[string]AccessSpec{sc.Access}, timelineAccess(sc)...) {
			for name, a := range access {
				up, down := a.Queue.queues()
				for _, q := range []simnet.Queue{up, down} {
					if q.Rate < 0 || (q.Rate > 0 && q.Limit < 1428) || q.Rate > maxQueueMbit*1e6 {
						t.Fatalf("%s: accepted queue %+v", name, q)
					}
				}
				simnet.NewNetwork(simnet.NewScheduler(), 1).SetAccessQueue(netip.MustParseAddrPort("127.77.0.1:7373"), up, down)
			}
		}
		for _, lt := range sc.LoadTests {
			if lt.From == lt.To || !contains(sc.Players, lt.From) || !contains(sc.Players, lt.To) || lt.AtMs == nil {
				t.Fatalf("accepted load test %+v", lt)
			}
		}
		for _, n := range append(append([]string{}, sc.Players...), sc.Observers...) {
			if c := sc.loadConfig(n).Cap; c != 0 && (c < 1e6 || c > 10e9) {
				t.Fatalf("accepted cap %d for %q", c, n)
			}
		}
	})
}

// While a test runs, its Link view shows where its own trace puts the
// delay, read over each loaded hold alone; during the upload hold, the
// tester's uplink: hop 2 past a router on ada's access link, and hop 1
// when there is none and the peer is the first hop (the trace calls that
// link the peer's; in the upload hold only the tester sends, so the queue
// is its own way out).
func TestLoadTestRunningWhereNamesTheUplink(t *testing.T) {
	for _, c := range []struct {
		name     string
		hops     bool
		wantTTL  int
		wantLink string
	}{
		{"past a router", true, 2, "uplink"},
		{"peer at hop 1", false, 1, "uplink"},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := shipped(t, "bufferbloat.json")
			if c.hops {
				doc = strings.Replace(doc, `"ada": {"rtt_ms": 10, `, `"ada": {"rtt_ms": 10, "hops": [{"addr": "192.168.1.1", "rtt_ms": 1}, {"addr": "100.64.0.1", "rtt_ms": 8}], `, 1)
			}
			doc = strings.Replace(doc, `"frames": 1800`, `"frames": 1100`, 1)
			sc := parse(t, doc)
			var trace map[string]string
			if !c.hops {
				var err error
				if trace, err = ParseTrace(sc, []string{"ada:hal"}); err != nil {
					t.Fatal(err)
				}
			}
			var seen []string
			upload := 0
			opt := Options{Trace: trace, onLoadView: func(machine string, at time.Duration, l *feed.LoadView) {
				if machine != "ada" || l == nil || l.Running == nil || !l.Running.Tester {
					return
				}
				ph := l.Running.Progress.Phase
				w := "none"
				if l.Running.Where != nil {
					w = fmt.Sprintf("%s at hop %d +%.0f ms", l.Running.Where.Link, l.Running.Where.TTL, l.Running.Where.AddedMS)
				}
				seen = append(seen, fmt.Sprintf("%v %s: %s", at.Round(time.Second), ph, w))
				if ph != "upload" && ph != "download ramp" {
					return
				}
				upload++
				if w := l.Running.Where; w != nil && (string(w.Link) != c.wantLink || w.TTL != c.wantTTL) {
					t.Errorf("at %v in the %s phase the running test's where is %+v, want %s at hop %d", at, ph, *w, c.wantLink, c.wantTTL)
				}
			}}
			var buf bytes.Buffer
			if _, err := RunWith(sc, &buf, opt); err != nil {
				t.Fatal(err)
			}
			t.Logf("ada's running test, once a second: %v", seen)
			if upload == 0 || !slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, c.wantLink+" at hop "+fmt.Sprint(c.wantTTL)) }) {
				t.Errorf("the running test never showed its where at ada's uplink: %v", seen)
			}
			results := 0
			for _, l := range strings.Split(buf.String(), "\n") {
				if !strings.HasPrefix(l, `{"type":"load","t_ms":`) || !strings.Contains(l, `"from":"ada"`) {
					continue
				}
				results++
				var e feed.LoadEvent
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatal(err)
				}
				if w := e.Result.Where; w == nil || string(w.Link) != c.wantLink || w.TTL != c.wantTTL {
					t.Errorf("ada's result's where %+v, want %s at hop %d", w, c.wantLink, c.wantTTL)
				}
			}
			if results != 1 {
				t.Errorf("the run printed %d load lines of ada's test, want 1", results)
			}
		})
	}
}
