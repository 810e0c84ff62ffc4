package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/pflag"
)

func init() {
	register(&command{
		name:     "version",
		summary:  "Print lagscope's module version and VCS revision",
		usage:    "version",
		examples: []string{"lagscope version"},
		order:    100,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			return func(args []string, stdout, stderr io.Writer) int {
				if len(args) > 0 {
					return fail(stderr, "version", usagef("unexpected argument %q", args[0]))
				}
				fmt.Fprintln(stdout, versionString())
				return 0
			}
		},
	})
}

// versionString names the module version and the VCS revision the binary was
// built from, as far as the build recorded them.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "lagscope (no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	rev, modified, when := "unknown", false, ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			when = s.Value
		}
	}
	out := fmt.Sprintf("lagscope %s revision %s", version, rev)
	if modified {
		out += " (modified)"
	}
	if when != "" {
		out += " " + when
	}
	return out + " " + info.GoVersion
}
