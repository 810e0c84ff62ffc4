package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/config"
	"github.com/lagscope/lagscope/probe/session"
	"github.com/lagscope/lagscope/themes"
)

func init() {
	register(&command{
		name:    "config",
		summary: "Print the config file's path and the settings in force",
		usage:   "config [--name NAME] [--theme NAME]",
		examples: []string{
			"lagscope config",
			"lagscope config --theme light   # what a live command given --theme light would use",
		},
		order: 90,
		setup: func(fs *pflag.FlagSet) func([]string, io.Writer, io.Writer) int {
			// The flags the live commands share with the file, so the
			// listing shows flag > file > default as they would apply it.
			fs.String("name", "", "as the live commands' --name")
			fs.String("theme", "", "as the live commands' --theme: "+strings.Join(themes.Names(), ", "))
			return func(args []string, stdout, stderr io.Writer) int {
				if len(args) > 0 {
					return fail(stderr, "config", usagef("unexpected argument %q", args[0]))
				}
				c, err := loadConfig(fs)
				if err != nil {
					return fail(stderr, "config", err)
				}
				// One rule for every name: what the live commands and the
				// host's admission would refuse, config refuses too.
				if fs.Changed("name") {
					if n, _ := fs.GetString("name"); session.CheckName(n) != nil {
						return fail(stderr, "config", usagef("--name: %v", session.CheckName(n)))
					}
				}
				printConfig(stdout, c)
				return 0
			}
		},
	})
}

// loadConfig is what a command that reads the config file calls: the file
// over the defaults, then every flag the user set on fs over both
// (flag > file > default). A bad file or a bad flag is a usage error (exit 2)
// in one line naming the file's line or the flag; a file the system will not
// let us read is a runtime failure (exit 1, fileInputError). sim, replay and
// report never call it: their output depends on their inputs alone.
func loadConfig(fs *pflag.FlagSet) (*config.Config, error) {
	c, err := config.Load()
	if err != nil {
		return nil, fileInputError(err)
	}
	if err := c.ApplyFlags(fs); err != nil {
		return nil, usageError{err.Error()}
	}
	return c, nil
}

func printConfig(w io.Writer, c *config.Config) {
	fmt.Fprintf(w, "config file: %s\n", c.Path)
	if !c.Found {
		fmt.Fprintf(w, "  (no such file: the defaults are in force)\n")
	}
	fmt.Fprintln(w)
	width := 0
	for _, k := range config.Keys {
		width = max(width, len(c.Value(k)))
	}
	for _, k := range config.Keys {
		from := string(c.From[k])
		switch c.From[k] {
		case config.FromFile:
			from = fmt.Sprintf("file, line %d", c.Line[k])
		case config.FromFlag:
			from = "flag --" + k
		}
		fmt.Fprintf(w, "%-20s %-*s  %s\n", k, width, c.Value(k), from)
	}
}
