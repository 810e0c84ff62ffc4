package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/record"
)

// lagscope replay FILE (issue 8): a recording played back through the same
// front ends a live session uses. --json prints the NDJSON stream exactly as
// it was printed when it was recorded; without it the TUI is driven by a
// record.Player feed.
func init() {
	register(&command{
		name:    "replay",
		summary: "Play a recording back through the TUI, or print its NDJSON events (--json)",
		usage:   "replay FILE [--json] [--speed X] [--as NAME]",
		examples: []string{
			"lagscope replay run.lsrec --json | jq -c 'select(.type==\"timing\")'",
			"lagscope replay run.lsrec --speed 4",
		},
		order: 40,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			asJSON := fs.Bool("json", false, "print the recorded NDJSON events on stdout instead of the TUI")
			speed := fs.Float64("speed", 1, "playback speed, 0.5 to 16 (TUI; keys change it while playing)")
			as := fs.String("as", "", "whose view to show when the recording has several machines (a simulation); default the first")
			theme := fs.String("theme", "", "colour theme of the TUI")
			return func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 1 {
					return fail(stderr, "replay", usagef("needs exactly one recording file (see lagscope replay --help)"))
				}
				if *speed < record.MinSpeed || *speed > record.MaxSpeed {
					return fail(stderr, "replay", usagef("--speed %g: must be between %g and %g", *speed, record.MinSpeed, record.MaxSpeed))
				}
				rec, err := openRecording(args[0])
				if err != nil {
					return fail(stderr, "replay", err)
				}
				if *asJSON {
					return replayJSON(rec, stdout, stderr)
				}
				return replayTUI(rec, *as, *speed, *theme, stdout, stderr)
			}
		},
	})
}

// openRecording reads a recording, turning "this is not one" into a usage
// error (exit 2) and a cut-off tail into a note on stderr by the caller.
func openRecording(path string) (*record.Recording, error) {
	rec, err := record.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, record.ErrNotRecording) || errors.Is(err, record.ErrVersion) || errors.Is(err, os.ErrPermission) {
			return nil, usagef("%v", err)
		}
		var se *record.StopError
		if errors.As(err, &se) {
			return nil, usagef("%s: %v", path, err)
		}
		return nil, err
	}
	return rec, nil
}

// stopNote tells the user that a recording was cut off, and where.
func stopNote(stderr io.Writer, name string, rec *record.Recording) {
	if rec.Stop != nil {
		fmt.Fprintf(stderr, "lagscope %s: note: recording %v; showing everything before it\n", name, rec.Stop)
	}
}

func replayJSON(rec *record.Recording, stdout, stderr io.Writer) int {
	out := bufio.NewWriterSize(stdout, 64<<10)
	for _, r := range rec.Records {
		if r.Kind != record.KindEvent {
			continue
		}
		out.Write(r.Raw)
		out.WriteByte('\n')
	}
	if err := out.Flush(); err != nil {
		return fail(stderr, "replay", err)
	}
	stopNote(stderr, "replay", rec)
	return 0
}
