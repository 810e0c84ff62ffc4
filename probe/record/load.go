package record

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/units"
)

// The load tests in a recording: a `load` event is one latency-under-load
// test (docs/load-test.md), published by the machine that ran it when the
// test ended. The events are checked like every other record, replayed as
// recorded, and the report lists each test.

// maxMbps bounds a load's throughput: a terabit a second, past any line
// a test loads.
const maxMbps = 1e6

// reportLoadRows is how many tests a report lists, the latest: enough for
// a session, short enough to paste.
const reportLoadRows = 12

// checkLoad: a `load` event's pair are two names, and its figures are in
// bounds. Its decoder has already refused negative or non-finite figures,
// a loss outside 0–1, an unknown grade and an unknown stop reason.
func checkLoad(e *feed.LoadEvent) error {
	err := errors.Join(checkName("load from", e.From), checkName("load to", e.To))
	if e.From == e.To {
		err = errors.Join(err, fmt.Errorf("load test of %q against itself", e.From))
	}
	r := &e.Result
	err = errors.Join(err, checkOptMs("idle_rtt_ms", r.IdleRTTMS))
	for _, d := range []struct {
		key string
		d   *loadtest.DirResult
	}{{"upload", r.Upload}, {"download", r.Download}} {
		if d.d == nil {
			continue
		}
		err = errors.Join(err, checkAdded(d.key, d.d.AddedMS, d.d.P90AddedMS))
		if m := d.d.Mbps; m != nil && *m > maxMbps {
			err = errors.Join(err, fmt.Errorf("%s mbps %v is above %v", d.key, *m, float64(maxMbps)))
		}
	}
	if b := r.Both; b != nil {
		err = errors.Join(err, checkAdded("both", b.AddedMS, b.P90AddedMS))
	}
	if w := r.Where; w != nil {
		err = errors.Join(err, checkHop(0, w.TTL, w.Link, 0, 0), checkMs("where added_ms", w.AddedMS))
	}
	if c := r.Cost; c != nil {
		err = errors.Join(err, checkFrame("frames_late", c.FramesLate), checkMs("max_wait_ms", c.MaxWaitMS), checkMs("for_ms", c.ForMS),
			checkRung("rung_from", c.RungFrom), checkRung("rung_to", c.RungTo))
	}
	return err
}

// checkLoadStart: a `load_start` event's pair are two names, and the
// test's length is a duration a test can have.
func checkLoadStart(e *feed.LoadStartEvent) error {
	err := errors.Join(checkName("load_start from", e.From), checkName("load_start to", e.To), checkMs("for_ms", e.ForMs))
	if e.From == e.To {
		err = errors.Join(err, fmt.Errorf("load test of %q against itself", e.From))
	}
	if e.ForMs > units.Millis(maxLoadFor) {
		err = errors.Join(err, fmt.Errorf("for_ms %v is above %v", e.ForMs, units.Millis(maxLoadFor)))
	}
	return err
}

// maxLoadFor bounds how long a test is told to take: its phases take 25 s
// at most; far past that is no tester's.
const maxLoadFor = time.Hour

// checkAdded: a phase's added round trip, median and 90th percentile, in
// bounds and in order (the 90th percentile is never below the median).
func checkAdded(key string, med, p90 *float64) error {
	err := errors.Join(checkOptMs(key+" added_ms", med), checkOptMs(key+" p90_added_ms", p90))
	if err == nil && med != nil && p90 != nil && *p90 < *med {
		err = fmt.Errorf("%s p90_added_ms %v below added_ms %v", key, *p90, *med)
	}
	return err
}

// maxLoadSamples bounds a running phase's graded probes: one every 10 ms
// for at most the 30 s a test runs is 3000; far past that is no tester's.
const maxLoadSamples = 1 << 20

