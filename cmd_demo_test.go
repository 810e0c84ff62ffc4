package main

import (
	"bytes"
	"strings"
	"testing"
)

// A --leave that names nobody who can leave, or cannot be read, is a usage
// error (exit 2) naming it, with nothing on stdout.
func TestDemoLeaveFlagRefused(t *testing.T) {
	for _, c := range []struct{ leave, says string }{
		{"bob", "want NAME@DURATION"},
		{"zed@3s", "no such player (the others are ada, bob, cyd)"},
		{"you@3s", "that is you"},
		{"bob@-1s", "positive"},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"demo", "--json", "--leave", c.leave}, &out, &errb)
		if code != exitUsage || out.Len() != 0 || !strings.Contains(errb.String(), "--leave "+c.leave) || !strings.Contains(errb.String(), c.says) {
			t.Errorf("--leave %s: exit %d, stdout %q, stderr %q", c.leave, code, out.String(), errb.String())
		}
	}
}

// A --slow that cannot be read or names nobody playing is a usage error
// (exit 2) naming it, with nothing on stdout.
func TestDemoSlowFlagRefused(t *testing.T) {
	for _, c := range []struct{ slow, says string }{
		{"ada", "want NAME=DURATION"},
		{"ada=5s", "at most 1s"},
		{"zed=50ms", "--slow zed: no such player"},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"demo", "--json", "--slow", c.slow}, &out, &errb)
		if code != exitUsage || out.Len() != 0 || !strings.Contains(errb.String(), c.says) {
			t.Errorf("--slow %s: exit %d, stdout %q, stderr %q", c.slow, code, out.String(), errb.String())
		}
	}
}
