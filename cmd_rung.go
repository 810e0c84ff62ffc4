package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/rungs"
)

// `lagscope rung` answers the question a player asks first: which rung does
// my round trip need (SPEC S2–S4, S9 headroom, S17 tiers)? Its JSON shape is
// fixed by CONTRACTS.md.

func init() {
	register(&command{
		name:    "rung",
		summary: "The rung a round trip needs at a frame rate, with and without headroom, or the whole ladder",
		usage:   "rung --rtt DURATION [--fps N] [--json]   |   lagscope rung --table [--fps N] [--json]",
		examples: []string{
			"lagscope rung --rtt 180ms",
			"lagscope rung --rtt 250 --fps 60 --json",
			"lagscope rung --table --fps 60",
		},
		order: 50,
		setup: setupRung,
	})
}

// Frame rates the command accepts: a game runs at one frame per second at
// the least, and nothing plays at more than 1000.
const (
	rungMinFPS = 1
	rungMaxFPS = 1000
)

// rungRTTFlag is a round trip given as a Go duration ("180ms", "1.5s") or as
// a bare number of milliseconds ("180", "180.5").
type rungRTTFlag struct {
	d   time.Duration
	set bool
}

func (f *rungRTTFlag) String() string {
	if !f.set {
		return ""
	}
	return f.d.String()
}

func (f *rungRTTFlag) Type() string { return "duration" }

func (f *rungRTTFlag) Set(s string) error {
	d, err := parseRungRTT(s)
	if err != nil {
		return err
	}
	f.d, f.set = d, true
	return nil
}

// rungMaxRTT is the longest round trip the command takes. Past 8 minutes
// every round trip needs the widest timing at any frame rate (10/250 covers
// 480 s at 1 fps), so an hour refuses nothing useful, and its headroom
// (S9, a quarter more) stays exact instead of saturating at the largest
// Duration, which printed a "headroom" smaller than 1.25× (issue 15).
const rungMaxRTT = time.Hour

// parseRungRTT reads a round trip. A number without a unit is milliseconds,
// since that is how players quote a ping.
func parseRungRTT(s string) (time.Duration, error) {
	d, err := parseRungRTTUnbounded(s)
	if err == nil && d > rungMaxRTT {
		return 0, fmt.Errorf("round trip %q is too long (at most %v)", s, rungMaxRTT)
	}
	return d, err
}

func parseRungRTTUnbounded(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return 0, fmt.Errorf("%q is not a round trip", s)
		case v < 0:
			return 0, fmt.Errorf("round trip %q is negative", s)
		case v*float64(time.Millisecond) >= math.MaxInt64:
			return 0, fmt.Errorf("round trip %q is too long", s)
		}
		return time.Duration(math.Round(v * float64(time.Millisecond))), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a round trip (use 180ms, 1.5s or a number of milliseconds)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("round trip %q is negative", s)
	}
	return d, nil
}

func setupRung(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
	var rtt rungRTTFlag
	fs.Var(&rtt, "rtt", "worst round trip: a Go duration (180ms, 1.5s) or a number of milliseconds")
	fps := fs.Int("fps", 30, "frame rate the game runs at (1 to 1000)")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	table := fs.Bool("table", false, "print the whole ladder for the frame rate")
	return func(args []string, stdout, stderr io.Writer) int {
		switch {
		case len(args) > 0:
			return fail(stderr, "rung", usagef("unexpected argument %q", args[0]))
		case *fps < rungMinFPS || *fps > rungMaxFPS:
			return fail(stderr, "rung", usagef("--fps %d is out of range (%d to %d)", *fps, rungMinFPS, rungMaxFPS))
		case !rtt.set && !*table:
			return fail(stderr, "rung", usagef("--rtt is required (or --table for the whole ladder)"))
		}
		var err error
		switch {
		case *table && *asJSON:
			err = writeRungTableJSON(stdout, *fps)
		case *table:
			err = writeRungTable(stdout, *fps, rtt.d, rtt.set)
		case *asJSON:
			err = writeRungJSON(stdout, rtt.d, *fps)
		default:
			_, err = fmt.Fprintln(stdout, rungExplain(rtt.d, *fps))
		}
		if err != nil {
			return fail(stderr, "rung", err)
		}
		return 0
	}
}

// rungMS writes a duration as milliseconds, with as many decimals as it has.
func rungMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func rungMSText(d time.Duration) string { return strconv.FormatFloat(rungMS(d), 'f', -1, 64) }

// rungDescribe is "rung 2 (2/6), Fast", with the extended look-ahead named.
func rungDescribe(t rungs.Timing) string {
	ext := ""
	if t.Extended() {
		ext = ", extended"
	}
	return fmt.Sprintf("rung %d (%v%s), %v", t.Rung(), t, ext, t.Tier())
}

// rungExplain is the one-line answer: the round trip, its one-way trip in
// frames and its rung, then the same with headroom.
func rungExplain(rtt time.Duration, fps int) string {
	h := rungs.WithHeadroom(rtt)
	return fmt.Sprintf("%s ms at %d fps: one-way %s → %s; with headroom %s ms → %s",
		rungMSText(rtt), fps, rungFrames(rtt, fps), rungDescribe(rungs.Need(rtt, fps)),
		rungMSText(h), rungDescribe(rungs.Need(h, fps)))
}