// checkLoadView: a View's load testing, by the rules of the events for
// its results; the running test's peer a name, its phases' text safe and
// their times and counts in bounds.
func checkLoadView(l *feed.LoadView) error {
	err := checkDur("load next at", l.NextAt)
	if l.Cap < 0 || float64(l.Cap) > maxMbps*1e6 {
		err = errors.Join(err, fmt.Errorf("load cap %d bit/s is outside 0..%v", l.Cap, maxMbps*1e6))
	}
	for i := range l.Results {
		err = errors.Join(err, checkLoad(&l.Results[i]))
	}
	if v := l.Seen; v != nil {
		err = errors.Join(err, checkName("load seen from", v.From), checkName("load seen to", v.To),
			checkDur("load seen began", v.Began), checkDur("load seen for", v.For))
	}
	if run := l.Running; run != nil {
		if w := run.Where; w != nil {
			err = errors.Join(err, checkHop(0, w.TTL, w.Link, 0, 0), checkMs("load where added_ms", w.AddedMS))
		}
		p := &run.Progress
		err = errors.Join(err, checkName("load peer", run.Peer), checkLoadPhase(p.Phase), checkDur("load began", p.Began))
		for _, ph := range p.Phases {
			err = errors.Join(err, checkLoadPhase(ph.Name), checkDur("load phase began", ph.Began), checkDur("load phase median", ph.Median))
			if ph.Samples < 0 || ph.Samples > maxLoadSamples {
				err = errors.Join(err, fmt.Errorf("load phase samples %d is outside 0..%d", ph.Samples, maxLoadSamples))
			}
		}
	}
	return err
}

func checkRung(key string, r int) error {
	if r < 1 || r > rungs.Rungs {
		return fmt.Errorf("%s %d is outside 1..%d", key, r, rungs.Rungs)
	}
	return nil
}

// loadResult is loadtest.Result without its checking decoder, so that a
// loadReport embedding it keeps its own fields when read back.
type loadResult loadtest.Result

// loadReport is one load test in a recording: when it ended, who tested
// whom, and its result as the event carried it.
type loadReport struct {
	AtMs float64 `json:"at_ms"`
	From string  `json:"from"`
	To   string  `json:"to"`
	loadResult
}

// loadCopies is how close together two machines' lines of one test come:
// every machine prints the tester's result as it reaches it, within
// seconds, and a tester runs one test a minute at most.
const loadCopies = 30 * time.Second

// load keeps a load event, once per test: a recording of several
// machines holds each test's line from each of them, the same result.
func (s *summary) load(at time.Duration, e *feed.LoadEvent) {
	l := loadReport{AtMs: units.Millis(at), From: e.From, To: e.To, loadResult: loadResult(e.Result)}
	for i := len(s.loads) - 1; i >= 0; i-- {
		o := &s.loads[i]
		if units.Millis(at)-o.AtMs > units.Millis(loadCopies) {
			break
		}
		if o.From == l.From && o.To == l.To && reflect.DeepEqual(o.loadResult, l.loadResult) {
			return
		}
	}
	s.loads = append(s.loads, l)
}

// finishLoads puts the latest tests in the report, in the order they
// ended.
func (s *summary) finishLoads() {
	n := len(s.loads)
	if n > reportLoadRows {
		s.r.LoadOmitted = n - reportLoadRows
	}
	s.r.Loads = s.loads[n-min(n, reportLoadRows):]
}

// slash joins figures with "/", or is "—" when none of them is known.
func slash(parts ...string) string {
	for _, p := range parts {
		if p != "—" {
			return strings.Join(parts, "/")
		}
	}
	return "—"
}

// dirCell is a direction's added round trip, median/p90, its grade, and
// whether the cap ended its ramp.
func dirCell(d *loadtest.DirResult, esc func(string) string) string {
	if d == nil {
		return "—"
	}
	s := slash(num(d.AddedMS, 1), num(d.P90AddedMS, 1))
	if d.Grade != nil {
		s += " " + esc(*d.Grade)
	}
	if d.Capped {
		s += " capped"
	}
	return s
}

