package main

import (
	"io"

	"github.com/lagscope/lagscope/probe/record"
)

// replayTUI would hand a record.Player (a probe.Feed) to ui.Run, the same
// front end a live session uses. The TUI package is not in this build yet,
// so until it is, replay without --json says so and exits 2.
func replayTUI(rec *record.Recording, as string, speed float64, stdout, stderr io.Writer) int {
	_, _, _ = rec, as, speed
	return fail(stderr, "replay", usagef("the TUI is not part of this build yet; use --json for the NDJSON stream"))
}
