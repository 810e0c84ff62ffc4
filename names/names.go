// Package names is the one rule for a player's name, wherever it comes from:
// a peer's handshake, a scenario file, a recording, a flag.
//
// A name is text a stranger chose, shown to every other player and compared
// to decide who is who. So:
//
//   - Validate enforces the PRECIS Nickname profile (RFC 8266, through
//     golang.org/x/text/secure/precis): printable letters, digits, symbols
//     and punctuation, inner spaces kept (collapsed to one ASCII space, the
//     ends trimmed), NFKC so that fullwidth and other compatibility forms
//     become their plain letters. Control characters (ESC included),
//     bidirectional overrides, invisible fillers such as U+3164 and other
//     default-ignorable code points are refused, and so is a name that is
//     empty or longer than 32 bytes once canonical (the handshake's name
//     field).
//   - Key is the comparison key: the Nickname comparison form (case folded)
//     reduced to its confusables skeleton (Unicode UTS #39, through
//     github.com/mtibben/confusables), so `Ｂｏｂ`, `BOB` and `bob` share a
//     key, and so do Cyrillic `аlice` and Latin `alice`. Two names collide,
//     and the second is refused as taken, exactly when their keys are equal.
//
// A key is for comparison only: it mixes scripts and is never shown.
package names

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/secure/precis"
)

// maxLen is the longest canonical name, in bytes: the handshake carries a
// name in a field of this size (netcore.MaxNameLen; a test holds the two
// equal).
const maxLen = 32

// maxInput bounds the bytes Validate looks at. NFKC may shorten a name
// (fullwidth letters are 3 bytes, plain ones 1), so the input may be longer
// than maxLen, but not without limit: the work done for a stranger's name
// stays small.
const maxInput = 4 * maxLen

// errInvalid is wrapped by every error of Validate.
var errInvalid = errors.New("invalid name")

// invalid is an errInvalid naming the problem, on one line. The name is
// quoted with %q so that a control character in it is never printed raw.
func invalid(name, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", errInvalid, name, fmt.Sprintf(format, args...))
}

// Validate checks a name and returns its canonical form, the one to store,
// send and show. Validate is idempotent: Validate(c) returns c for any c it
// returned. The error is one line and names the problem.
func Validate(name string) (canonical string, err error) {
	if name == "" {
		return "", fmt.Errorf("%w: the name is empty", errInvalid)
	}
	if len(name) > maxInput {
		return "", fmt.Errorf("%w: %d bytes, far longer than %d", errInvalid, len(name), maxLen)
	}
	if !utf8.ValidString(name) {
		return "", invalid(name, "not valid UTF-8")
	}
	// Name the offending character before precis does, since its own
	// errors ("disallowed rune encountered") do not say which.
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return "", invalid(name, "control character %U is not allowed", r)
		case invisible(r):
			return "", invalid(name, "invisible character %U is not allowed", r)
		}
	}
	c, err := precis.Nickname.String(name)
	if err != nil {
		if onlySpaces(name) {
			return "", invalid(name, "only spaces")
		}
		for _, r := range name {
			if _, e := precis.Nickname.String(string(r)); e != nil && !unicode.IsSpace(r) {
				return "", invalid(name, "character %U is not allowed", r)
			}
		}
		return "", invalid(name, "not allowed by the nickname rules (%v)", err)
	}
	if len(c) > maxLen {
		return "", invalid(name, "%d bytes, longer than the %d a name may take: its first %d characters would fit "+
			"(a plain letter takes 1 byte, an accented one 2, CJK 3, an emoji 4)", len(c), maxLen, fitting(c))
	}
	return c, nil
}

// fitting is how many of s's characters, from the start, fit in maxLen
// bytes.
func fitting(s string) int {
	n, size := 0, 0
	for _, r := range s {
		size += utf8.RuneLen(r)
		if size > maxLen {
			break
		}
		n++
	}
	return n
}

// invisible reports characters that draw nothing yet are not controls:
// format characters (bidi overrides, zero-width joiners and spaces) and the
// Hangul fillers, which precis refuses too but which deserve their own
// word in an error.
func invisible(r rune) bool {
	switch r {
	case 0x115F, 0x1160, 0x3164, 0xFFA0: // Hangul fillers
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func onlySpaces(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// fold is Unicode full case folding; a Caser keeps state, so one is made
// per call (Key is called on admission, not per frame).
func fold(s string) string { return cases.Fold().String(s) }

// Key is the comparison key of a name: two names are the same player, and
// the later one is refused as taken, if and only if their keys are equal.
//
// It is the confusables skeleton (UTS #39) of the name's Nickname form,
// then case folded and skeletonised again: the first skeleton maps look-alikes
// from any script onto Latin (Cyrillic а → a, capital I → l), folding then
// merges case (B → b), and the second skeleton catches what folding turned
// into a look-alike. A name Validate refuses still has a key (computed on
// the name as given) so a caller can compare without validating first.
func Key(name string) string {
	s := name
	// The canonical form, not precis's CompareKey: that one lowercases
	// first, and capital I would become i before the skeleton saw an l.
	if c, err := precis.Nickname.String(name); err == nil {
		s = c
	}
	return confusables.Skeleton(fold(confusables.Skeleton(s)))
}
