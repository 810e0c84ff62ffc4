package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// The shipped 15-hop scenario (testdata/scenarios/path15.json): ada's path
// to bob crosses 14 routers, four of them silent (hops 3, 5, 10 and 12),
// four quoting only the IP and UDP headers (2, 4, 8 and 13). A queue
// switches on at her uplink (hop 2) at 60 s and drains at 90 s; from 110 s
// the link out of hop 6 loses 5 % of what she sends. ada traces every link
// at the baseline's pace; the incident, the link leaving its baseline and
// its loss make it burst. Nothing names a link with --trace.
func TestPath15Scenario(t *testing.T) {
	sc := parse(t, shipped(t, "path15.json"))
	var paths []feed.PathEvent
	opt := Options{OnLine: func(_ time.Duration, from string, line []byte) {
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
	}}
	if _, err := RunWith(sc, io.Discard, opt); err != nil {
		t.Fatal(err)
	}
	at := func(e feed.PathEvent) time.Duration { return time.Duration(*e.TMs * float64(time.Millisecond)) }
	const (
		queueOn  = 60 * time.Second
		queueOff = 90 * time.Second
		lossOn   = 110 * time.Second
	)
	var judged, back, placed time.Duration
	baseline := 0
	for _, e := range paths {
		now := at(e)
		if now < queueOn && !e.Bursting {
			baseline++
		}
		if d := e.DelayStarts; judged == 0 && now >= queueOn && d != nil && d.TTL == 2 && d.Link == "uplink" && math.Abs(d.AddedMs-200) < 20 {
			judged = now
		}
		if d := e.DelayStarts; back == 0 && now >= queueOff && (d == nil || d.AddedMs < 20) {
			back = now
		}
		if l := e.LossStarts; l != nil {
			if l.TTL != 7 || l.Link != "isp" || now < lossOn {
				t.Errorf("%v: loss starts %+v, want hop 7 (the hop after the lossy link), after %v", now, l, lossOn)
			}
			if placed == 0 {
				placed = now
			}
		}
	}
	if judged == 0 || judged-queueOn > 10*time.Second {
		t.Errorf("the queue at the uplink judged at %v, want within 10 s of %v", judged, queueOn)
	}
	if back == 0 || back-queueOff > 10*time.Second {
		t.Errorf("back at the baseline at %v, want within 10 s of the queue draining at %v", back, queueOff)
	}
	if placed == 0 || placed-lossOn > 2*time.Minute {
		t.Errorf("the 5 %% loss placed at %v, want within 2 minutes of %v", placed, lossOn)
	}
	// At the baseline's pace before anything happens: a line at most every
	// 10 s, and when the judgement changes (the path found hop by hop).
	if baseline > 60/10+12 {
		t.Errorf("%d baseline lines in the first minute, want about one every 10 s", baseline)
	}
	t.Logf("queue judged %v after it switched on, back %v after it drained, loss placed %v after it began", judged-queueOn, back-queueOff, placed-lossOn)
	// The hops: silent ones without an address, every other one at its
	// router's, header-only routers included.
	last := paths[len(paths)-1]
	if len(last.Hops) != 15 || !last.Complete {
		t.Fatalf("last path: %d hops, complete %v; want 15 to bob", len(last.Hops), last.Complete)
	}
	silent := map[int]bool{3: true, 5: true, 10: true, 12: true}
	for _, h := range last.Hops {
		if (h.Addr == nil) != silent[h.TTL] {
			t.Errorf("hop %d at %v: want an address unless silent", h.TTL, h.Addr)
		}
		if silent[h.TTL] && (h.Sent < 3 || h.Loss != 1 || h.RateLimited) {
			t.Errorf("silent hop %d: %+v", h.TTL, h)
		}
	}
}
