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

	"github.com/lagscope/lagscope/textsafe"
)

// exitUsage is the exit code for bad flags or bad input.
const exitUsage = 2

// command is one subcommand, registered by its cmd_*.go file and listed in
// --help.
type command struct {
	name     string
	summary  string   // one line for the command list
	usage    string   // usage line without the program name, e.g. "rung [--rtt D]"
	about    string   // what the summary cannot say, printed as is under the usage in COMMAND --help
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
		// Flags before any command belong to the default command; a flag
		// it does not know is reported as the user typed it, without a
		// command they never named.
		name, rest := defaultCommand()
		return parseAndRun(commands[name], "lagscope", append(rest, args...), stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		if near := closestCommand(args[0]); near != "" {
			fmt.Fprintf(stderr, "lagscope: unknown command %q: did you mean %s? (see lagscope --help)\n", args[0], near)
		} else {
			fmt.Fprintf(stderr, "lagscope: unknown command %q (see lagscope --help)\n", args[0])
		}
		return exitUsage
	}
	return runCommand(c, args[1:], stdout, stderr)
}

// closestCommand is the command name within two edits of typed (a letter
// added, dropped, changed, or two letters swapped), the nearest first; ""
// when none is that close.
func closestCommand(typed string) string {
	best, bestD := "", 3
	for _, c := range sortedCommands() {
		if d := editDistance(strings.ToLower(typed), c.name); d < bestD {
			best, bestD = c.name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// counted in bytes (command names are ASCII).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // nothing that long is a typo of a command
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// parseErrorLine is the one line a flag the parse refused gets. An unknown
// flag names the closest one the command has, as a mistyped command does
// (`unknown flag --player: did you mean --players?`); a long flag typed with
// one dash (-players) is pointed at its two-dash form. Every other parse
// error is pflag's own line. label is "lagscope host", or "lagscope" for
// flags given before any command (the demo's).
func parseErrorLine(err error, fs *pflag.FlagSet, label string) string {
	see := "see " + label + " --help"
	if label == "lagscope" {
		see = "flags before a command are the demo's: see lagscope --help"
	}
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		msg := oneLine(err.Error())
		if label == "lagscope" {
			msg += " (" + see + ")"
		}
		return msg
	}
	typed := "--" + ne.GetSpecifiedName()
	near := closestFlag(fs, ne.GetSpecifiedName())
	if group := ne.GetSpecifiedShortnames(); group != "" {
		// -players: pflag read it as the shorthands p, l, a…
		typed = "-" + group
		near = closestFlag(fs, group)
	}
	typed = textsafe.Terminal(typed)
	if near != "" {
		return fmt.Sprintf("unknown flag %s: did you mean --%s? (%s)", typed, near, see)
	}
	return fmt.Sprintf("unknown flag %s (%s)", typed, see)
}

// closestFlag is the name of fs's listed flag nearest to typed: within two
// edits (as closestCommand), or, failing that, the one flag whose name
// starts with typed (--dur for --duration); "" when none is that close.
// Hidden flags are never suggested.
func closestFlag(fs *pflag.FlagSet, typed string) string {
	typed = strings.ToLower(strings.TrimLeft(typed, "-"))
	if typed == "" {
		return ""
	}
	best, bestD := "", 3
	var prefixed []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(typed, f.Name); d < bestD && d < len(f.Name) {
			best, bestD = f.Name, d
		}
		if len(typed) >= 2 && strings.HasPrefix(f.Name, typed) {
			prefixed = append(prefixed, f.Name)
		}
	})
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	return parseAndRun(c, "lagscope "+c.name, args, stdout, stderr)
}

// parseAndRun parses c's flags and runs it; label starts a parse error's
// line ("lagscope host", or "lagscope" for flags given before any command).
func parseAndRun(c *command, label string, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	exec := c.setup(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandHelp(stdout, c, fs)
			return 0
		}
		fmt.Fprintf(stderr, "%s: %s\n", label, parseErrorLine(err, fs, label))
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
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.about, "\n"))
	}
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
