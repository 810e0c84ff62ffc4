package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The examples people copy: every command line in `lagscope --help`, in
// each `lagscope COMMAND --help`, and in the README. Each one is split as a
// shell splits it, and each lagscope command in it must parse as printed —
// a known command, flags it has, values of their types, as many arguments
// as the command takes. A join or watch that names a host carries the
// session's code (--key in the form a host prints it): a default host is
// keyed, and a join without the code is refused. Those that need nothing
// from outside (no host, no file of the user's) also run as printed: they
// exit 0 with output, and a `| jq 'select(.type=="X")'` after one selects
// some line of what it prints.
func TestExamplesParseAndRun(t *testing.T) {
	help := helpExamples(t)
	readme := readmeExamples(t)
	// Every command shows examples; the README's tour has a dozen.
	if len(help) < 2*len(commands) || len(readme) < 12 {
		t.Fatalf("found %d help examples and %d README examples: the extraction lost them", len(help), len(readme))
	}
	ran := 0
	for _, ex := range append(help, readme...) {
		r, problem := checkExample(ex.line)
		if problem != "" {
			t.Errorf("%s: %q: %s", ex.where, ex.line, problem)
			continue
		}
		if r == nil {
			continue
		}
		ran++
		if problem := runExample(r); problem != "" {
			t.Errorf("%s: %q: %s", ex.where, ex.line, problem)
		}
	}
	if ran < 5 {
		t.Errorf("only %d examples ran as printed", ran)
	}
	t.Logf("%d help and %d README examples parse; %d ran as printed", len(help), len(readme), ran)
}

// The checker itself tells a bad example from a good one.
func TestExampleChecker(t *testing.T) {
	for line, want := range map[string]string{
		"lagscope host --player 3":                         "unknown flag: --player",
		"lagscope join 192.168.1.20 --name bob":            "a join or watch that names a host needs --key",
		"lagscope join 192.168.1.20 --key s3cret":          "not a session code",
		"lagscope hots":                                    "unknown command",
		"lagscope report":                                  "takes 1 argument",
		"lagscope rung --rtt 180ms extra":                  "takes 0 argument",
		"lagscope rung --rtt 'unterminated":                "unterminated quote",
		"lagscope rung --fps sixty":                        "invalid argument",
		"lagscope sim x.json | grep timing":                "pipes into grep",
		"lagscope join 10.0.0.1:7373 --key 7K3M-QX9P-4RTA": "not a session code",
	} {
		if _, got := checkExample(line); !strings.Contains(got, want) {
			t.Errorf("%q: problem %q, want one containing %q", line, got, want)
		}
	}
	for _, line := range []string{
		"lagscope",
		"lagscope --players 8",
		"lagscope host --players 3   # prints the join line",
		"lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H --name bob",
		"lagscope replay run.lsrec --json | jq -c 'select(.type==\"timing\")'",
		"lagscope report run.lsrec --format markdown > report.md",
		"lagscope sim --record run.lsrec scenario.json && lagscope report run.lsrec",
	} {
		if _, got := checkExample(line); got != "" {
			t.Errorf("%q: %s", line, got)
		}
	}
	// A runnable example whose jq filter selects nothing it prints.
	r, problem := checkExample("lagscope rung --rtt 180ms --json | jq -c 'select(.type==\"timing\")'")
	if problem != "" || r == nil {
		t.Fatalf("rung example: runnable %v, problem %q", r != nil, problem)
	}
	if got := runExample(r); !strings.Contains(got, `selects no line of type "timing"`) {
		t.Errorf("a jq filter that selects nothing: %q", got)
	}
}

