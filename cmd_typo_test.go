package main

import (
	"bytes"
	"testing"
)

// A mistyped command or flag gets the closest one suggested; a flag before
// any command is named as typed, without a command the user never named;
// all are bad input (exit 2) on one line, nothing on stdout.
func TestTyposGetOneHelpfulLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"hots"}, "lagscope: unknown command \"hots\": did you mean host? (see lagscope --help)\n"},
		{[]string{"jion", "1.2.3.4"}, "lagscope: unknown command \"jion\": did you mean join? (see lagscope --help)\n"},
		{[]string{"WATCH"}, "lagscope: unknown command \"WATCH\": did you mean watch? (see lagscope --help)\n"},
		{[]string{"xyzzy"}, "lagscope: unknown command \"xyzzy\" (see lagscope --help)\n"},
		{[]string{"--verbose"}, "lagscope: unknown flag --verbose (flags before a command are the demo's: see lagscope --help)\n"},
		{[]string{"--jsn"}, "lagscope: unknown flag --jsn: did you mean --json? (flags before a command are the demo's: see lagscope --help)\n"},
		// Flags: within two edits, a one-dash long flag, a unique prefix.
		{[]string{"host", "--player", "3"}, "lagscope host: unknown flag --player: did you mean --players? (see lagscope host --help)\n"},
		{[]string{"host", "--player=3"}, "lagscope host: unknown flag --player: did you mean --players? (see lagscope host --help)\n"},
		{[]string{"host", "-players", "3"}, "lagscope host: unknown flag -players: did you mean --players? (see lagscope host --help)\n"},
		{[]string{"join", "1.2.3.4", "--nmae", "bob"}, "lagscope join: unknown flag --nmae: did you mean --name? (see lagscope join --help)\n"},
		{[]string{"demo", "--dur", "1m"}, "lagscope demo: unknown flag --dur: did you mean --duration? (see lagscope demo --help)\n"},
		{[]string{"report", "--fromat", "json", "x.lsrec"}, "lagscope report: unknown flag --fromat: did you mean --format? (see lagscope report --help)\n"},
		{[]string{"impair", "--latency", "40ms"}, "lagscope impair: unknown flag --latency (see lagscope impair --help)\n"},
		// watch hides --fps (an observer cannot set it): never suggested.
		{[]string{"watch", "--fp", "3"}, "lagscope watch: unknown flag --fp (see lagscope watch --help)\n"},
		{[]string{"rung", "--rtt\x1b[2J"}, "lagscope rung: unknown flag --rtt\\x1b[2J (see lagscope rung --help)\n"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != exitUsage || errb.String() != c.want || out.Len() != 0 {
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
