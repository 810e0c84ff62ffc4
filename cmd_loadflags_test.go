package main

import (
	"bytes"
	"strings"
	"testing"
)

// parseRate reads the rates --load-cap takes and refuses the rest.
func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"50mbit", 50e6}, {"50Mbit", 50e6}, {"2.5mbit", 2.5e6}, {"500kbit", 0}, {"1500kbit", 1.5e6},
		{"1gbit", 1e9}, {"20mbps", 20e6}, {"8Mbit/s", 8e6}, {"3000000", 3e6}, {"10gbit", 10e9},
		{"11gbit", 0}, {"", 0}, {"fast", 0}, {"-5mbit", 0}, {"NaNmbit", 0}, {"mbit", 0},
	} {
		got, err := parseRate(c.in)
		if c.want == 0 {
			if err == nil {
				t.Errorf("parseRate(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// A bad load flag is a usage error: one line naming the flag, exit 2.
func TestLoadFlagsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"host", "--load-cap", "fast"}, "--load-cap \"fast\": want a rate such as 50mbit, 500kbit or 1gbit\n"},
		{[]string{"join", "127.0.0.1:9", "--load-cap", "100kbit"}, "--load-cap \"100kbit\": must be between 1mbit and 10gbit\n"},
		{[]string{"host", "--name", "ada", "--load-test", "ada"}, "--load-test \"ada\": that is this machine's own name\n"},
		{[]string{"watch", "127.0.0.1:9", "--load-test", " bob"}, "--load-test \" bob\": not a player name as the session writes it\n"},
	} {
		var out, errb bytes.Buffer
		code, stderr := run(c.args, &out, &errb), errb.String()
		if code != 2 || !strings.HasSuffix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a line ending %q", c.args, code, stderr, c.want)
		}
	}
}
