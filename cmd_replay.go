package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/ui"
)

// lagscope replay FILE: a recording played back through the same
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
				// --as names a machine with or without --json: a name the
				// recording does not hold is bad input either way (exit 2).
				if *as != "" && !hasMachine(rec, *as) {
					return fail(stderr, "replay", usagef("--as %q: the recording has no view of that machine", *as))
				}
				if *asJSON {
					return replayJSON(args[0], rec, stdout, stderr)
				}
				return replayTUI(args[0], rec, *as, *speed, *theme, stdout, stderr)
			}
		},
	})
}

func replayJSON(path string, rec *record.Recording, stdout, stderr io.Writer) int {
	if err := rec.WriteNDJSON(stdout); err != nil {
		return fail(stderr, "replay", err)
	}
	stopNote(stderr, "replay", path, rec, "showing everything before it")
	return 0
}

// replayTUI hands a record.Player — a feed.Feed over the recording — to
// ui.Run, the same front end a live session uses (no second renderer). The
// Player also has the methods of ui.Playback (record.Playback: pause, seek,
// speed ×0.5–×16), so the TUI binds space, ←/→ and -/+ to them and shows
// the replay's position, and ui.IncidentTimes, so [ and ] seek to the
// incidents.
// The TUI's [ and ] seek among every incident of the recording.
var _ ui.IncidentTimes = (*record.Player)(nil)

func replayTUI(path string, rec *record.Recording, as string, speed float64, theme string, stdout, stderr io.Writer) int {
	stopNote(stderr, "replay", path, rec, "showing everything before it")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := record.NewPlayer(ctx, rec, as, speed)
	opts := ui.Options{Theme: theme, KeepOpen: true}
	if stdout != os.Stdout {
		opts.Output = stdout
	}
	if err := ui.Run(p, opts); err != nil {
		return fail(stderr, "replay", err)
	}
	return 0
}

func hasMachine(rec *record.Recording, name string) bool {
	for _, r := range rec.Records {
		if r.Kind == record.KindView && r.From == name {
			return true
		}
	}
	return false
}