// loadCells are one test's cells: time, test, idle, upload, download,
// both, throughput, loss, where, cost, stopped.
func (l *loadReport) loadCells(esc func(string) string) []string {
	var upMbps, downMbps, upLoss, downLoss, bothAdded, bothLoss = "—", "—", "—", "—", "—", "—"
	if d := l.Upload; d != nil {
		upMbps, upLoss = num(d.Mbps, 1), pct(d.Loss)
	}
	if d := l.Download; d != nil {
		downMbps, downLoss = num(d.Mbps, 1), pct(d.Loss)
	}
	if b := l.Both; b != nil {
		bothAdded, bothLoss = slash(num(b.AddedMS, 1), num(b.P90AddedMS, 1)), pct(b.Loss)
	}
	where := "—"
	if w := l.Where; w != nil {
		where = fmt.Sprintf("hop %d (%s), +%.1f ms", w.TTL, esc(string(w.Link)), w.AddedMS)
	}
	stopped := "no"
	if l.Stopped != nil {
		stopped = esc(*l.Stopped)
	}
	return []string{clock(l.AtMs), esc(l.From) + " → " + esc(l.To), num(l.IdleRTTMS, 1), dirCell(l.Upload, esc), dirCell(l.Download, esc),
		bothAdded, slash(upMbps, downMbps), slash(upLoss, downLoss, bothLoss), where, costCell(l.Cost), stopped}
}

// costCell is what the test cost the game, in words.
func costCell(c *loadtest.GameCost) string {
	if c == nil {
		return "—"
	}
	late := fmt.Sprintf("%d frames late", c.FramesLate)
	if c.FramesLate == 1 {
		late = "1 frame late"
	}
	rung := fmt.Sprintf("rung %d kept", c.RungFrom)
	if c.RungTo != c.RungFrom {
		rung = fmt.Sprintf("rung %d→%d for %v", c.RungFrom, c.RungTo, units.FromMillis(c.ForMS).Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s, max wait %.0f ms, %s", late, c.MaxWaitMS, rung)
}

// loadCaption says what the load table's figures are.
const loadCaption = "round trip added under load, median/p90 ms, and its grade; Mbit/s up/down; loss of the load up/down/both"

// textLoads prints the load tests as a table.
func (r *report) textLoads(b *bytes.Buffer) {
	if len(r.Loads) == 0 {
		return
	}
	esc := textsafe.Terminal
	fmt.Fprintf(b, "\nLoad tests (%s)\n", loadCaption)
	if r.LoadOmitted > 0 {
		fmt.Fprintf(b, "  … %d earlier tests left out\n", r.LoadOmitted)
	}
	var t bytes.Buffer
	tw := tabwriter.NewWriter(&t, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  time\ttest\tidle ms\tupload\tdownload\tboth\tMbit/s\tloss\twhere\tcost\tstopped\t\n")
	for i := range r.Loads {
		fmt.Fprintf(tw, "  %s\t\n", strings.Join(r.Loads[i].loadCells(esc), "\t"))
	}
	tw.Flush()
	for line := range strings.Lines(t.String()) { // no padding after the last cell
		b.WriteString(strings.TrimRight(line, " \n"))
		b.WriteByte('\n')
	}
}

// markdownLoads prints the load tests as a table.
func (r *report) markdownLoads(b *bytes.Buffer) {
	if len(r.Loads) == 0 {
		return
	}
	fmt.Fprintf(b, "\n**Load tests**")
	if r.LoadOmitted > 0 {
		fmt.Fprintf(b, " (last %d; %d earlier left out)", len(r.Loads), r.LoadOmitted)
	}
	fmt.Fprintf(b, ": %s.\n\n", loadCaption)
	fmt.Fprintf(b, "| time | test | idle ms | upload | download | both | Mbit/s | loss | where | cost | stopped |\n")
	fmt.Fprintf(b, "| --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i := range r.Loads {
		fmt.Fprintf(b, "| %s |\n", strings.Join(r.Loads[i].loadCells(textsafe.MarkdownCell), " | "))
	}
}

// checkLoadPhase: a phase a load test's progress names.
func checkLoadPhase(p vocab.LoadPhase) error {
	if !p.Valid() {
		return fmt.Errorf("load phase %q is not a phase a test runs", p)
	}
	return nil
}
