package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/probe/live"
)

func init() {
	register(&command{
		name:    "watch",
		summary: "Join a session as an observer: see every event, take no seat, never be waited for",
		usage:   "watch ADDR [--name NAME] [--key KEY] [--json] [--duration D] [flags]",
		examples: []string{
			"lagscope watch 192.168.1.20 --name admin",
			"lagscope watch 127.0.0.1:7373 --json | jq -c 'select(.type==\"timing\")'",
		},
		order: 4,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			return setupJoin(fs, "watch", live.RoleObserver)
		},
	})
}
