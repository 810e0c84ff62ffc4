package main

import (
	"cmp"
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

// version is stamped in by release builds:
//
//	go build -ldflags "-X main.version=v1.2.3"
//
// (scripts/release.sh and .goreleaser.yaml do). It wins over the module
// version, which a plain `go build` of a clone leaves at "(devel)", so a
// release binary names its version even without VCS data.
var version string

// versionString names the version and the VCS revision the binary was built
// from, as far as the build recorded them.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if version != "" {
			return "lagscope " + version
		}
		return "lagscope (no build information)"
	}
	v := cmp.Or(version, info.Main.Version, "(devel)")
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
	out := fmt.Sprintf("lagscope %s revision %s", v, rev)
	if modified {
		out += " (modified)"
	}
	if when != "" {
		out += " " + when
	}
	return out + " " + info.GoVersion
}