func TestShellWords(t *testing.T) {
	for line, want := range map[string]string{
		`lagscope a 'b c' "d \"e\"" # f`:           `[lagscope a b c d "e"]`,
		`lagscope a|jq -c '.x' > out.txt`:          `[lagscope a] | [jq -c .x]`,
		`lagscope a && lagscope b 2>/dev/null; c`:  `[lagscope a] && [lagscope b] ; [c]`,
		`lagscope --x=y#z`:                         `[lagscope --x=y#z]`,
		`lagscope a >> log`:                        `[lagscope a]`,
		`lagscope 'select(.type=="a" or .x=="b")'`: `[lagscope select(.type=="a" or .x=="b")]`,
	} {
		segs, ops, err := shellWords(line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		var b strings.Builder
		for i, s := range segs {
			if i > 0 {
				b.WriteString(" " + ops[i-1] + " ")
			}
			fmt.Fprintf(&b, "%v", s)
		}
		if b.String() != want {
			t.Errorf("%q: %s, want %s", line, b.String(), want)
		}
	}
}

// example is one command line and where it was found.
type example struct{ where, line string }

// helpExamples reads the Examples sections of `lagscope --help` and of
// every command's --help, as printed, and the command lines a command's
// description shows (indented, starting with lagscope).
func helpExamples(t *testing.T) []example {
	t.Helper()
	var out []example
	pages := [][]string{{"--help"}}
	for _, c := range sortedCommands() {
		pages = append(pages, []string{c.name, "--help"})
	}
	for _, args := range pages {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("lagscope %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		in, usage, n := false, false, 0
		for _, l := range strings.Split(stdout.String(), "\n") {
			switch {
			case l == "Examples:":
				in = true
			case in && strings.HasPrefix(l, "  "):
				out = append(out, example{"lagscope " + strings.Join(args, " "), strings.TrimSpace(l)})
				n++
			case in:
				in = false
			case l == "Usage:":
				usage = true
			case usage:
				usage = false // the synopsis, with its placeholders, is no example
			case strings.HasPrefix(l, "  lagscope"):
				// A command line in a command's description.
				out = append(out, example{"lagscope " + strings.Join(args, " "), strings.TrimSpace(l)})
			}
		}
		if n == 0 {
			t.Errorf("lagscope %s shows no examples", strings.Join(args, " "))
		}
	}
	return out
}

// readmeExamples are the README's lagscope command lines: inline code
// that starts with `lagscope` (a span broken over two lines is joined as
// markdown joins it) and the lines of its sh blocks that do.
func readmeExamples(t *testing.T) []example {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var prose strings.Builder
	fence := ""
	for _, l := range strings.SplitAfter(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && strings.HasPrefix(trimmed, "```"):
			fence = strings.TrimPrefix(trimmed, "```")
			prose.WriteString("\n")
		case fence != "" && trimmed == "```":
			fence = ""
		case fence == "sh":
			if strings.HasPrefix(trimmed, "lagscope") {
				out = append(out, example{"README.md", trimmed})
			}
		case fence == "":
			prose.WriteString(l)
		}
	}
	spans := regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose.String(), -1)
	for _, m := range spans {
		s := strings.Join(strings.Fields(m[1]), " ")
		if s == "lagscope" || strings.HasPrefix(s, "lagscope ") {
			out = append(out, example{"README.md", s})
		}
	}
	return out
}

// sessionCode is a code in the form a host prints it (cmd_code.go).
var sessionCode = regexp.MustCompile(`^[` + codeAlphabet + `]{4}(-[` + codeAlphabet + `]{4}){` + fmt.Sprint(codeLetters/4-1) + `}$`)

// commandArgs is how many arguments each command takes besides flags:
// join and watch go to the config's last host without one.
var commandArgs = map[string][2]int{"join": {0, 1}, "watch": {0, 1}, "sim": {1, 1}, "replay": {1, 1}, "report": {1, 1}}

// runnable is an example that needs nothing from outside: its lagscope
// commands' arguments, and the jq filter after each, if any.
type runnable struct {
	steps []runStep
}

type runStep struct {
	args  []string
	types []string // the event types a following jq select keeps
}

// checkExample splits line as a shell would and parses every lagscope
// command in it with that command's own flags. It returns a problem, or
// "" and, when every command in the line needs nothing from outside (rung,
// config, version, sim of a file in this repository), how to run it.
func checkExample(line string) (*runnable, string) {
	segs, ops, err := shellWords(line)
	if err != nil {
		return nil, err.Error()
	}
	r := &runnable{}
	for i, seg := range segs {
		if seg[0] != "lagscope" {
			if i == 0 || ops[i-1] != "|" || seg[0] != "jq" {
				return nil, fmt.Sprintf("%s: an example runs lagscope and pipes into jq, this one pipes into %s", seg[0], seg[0])
			}
			continue
		}
		name, fs, problem := parseExample(seg[1:])
		if problem != "" {
			return nil, problem
		}
		pos := fs.Args()
		want := commandArgs[name]
		if len(pos) < want[0] || len(pos) > want[1] {
			n := fmt.Sprint(want[0])
			if want[1] != want[0] {
				n += " or " + fmt.Sprint(want[1])
			}
			plural := "s"
			if want[1] == 1 {
				plural = ""
			}
			return nil, fmt.Sprintf("lagscope %s takes %s argument%s, the example gives %d", name, n, plural, len(pos))
		}
		if (name == "join" || name == "watch") && len(pos) == 1 {
			if !fs.Changed("key") {
				return nil, "a join or watch that names a host needs --key with the host's code: a host is keyed by default"
			}
			if k := fs.Lookup("key").Value.String(); !sessionCode.MatchString(k) {
				return nil, fmt.Sprintf("--key %q is not a session code as a host prints it (7K3M-QX9P-4RTA-WZ2H)", k)
			}
		}
		if r != nil && needsNothing(name, fs, pos) {
			step := runStep{args: seg[1:]}
			if i+1 < len(segs) && ops[i] == "|" && segs[i+1][0] == "jq" {
				for _, m := range regexp.MustCompile(`\.type=="([a-z_]+)"`).FindAllStringSubmatch(strings.Join(segs[i+1], " "), -1) {
					step.types = append(step.types, m[1])
				}
			}
			r.steps = append(r.steps, step)
		} else {
			r = nil
		}
	}
	return r, ""
}

