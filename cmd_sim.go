package main

import (
	"io"
	"os"

	"github.com/spf13/pflag"

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
		},
		order: 20,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
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
				if _, err := sim.Run(sc, stdout); err != nil {
					return fail(stderr, "sim", err)
				}
				return 0
			}
		},
	})
}