// rungFrames names a one-way trip in frames, and says so when even 10/250
// does not cover it.
func rungFrames(rtt time.Duration, fps int) string {
	ow := rungs.OneWayFrames(rtt, fps)
	unit := "frames"
	if ow == 1 {
		unit = "frame"
	}
	s := fmt.Sprintf("%d %s", ow, unit)
	if widest := rungs.WidestTiming(); ow > widest.Covers() {
		s += fmt.Sprintf(" (more than %v covers)", widest)
	}
	return s
}

// rungAnswer is the JSON of CONTRACTS.md; field order is the contract's.
type rungAnswer struct {
	RTTMS        float64         `json:"rtt_ms"`
	FPS          int             `json:"fps"`
	OneWayFrames int             `json:"one_way_frames"`
	Rung         int             `json:"rung"`
	SendPeriod   int             `json:"send_period"`
	LookAhead    int             `json:"look_ahead"`
	Tier         string          `json:"tier"`
	Extended     bool            `json:"extended"`
	Headroom     *rungHeadroomJS `json:"headroom"`
}

type rungHeadroomJS struct {
	RTTMS        float64 `json:"rtt_ms"`
	OneWayFrames int     `json:"one_way_frames"`
	Rung         int     `json:"rung"`
	SendPeriod   int     `json:"send_period"`
	LookAhead    int     `json:"look_ahead"`
	Tier         string  `json:"tier"`
	Extended     bool    `json:"extended"`
}

func writeRungJSON(w io.Writer, rtt time.Duration, fps int) error {
	t := rungs.Need(rtt, fps)
	h := rungs.WithHeadroom(rtt)
	th := rungs.Need(h, fps)
	return writeRungJSONValue(w, rungAnswer{
		RTTMS: rungMS(rtt), FPS: fps, OneWayFrames: rungs.OneWayFrames(rtt, fps),
		Rung: t.Rung(), SendPeriod: t.SendPeriod, LookAhead: t.LookAhead, Tier: t.Tier().String(), Extended: t.Extended(),
		Headroom: &rungHeadroomJS{
			RTTMS: rungMS(h), OneWayFrames: rungs.OneWayFrames(h, fps),
			Rung: th.Rung(), SendPeriod: th.SendPeriod, LookAhead: th.LookAhead, Tier: th.Tier().String(), Extended: th.Extended(),
		},
	})
}

func writeRungJSONValue(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// rungLadder is the table's rows: rungs 1 to 10, then the widest extended
// timing, where the ladder ends.
func rungLadder() []rungs.Timing {
	l := make([]rungs.Timing, 0, rungs.Rungs+1)
	for n := 1; n <= rungs.Rungs; n++ {
		l = append(l, rungs.RungTiming(n))
	}
	return append(l, rungs.WidestTiming())
}

// rungRow is one rung of `rung --table --json`.
type rungRow struct {
	Rung            int     `json:"rung"`
	SendPeriod      int     `json:"send_period"`
	LookAhead       int     `json:"look_ahead"`
	Tier            string  `json:"tier"`
	Extended        bool    `json:"extended"`
	FPS             int     `json:"fps"`
	MaxOneWayFrames int     `json:"max_one_way_frames"`
	MaxRTTMS        float64 `json:"max_rtt_ms"`
}

func writeRungTableJSON(w io.Writer, fps int) error {
	rows := []rungRow{}
	for _, t := range rungLadder() {
		rows = append(rows, rungRow{
			Rung: t.Rung(), SendPeriod: t.SendPeriod, LookAhead: t.LookAhead, Tier: t.Tier().String(),
			Extended: t.Extended(), FPS: fps, MaxOneWayFrames: t.Covers(), MaxRTTMS: rungMS(t.MaxRTT(fps)),
		})
	}
	return writeRungJSONValue(w, rows)
}

// writeRungTable prints the ladder for fps. The round trip a rung covers is
// shown rounded down to 0.1 ms, so the figure is always covered. With a round
// trip, the rows it needs (with and without headroom) are marked.
func writeRungTable(w io.Writer, fps int, rtt time.Duration, hasRTT bool) error {
	marks := map[rungs.Timing][]string{}
	if hasRTT {
		mark := func(t rungs.Timing, what string) {
			row := t
			if t.Extended() {
				row = rungs.WidestTiming()
				what += " needs " + t.String()
			}
			marks[row] = append(marks[row], what)
		}
		h := rungs.WithHeadroom(rtt)
		mark(rungs.Need(rtt, fps), rungMSText(rtt)+" ms")
		mark(rungs.Need(h, fps), rungMSText(h)+" ms with headroom")
		if _, err := fmt.Fprintf(w, "%s\n\n", rungExplain(rtt, fps)); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "Rung ladder at %d fps: a rung covers a one-way trip of its look-ahead less one send period.\n\n", fps); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUNG\tTIMING\tTIER\tONE-WAY UP TO\tROUND TRIP UP TO")
	for _, t := range rungLadder() {
		rung := strconv.Itoa(t.Rung())
		if t.Extended() {
			rung += " ext"
		}
		covered := math.Floor(rungMS(t.MaxRTT(fps))*10) / 10
		line := fmt.Sprintf("%s\t%v\t%v\t%d frames\t%s ms", rung, t, t.Tier(), t.Covers(), strconv.FormatFloat(covered, 'f', -1, 64))
		if m := marks[t]; len(m) > 0 {
			line += "\t← " + strings.Join(m, "; ")
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nPast rung 10 the send period stays 10 and the look-ahead grows in steps of 10, up to %v.\n", rungs.WidestTiming())
	return err
}
