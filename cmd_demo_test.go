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