// parseExample parses a lagscope command line's arguments as run does,
// without running it: the command, its flag set after the parse.
func parseExample(args []string) (string, *pflag.FlagSet, string) {
	name, rest := defaultCommand()
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], nil
		args = args[1:]
	}
	c, ok := commands[name]
	if !ok {
		return "", nil, fmt.Sprintf("unknown command %q", name)
	}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.setup(fs)
	if err := fs.Parse(append(rest, args...)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return name, fs, ""
		}
		return "", nil, err.Error()
	}
	return name, fs, ""
}

// needsNothing: the command runs here as printed — it needs no host, no
// port and no file of the user's, and writes nothing.
func needsNothing(name string, fs *pflag.FlagSet, pos []string) bool {
	switch name {
	case "rung", "config", "version":
		return true
	case "sim":
		if fs.Changed("record") {
			return false
		}
		st, err := os.Stat(pos[0])
		return err == nil && st.Mode().IsRegular()
	}
	return false
}

// runExample runs a runnable example's lagscope commands in this process;
// a problem, or "".
func runExample(r *runnable) string {
	for _, s := range r.steps {
		var out, errb bytes.Buffer
		if code := run(s.args, &out, &errb); code != 0 || out.Len() == 0 || errb.Len() != 0 {
			return fmt.Sprintf("lagscope %s: exit %d, %d bytes on stdout, stderr %q", strings.Join(s.args, " "), code, out.Len(), errb.String())
		}
		if len(s.types) == 0 {
			continue
		}
		found := false
		for _, typ := range s.types {
			found = found || bytes.Contains(out.Bytes(), []byte(`"type":"`+typ+`"`))
		}
		if !found {
			return fmt.Sprintf("the jq filter selects no line of type %q in what lagscope %s prints", strings.Join(s.types, `" or "`), strings.Join(s.args, " "))
		}
	}
	return ""
}

// shellWords splits line as sh does for the plain command lines examples
// are: words, with '…' and "…" quoting (a backslash escapes in "…"), a #
// that starts a word begins a comment, and |, ||, &&, ; separate commands
// (ops[i] is the separator after segs[i]). Redirections (>, >>, <, 2>…)
// and their targets are dropped.
func shellWords(line string) (segs [][]string, ops []string, err error) {
	var cur []string
	var w strings.Builder
	inWord, redirect := false, false
	endWord := func() {
		if !inWord {
			return
		}
		if redirect {
			redirect = false
		} else {
			cur = append(cur, w.String())
		}
		w.Reset()
		inWord = false
	}
	endSeg := func(op string) error {
		endWord()
		if len(cur) == 0 {
			return fmt.Errorf("empty command before %q", op)
		}
		segs, cur = append(segs, cur), nil
		if op != "" {
			ops = append(ops, op)
		}
		return nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, nil, errors.New("unterminated quote")
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				w.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, nil, errors.New("unterminated quote")
			}
			inWord = true
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			i = len(line)
		case c == '|' || c == ';' || (c == '&' && strings.HasPrefix(line[i:], "&&")):
			op := string(c)
			if i+1 < len(line) && line[i+1] == c {
				op, i = op+op, i+1
			}
			if err := endSeg(op); err != nil {
				return nil, nil, err
			}
		case c == '>' || c == '<':
			// 2> and the like: the digit before is the stream, not a word.
			if inWord && w.Len() == 1 && w.String()[0] >= '0' && w.String()[0] <= '9' {
				w.Reset()
				inWord = false
			}
			endWord()
			if i+1 < len(line) && line[i+1] == '>' {
				i++
			}
			redirect = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if err := endSeg(""); err != nil {
		return nil, nil, err
	}
	if len(ops) != len(segs)-1 {
		return nil, nil, errors.New("a command line may not end in a separator")
	}
	return segs, ops, nil
}
