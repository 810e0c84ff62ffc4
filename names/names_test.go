package names

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lagscope/lagscope/netcore"
)

// The canonical name must fit the handshake's name field.
func TestMaxLenIsTheHandshakeField(t *testing.T) {
	if maxLen != netcore.MaxNameLen {
		t.Fatalf("maxLen %d, netcore.MaxNameLen %d", maxLen, netcore.MaxNameLen)
	}
}

func TestValidateAccepts(t *testing.T) {
	cases := map[string]string{
		"alice":                     "alice",
		"Bob Smith":                 "Bob Smith",
		"  bob   smith  ":           "bob smith", // inner spaces kept, collapsed; ends trimmed
		"bob\u00a0smith":            "bob smith", // a no-break space is a space
		"Ｂｏｂ":                       "Bob",       // fullwidth → plain (NFKC)
		"Zoë":                       "Zoë",       // letters beyond ASCII stay
		"Łukasz_99":                 "Łukasz_99", // punctuation and digits
		"李小龙":                       "李小龙",       // other scripts
		"x-ray [7]":                 "x-ray [7]", // symbols a table escapes, not the name rule
		"a|b<c>":                    "a|b<c>",    // sinks escape these (textsafe), names keep them
		strings.Repeat("a", maxLen): strings.Repeat("a", maxLen),
	}
	for in, want := range cases {
		got, err := Validate(in)
		if err != nil || got != want {
			t.Errorf("Validate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Control characters (the terminal escape), invisible fillers and the
// rest are refused with a one-line error that names the problem.
func TestValidateRefuses(t *testing.T) {
	cases := map[string]string{
		"":                              "empty",
		"   ":                           "only spaces",
		"\x1b[2J\x1b]0;pwned\x07":       "control character U+001B",
		"bob\x00":                       "control character U+0000",
		"a\tb":                          "control character U+0009",
		"a\nb":                          "control character U+000A",
		"a\u0085b":                      "control character U+0085", // C1 NEL
		"a\u009bb":                      "control character U+009B", // C1 CSI
		"\u3164":                        "invisible character U+3164",
		"bob\u3164":                     "invisible character U+3164",
		"al\u202eice":                   "invisible character U+202E", // bidi override
		"a\u200bb":                      "invisible character U+200B", // zero-width space
		"a\xffb":                        "not valid UTF-8",
		strings.Repeat("a", maxLen+1):   "33 bytes, longer than the 32 a name may take: its first 32 characters would fit",
		strings.Repeat("é", maxLen/2+1): "34 bytes, longer than the 32 a name may take: its first 16 characters would fit",
		strings.Repeat("a", 10_000):     "far longer than 32",
		"a\ue000b":                      "character U+E000 is not allowed", // private use
	}
	for in, want := range cases {
		got, err := Validate(in)
		switch {
		case err == nil:
			t.Errorf("Validate(%q) = %q, accepted; want an error with %q", in, got, want)
		case !errors.Is(err, errInvalid):
			t.Errorf("Validate(%q): %v does not wrap errInvalid", in, err)
		case !strings.Contains(err.Error(), want):
			t.Errorf("Validate(%q): %q, want it to contain %q", in, err, want)
		case strings.ContainsAny(err.Error(), "\n\x1b\x07"):
			t.Errorf("Validate(%q): error %q is not one clean line", in, err)
		}
	}
}

// Look-alikes (full-width letters, case) are the same name.
func TestKeyLookAlikesCollide(t *testing.T) {
	same := [][2]string{
		{"Ｂｏｂ", "bob"},
		{"BOB", "bob"},
		{"\u0430lice", "alice"}, // Cyrillic а
		{"ALICE", "\u0410LICE"}, // Cyrillic А
		{"carol", "c\u0430r\u043el"},
		{"\u03bd\u03bf\u03c5", "vou"}, // Greek ν ο υ
		{"aIice", "alice"},            // capital I looks like l
		{"b0b", "bob"},                // digit zero looks like o
		{"bob  smith", "bob smith"},
		{"ｂｏｂ ｓｍｉｔｈ", "Bob Smith"},
	}
	for _, p := range same {
		if Key(p[0]) != Key(p[1]) {
			t.Errorf("%q and %q: keys %q and %q differ, want one name", p[0], p[1], Key(p[0]), Key(p[1]))
		}
	}
	differ := [][2]string{
		{"alice", "bob"},
		{"bob", "bobby"},
		{"bob smith", "bobsmith"},
		{"Zoë", "Zoe"},
		{"carol", "caro"},
	}
	for _, p := range differ {
		if Key(p[0]) == Key(p[1]) {
			t.Errorf("%q and %q share the key %q, want two names", p[0], p[1], Key(p[0]))
		}
	}
}

// The key of a name and of its canonical form agree, so a peer that stores
// canonical names compares them the same way as raw ones.
func TestKeyOfCanonical(t *testing.T) {
	for _, in := range []string{"Ｂｏｂ", "  x  y ", "Zoë", "\u0430lice"} {
		c, err := Validate(in)
		if err != nil {
			t.Fatal(err)
		}
		if Key(c) != Key(in) {
			t.Errorf("Key(%q) %q != Key(Validate) %q", in, Key(in), Key(c))
		}
	}
}

// FuzzValidate: no input panics; what Validate accepts is canonical (it
// validates to itself, fits maxLen, holds no control byte) and keeps its key.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"alice", "Ｂｏｂ", "\u0430lice", "\u3164", "\x1b[2J", " a  b ", "ﷺ", "Ⅻ", "a\u200db", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		k := Key(in)
		c, err := Validate(in)
		if err != nil {
			if c != "" {
				t.Fatalf("Validate(%q) returned %q with error %v", in, c, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate(%q): error on two lines: %q", in, err)
			}
			return
		}
		if c == "" || len(c) > maxLen || !utf8.ValidString(c) {
			t.Fatalf("Validate(%q) = %q: not a name", in, c)
		}
		for _, b := range []byte(c) {
			if b < 0x20 || b == 0x7f {
				t.Fatalf("Validate(%q) = %q holds control byte %#x", in, c, b)
			}
		}
		again, err := Validate(c)
		if err != nil || again != c {
			t.Fatalf("Validate(%q) = %q, but Validate(%q) = %q, %v", in, c, c, again, err)
		}
		if Key(c) != k {
			t.Fatalf("Key(%q) = %q but Key of its canonical %q = %q", in, k, c, Key(c))
		}
	})
}
