package textsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A player name made of terminal escapes (clear the screen, set the window
// title) reaches a terminal as visible text, never as ESC/OSC/BEL bytes.
func TestTerminalEscapeScenarioName(t *testing.T) {
	got := Terminal("\u001b[2J\u001b]0;pwned\u0007")
	if want := `\x1b[2J\x1b]0;pwned\a`; got != want {
		t.Fatalf("Terminal = %q, want %q", got, want)
	}
}

func TestTerminal(t *testing.T) {
	cases := map[string]string{
		"alice":            "alice",
		"Zoë 李 Ｂｏｂ":        "Zoë 李 Ｂｏｂ",
		`back\slash`:       `back\slash`,
		"a\nb\tc\rd":       `a\nb\tc\rd`,
		"\x00\x7f":         `\x00\x7f`,
		"a\u009b31mb":      `a\u009b31mb`, // C1 CSI
		"a\x9bb":           `a\x9bb`,      // a lone byte, not UTF-8
		"ab\u202ecd":       `ab\u202ecd`,  // right-to-left override
		"x\u2066y\u2069":   `x\u2066y\u2069`,
		"a\u200bb\ufeff":   `a\u200bb\ufeff`,
		"l1\u2028l2":       `l1\u2028l2`,
		"tag\U000E0041":    `tag\U000e0041`, // tag characters are Cf
		"ends in \xe2\x80": `ends in \xe2\x80`,
	}
	for in, want := range cases {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
		if Safe(in) != (in == want) {
			t.Errorf("Safe(%q) = %v, want %v", in, Safe(in), in == want)
		}
	}
}

func TestMarkdownCell(t *testing.T) {
	cases := map[string]string{
		"alice":                     "alice",
		"a|b":                       `a\|b`,
		"<script>alert(1)</script>": "&lt;script&gt;alert(1)&lt;/script&gt;",
		"x & y":                     "x &amp; y",
		"`code`":                    "\\`code\\`",
		`trailing\`:                 `trailing\\`, // cannot escape the cell's closing |
		"[click](http://x)":         `\[click\](http://x)`,
		"*bold* _it_ ~s~":           `\*bold\* \_it\_ \~s\~`,
		"two\nlines":                `two\\nlines`,
		"\x1b[2J":                   `\\x1b\[2J`,
	}
	for in, want := range cases {
		if got := MarkdownCell(in); got != want {
			t.Errorf("MarkdownCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// MarkdownText: a name that begins a line of prose (a list item, a
// sentence) cannot start a block of its own.
func TestMarkdownText(t *testing.T) {
	cases := map[string]string{
		"alice":         "alice",
		"":              "",
		"# head":        `\# head`,
		"- item":        `\- item`,
		"+ item":        `\+ item`,
		"===":           `\===`,
		"1. first":      `1\. first`,
		"12) twelfth":   `12\) twelfth`,
		"2024 was fine": "2024 was fine",
		"    code":      "&#32;   code",
		"> quote":       "&gt; quote",
		"a|b <i>":       `a\|b &lt;i&gt;`,
		"bob-2":         "bob-2",
	}
	for in, want := range cases {
		if got := MarkdownText(in); got != want {
			t.Errorf("MarkdownText(%q) = %q, want %q", in, got, want)
		}
	}
}

// JSON printed to a terminal: what encoding/json leaves raw (DEL, C1
// controls, format characters) becomes a \u escape that decodes to the
// same string.
func TestJSON(t *testing.T) {
	for _, in := range []string{"alice", "Zoë 李", "a\u009b31m", "ab\u202ecd", "del\x7f", "tag\U000E0041", "l1\u2028l2", "\x1b]0;x\x07"} {
		b, err := json.Marshal(map[string]string{in: in})
		if err != nil {
			t.Fatal(err)
		}
		out := JSON(b)
		if !Safe(string(out)) {
			t.Errorf("JSON(%q) = %q holds a raw control or format character", b, out)
		}
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil || back[in] != in {
			t.Errorf("JSON(%q) = %q reads back as %q (%v)", b, out, back, err)
		}
		if Safe(string(b)) != (string(out) == string(b)) {
			t.Errorf("JSON(%q) = %q changed clean text or kept an unsafe one", b, out)
		}
	}
	if got := string(JSON([]byte("\"\xff\""))); got != `"\ufffd"` {
		t.Errorf("JSON of a non-UTF-8 byte = %q", got)
	}
	if got := string(JSON([]byte("{\n  \"a\": 1\n}"))); got != "{\n  \"a\": 1\n}" {
		t.Errorf("JSON changed white space: %q", got)
	}
}

// Nothing to escape costs nothing: a TUI calls these on every redraw.
func TestNoAllocationWhenClean(t *testing.T) {
	s := strings.Repeat("alice Zoë ", 4)
	if n := testing.AllocsPerRun(100, func() { _ = Terminal(s); _ = MarkdownCell(s); _ = MarkdownText(s) }); n != 0 {
		t.Fatalf("%v allocs per run on clean text, want 0", n)
	}
}

// unescapedPipe reports a | that a markdown table would take as a cell
// border: one not preceded by a backslash that is itself unescaped.
func unescapedPipe(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the next byte is escaped
		case '|':
			return true
		}
	}
	return false
}

func checkTerminalSafe(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q → %q: not UTF-8", in, out)
	}
	for _, r := range out {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Fatalf("%q → %q: raw %U", in, out, r)
		}
	}
	for _, c := range []byte(out) {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("%q → %q: control byte %#x", in, out, c)
		}
	}
}

func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"alice", "\x1b]0;pwned\x07", "a\x9bb", "\u202e", "a|b\\", "<b>", "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Terminal(in)
		checkTerminalSafe(t, in, out)
		if Safe(in) != (out == in) || !Safe(out) {
			t.Fatalf("Safe(%q) = %v, Terminal = %q, Safe of it %v", in, Safe(in), out, Safe(out))
		}
		if Terminal(out) != out {
			t.Fatalf("Terminal(%q) = %q is not stable", in, out)
		}
		md := MarkdownCell(in)
		checkTerminalSafe(t, in, md)
		if unescapedPipe(md) || strings.ContainsAny(md, "<>\n") {
			t.Fatalf("MarkdownCell(%q) = %q: a raw | < > or newline", in, md)
		}
		if utf8.ValidString(in) {
			b, _ := json.Marshal(in)
			js := JSON(b)
			var back string
			if !Safe(string(js)) || json.Unmarshal(js, &back) != nil || back != in {
				t.Fatalf("JSON(%s) = %s: unsafe or reads back as %q", b, js, back)
			}
		}
		mt := MarkdownText(in)
		checkTerminalSafe(t, in, mt)
		if strings.ContainsAny(mt, "<>\n") || strings.HasPrefix(mt, " ") || (mt != "" && strings.ContainsRune("#+-=", rune(mt[0]))) {
			t.Fatalf("MarkdownText(%q) = %q: raw < > newline or a block start", in, mt)
		}
	})
}

func BenchmarkTerminal(b *testing.B) {
	for _, c := range []struct{ name, s string }{{"clean", "Connection quality target: Poor"}, {"escape", "\x1b[2J\x1b]0;pwned\x07 bob"}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = Terminal(c.s)
				_ = MarkdownCell(c.s)
			}
		})
	}
}
