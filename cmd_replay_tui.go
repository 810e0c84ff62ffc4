package main

import (
	"context"
	"io"
	"os"

	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/ui"
)

// replayTUI hands a record.Player — a probe.Feed over the recording — to
// ui.Run, the same front end a live session uses (no second renderer). The
// Player also has the methods of ui.Playback (record.Playback: pause, seek,
// speed ×0.5–×16), so the TUI binds space, ←/→ and -/+ to them and shows
// the replay's position.
func replayTUI(rec *record.Recording, as string, speed float64, theme string, stdout, stderr io.Writer) int {
	if as != "" && !hasMachine(rec, as) {
		return fail(stderr, "replay", usagef("--as %q: the recording has no view of that machine", as))
	}
	stopNote(stderr, "replay", rec)
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
