package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/internal/boundedfile"
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
			"lagscope sim --trace ada:bob testdata/scenarios/hops.json | jq -c 'select(.type==\"path\")'",
		},
		order: 20,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			recordTo := fs.String("record", "", "also write a recording of the run to `FILE` (see lagscope replay, lagscope report)")
			traces := fs.StringArray("trace", nil, "machine FROM traces its link to TO for the whole run, printing `path` events (`FROM:TO`, repeatable; see docs/simulation.md)")
			return func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 1 {
					return fail(stderr, "sim", usagef("needs exactly one scenario file (see lagscope sim --help)"))
				}
				// Read whole, bounded: a FIFO, a device or a file past
				// maxScenarioBytes is refused before anything is read.
				doc, err := boundedfile.Read("scenario", args[0], maxScenarioBytes)
				if err != nil {
					return fail(stderr, "sim", fileInputError(err))
				}
				sc, err := sim.ParseScenario(bytes.NewReader(doc))
				if err != nil {
					return fail(stderr, "sim", usagef("%s: %v", args[0], err))
				}
				pinned, err := sim.ParseTrace(sc, *traces)
				if err != nil {
					return fail(stderr, "sim", usagef("%v", err))
				}
				opt := sim.Options{Trace: pinned}
				var rec *record.Writer
				if *recordTo != "" {
					rec, err = record.Create(*recordTo, record.Header{Program: "lagscope sim", Session: filepath.Base(args[0]), Virtual: true})
					if err != nil {
						return fail(stderr, "sim", usagef("--record: %v", err))
					}
					r := record.NewSimRecorder(rec)
					opt.OnLine, opt.OnView, opt.OnCommand = r.Line, r.View, r.Command
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
