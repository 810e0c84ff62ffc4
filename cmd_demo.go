package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/live"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "A local session over loopback UDP with impaired links: watch links, the ladder and tier messages move",
		usage:   "demo [--players N] [--profile NAME] [--seed N] [--json] [--duration D] [flags]",
		examples: []string{
			"lagscope demo",
			"lagscope demo --players 8 --profile wifi --seed 7",
			"lagscope demo --json --duration 2m | jq -c 'select(.type==\"timing\" or .type==\"message\")'",
			"lagscope demo --leave bob@40s --metrics 127.0.0.1:9373",
		},
		order: 1,
		setup: setupDemo,
	})
}

func setupDemo(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
	lf := addLiveFlags(fs, "demo")
	fs.Lookup("name").DefValue = "you"
	lf.name = "you"
	players := fs.Int("players", 4, "players in the demo, you included, each on its own UDP socket")
	profile := fs.String("profile", "mix", "access links: mix (LAN, cable, DSL and Wi-Fi players in turn) or one of "+strings.Join(live.DemoProfiles()[1:], ", "))
	seed := fs.Uint64("seed", 1, "random seed of the links' impairment")
	leaves := fs.StringArray("leave", nil, "script a player quitting: `NAME@DURATION` after the start (e.g. bob@40s); repeatable")
	slows := fs.StringArray("slow", nil, "make a machine slow on purpose: `NAME=DURATION` more work per frame (e.g. ada=50ms); it reports the time and the frame rate falls; repeatable")
	return func(args []string, stdout, stderr io.Writer) int {
		if len(args) > 0 {
			return fail(stderr, "demo", usagef("unexpected argument %q", args[0]))
		}
		if err := lf.check(); err != nil {
			return fail(stderr, "demo", err)
		}
		if *players < 1 || *players > live.MaxDemoPlayers {
			return fail(stderr, "demo", usagef("--players %d: must be between 1 and %d", *players, live.MaxDemoPlayers))
		}
		if !slices.Contains(live.DemoProfiles(), *profile) {
			return fail(stderr, "demo", usagef("--profile %q: one of %s", *profile, strings.Join(live.DemoProfiles(), ", ")))
		}
		var scripted []live.DemoLeave
		for _, l := range *leaves {
			dl, err := live.ParseDemoLeave(l)
			if err != nil {
				return fail(stderr, "demo", leaveUsage(err))
			}
			scripted = append(scripted, dl)
		}
		slow := map[string]time.Duration{}
		for _, s := range *slows {
			name, cost, err := live.ParseDemoSlow(s)
			if err != nil {
				return fail(stderr, "demo", usagef("--slow %v", err))
			}
			slow[name] = cost
		}
		lf.noteMetrics(stderr)
		err := live.RunDemo(lf.runConfig("demo", stdout),
			live.DemoConfig{Players: *players, Profile: *profile, Seed: *seed, Spike: true, Leaves: scripted, Slow: slow})
		if errors.Is(err, live.ErrDemoSlow) {
			return fail(stderr, "demo", usagef("%v", strings.TrimPrefix(err.Error(), "live: bad ")))
		}
		return liveExit(stderr, "demo", leaveUsage(err))
	}
}

// leaveUsage turns a bad --leave into a usage error (exit 2) naming it;
// any other error passes through.
func leaveUsage(err error) error {
	var le *live.DemoLeaveError
	if errors.As(err, &le) {
		return usagef("--leave %s: %s", le.Leave, le.Why)
	}
	return err
}
