package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/rungs/ladder"
)

// `lagscope rung` answers the question a player asks first: which rung does
// my round trip need (S2–S4, S9 headroom, S17 tiers)? Its JSON shape is
// fixed (docs/cli.md): scripts outside the project read it.

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
	d, err := ladder.ParseRTT(s)
	if err != nil {
		return err
	}
	f.d, f.set = d, true
	return nil
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
			err = ladder.WriteTableJSON(stdout, *fps)
		case *table:
			err = ladder.WriteTable(stdout, *fps, rtt.d, rtt.set)
		case *asJSON:
			err = ladder.WriteJSON(stdout, rtt.d, *fps)
		default:
			_, err = fmt.Fprintln(stdout, ladder.Explain(rtt.d, *fps))
		}
		if err != nil {
			return fail(stderr, "rung", err)
		}
		return 0
	}
}
