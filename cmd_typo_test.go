package main

import (
	"bytes"
	"testing"
)

// A mistyped command gets the closest one suggested; a flag before any
// command is named as typed, without a command the user never named; both
// are bad input (exit 2) on one line.
func TestTyposGetOneHelpfulLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"hots"}, "lagscope: unknown command \"hots\": did you mean host? (see lagscope --help)\n"},
		{[]string{"jion", "1.2.3.4"}, "lagscope: unknown command \"jion\": did you mean join? (see lagscope --help)\n"},
		{[]string{"WATCH"}, "lagscope: unknown command \"WATCH\": did you mean watch? (see lagscope --help)\n"},
		{[]string{"xyzzy"}, "lagscope: unknown command \"xyzzy\" (see lagscope --help)\n"},
		{[]string{"--verbose"}, "lagscope: unknown flag: --verbose (flags before a command are the demo's: see lagscope --help)\n"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != exitUsage || errb.String() != c.want {
			t.Errorf("lagscope %q: exit %d, stderr %q; want 2, %q", c.args, code, errb.String(), c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"host", "host", 0}, {"hots", "host", 1}, {"hst", "host", 1}, {"hostt", "host", 1}, {"jion", "join", 1},
		{"sim", "rung", 4}, {"", "demo", 4}, {"replya", "replay", 1},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
