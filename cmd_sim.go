package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/probe/sim"
)

func init() {
	register(&command{
		name:    "sim",
		summary: "Run a whole session in virtual time and print its NDJSON events",
		usage:   "sim SCENARIO.json",
		examples: []string{
			"lagscope sim testdata/scenarios/slow_link.json",
			"lagscope sim scenario.json | jq -c 'select(.type==\"timing\")'",
			"lagscope sim --record run.lsrec scenario.json && lagscope report run.lsrec",
		},
		order: 20,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			recordTo := fs.String("record", "", "also write a recording of the run to `FILE` (see lagscope replay, lagscope report)")
			return func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 1 {
					return fail(stderr, "sim", usagef("needs exactly one scenario file (see lagscope sim --help)"))
				}
				f, err := os.Open(args[0])
				if err != nil {
					return fail(stderr, "sim", usagef("%v", err))
				}
				sc, err := sim.ParseScenario(f)
				f.Close()
				if err != nil {
					return fail(stderr, "sim", usagef("%s: %v", args[0], err))
				}
				var opt sim.Options
				var rec *record.Writer
				if *recordTo != "" {
					rec, err = record.Create(*recordTo, record.Header{Program: "lagscope sim", Session: filepath.Base(args[0]), Virtual: true})
					if err != nil {
						return fail(stderr, "sim", usagef("--record: %v", err))
					}
					opt = recordSim(rec)
				}
				_, err = sim.RunWith(sc, stdout, opt)
				if rec != nil {
					if cerr := rec.Close(); err == nil && cerr != nil {
						err = fmt.Errorf("--record %s: %w", *recordTo, cerr)
					}
				}
				if err != nil {
					return fail(stderr, "sim", err)
				}
				return 0
			}
		},
	})
}

// recordSim stores every printed line, every machine's View once a virtual
// second and every executed command with its send frame and original frame
// (issue 8, S13). Every machine executes the same commands on the same send
// frames (S7), so each command is stored once, from the first machine that
// executed it. Write errors are kept by the Writer and reported when it
// closes.
func recordSim(w *record.Writer) sim.Options {
	type key struct {
		player      string
		seq         uint32
		frame, send int
	}
	seen := map[key]bool{}
	return sim.Options{
		OnLine: func(at time.Duration, from string, line []byte) { w.EventLine(at, from, line) },
		OnView: func(v probe.View) { w.View(v) },
		OnCommand: func(machine string, at time.Duration, player string, sendFrame int, c probe.Command) {
			k := key{player, c.Seq, int(c.Tag), sendFrame}
			if seen[k] {
				return
			}
			seen[k] = true
			w.Command(at, machine, record.CommandOf(player, sendFrame, c))
		},
	}
}
