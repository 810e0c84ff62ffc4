// Command lagscope joins a networked game session as a real peer, runs the
// game's link-timing, retry, loss-counting and rung logic, and shows what the
// network does to the match.
//
// main.go holds flag parsing and wiring only (docs/architecture.md): each subcommand
// lives in its own cmd_*.go file and registers itself in commands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// exitUsage is the exit code for bad flags or bad input.
const exitUsage = 2

// command is one subcommand, registered by its cmd_*.go file and listed in
// --help.
type command struct {
	name     string
	summary  string   // one line for the command list
	usage    string   // usage line without the program name, e.g. "rung [--rtt D]"
	examples []string // full command lines shown under --help
	order    int      // position in the command list
	// setup declares the command's flags on fs and returns the function that
	// runs it with the remaining positional arguments.
	setup func(fs *pflag.FlagSet) func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// usageError is a bad flag or bad input: one line on stderr, exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// defaultCommand is what a bare `lagscope` runs: the demo (docs/cli.md), so
// a newcomer sees a whole session without setting anything up.
func defaultCommand() (string, []string) { return "demo", nil }

// run dispatches to a subcommand and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		name, rest := defaultCommand()
		return runCommand(commands[name], rest, stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			if c, ok := commands[args[1]]; ok {
				return runCommand(c, []string{"--help"}, stdout, stderr)
			}
		}
		printHelp(stdout)
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		// Flags before any command belong to the default command.
		name, rest := defaultCommand()
		return runCommand(commands[name], append(rest, args...), stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lagscope: unknown command %q (see lagscope --help)\n", args[0])
		return exitUsage
	}
	return runCommand(c, args[1:], stdout, stderr)
}

func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	exec := c.setup(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandHelp(stdout, c, fs)
			return 0
		}
		fmt.Fprintf(stderr, "lagscope %s: %s\n", c.name, oneLine(err.Error()))
		return exitUsage
	}
	return exec(fs.Args(), stdout, stderr)
}

// fail reports err the way every command does: usage errors exit 2, others 1.
func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "lagscope %s: %s\n", name, oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return 1
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func sortedCommands() []*command {
	list := make([]*command, 0, len(commands))
	for _, c := range commands {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].order != list[j].order {
			return list[i].order < list[j].order
		}
		return list[i].name < list[j].name
	})
	return list
}

func printHelp(w io.Writer) {
	name, rest := defaultCommand()
	fmt.Fprintf(w, "lagscope shows what the network does to a networked game, link by link.\n\n")
	fmt.Fprintf(w, "Usage:\n  lagscope [COMMAND] [FLAGS]\n\n")
	fmt.Fprintf(w, "With no command, lagscope runs `lagscope %s`.\n\n", strings.TrimSpace(name+" "+strings.Join(rest, " ")))
	fmt.Fprintf(w, "Commands:\n")
	for _, c := range sortedCommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nExamples:\n")
	for _, c := range sortedCommands() {
		if len(c.examples) > 0 {
			fmt.Fprintf(w, "  %s\n", c.examples[0])
		}
	}
	fmt.Fprintf(w, "\nRun `lagscope COMMAND --help` for a command's flags.\n")
}

func printCommandHelp(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  lagscope %s\n", c.summary, c.usage)
	if u := fs.FlagUsages(); u != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", u)
	}
	if len(c.examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, e := range c.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}
