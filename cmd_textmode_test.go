package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The TUI opens only on a terminal that can draw it; a pipe, or TERM empty
// or dumb, gets the text mode; --json always gets NDJSON.
func TestChooseFront(t *testing.T) {
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0) // a character device, as a terminal is
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var pipe bytes.Buffer
	cases := []struct {
		json bool
		out  any
		term string
		want frontMode
		why  string
	}{
		{true, &pipe, "xterm", frontJSON, ""},
		{true, tty, "dumb", frontJSON, ""},
		{false, &pipe, "xterm-256color", frontText, "stdout is not a terminal"},
		{false, tty, "dumb", frontText, "TERM is dumb"},
		{false, tty, "", frontText, "TERM is empty"},
		{false, tty, "xterm-256color", frontTUI, ""},
	}
	for _, c := range cases {
		var mode frontMode
		var why string
		switch o := c.out.(type) {
		case *os.File:
			mode, why = chooseFront(c.json, o, c.term)
		case *bytes.Buffer:
			mode, why = chooseFront(c.json, o, c.term)
		}
		if mode != c.want || why != c.why {
			t.Errorf("json %v, %T, TERM %q: mode %d %q, want %d %q", c.json, c.out, c.term, mode, why, c.want, c.why)
		}
	}
}

// Into a pipe the demo prints words, a line a second, and no NDJSON.
func TestDemoIntoAPipeIsText(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "--duration", "3s"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "lagscope: stdout is not a terminal, so the session is shown as a line of text a second (--json") {
		t.Fatalf("output:\n%s", out.String())
	}
	line := regexp.MustCompile(`^\d\d:\d\d · (lobby: \d+ of \d+ players seated|timing \d+/\d+ (Fast|Normal|Poor|Bad))`)
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "{") || !line.MatchString(l) {
			t.Errorf("line %q is not the text mode's", l)
		}
	}
	if !strings.HasSuffix(lines[len(lines)-1], " · ended") {
		t.Errorf("last line %q does not say the session ended", lines[len(lines)-1])
	}
}
