// Package textsafe escapes text at the place it is written: a terminal or a
// markdown file.
//
// Names and message text reach lagscope from peers, scenario files and
// recordings. Whatever rule admitted them, the sink does not trust it: a
// recording may be crafted, an old build may have let anything through.
// So every string a stranger could have chosen passes through Terminal
// before it is printed to a terminal, and through MarkdownCell before it is
// put in a markdown table.
//
// Both return their argument unchanged, without allocating, when there is
// nothing to escape, which is the common case (a TUI calls them per frame).
package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Terminal returns s with every character that could steer a terminal shown
// visibly instead of written raw:
//
//   - C0 controls, DEL and C1 controls (ESC starts every escape sequence;
//     C1 CSI U+009B is one on its own), written \n, \t, \r, \a, \b, \f, \v,
//     or \xNN for the others below 0x80 and \uNNNN above;
//   - format characters (Cf): bidirectional overrides and isolates, which
//     reorder what follows them (U+202E), zero-width characters, and the
//     line and paragraph separators U+2028 and U+2029;
//   - bytes that are not UTF-8, as \xNN: a lone 0x9B is CSI to a terminal
//     in 8-bit mode.
//
// A backslash is left as it is: the output is for reading, not for
// parsing back.
func Terminal(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case unsafeRune(r):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Safe reports whether Terminal would return s unchanged: s is UTF-8 and
// holds no control or format character. A decoder can refuse text that is
// not Safe where its writer never produces such text (a recording's
// message lines, its header).
func Safe(s string) bool { return firstUnsafe(s) < 0 }

// firstUnsafe is the byte index of the first character Terminal escapes,
// or -1. Printable ASCII is checked byte by byte, the rest decoded.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

func writeEscape(b *strings.Builder, r rune) {
	switch r {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\v':
		b.WriteString(`\v`)
	default:
		switch {
		case r < 0x80:
			writeHex(b, `\x`, uint32(r), 2)
		case r <= 0xFFFF:
			writeHex(b, `\u`, uint32(r), 4)
		default:
			writeHex(b, `\U`, uint32(r), 8)
		}
	}
}

func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[v>>uint(shift)&0xF])
	}
}

// MarkdownCell returns s fit for one cell of a markdown table, shown as the
// text it is: first Terminal (a markdown file is read with cat too), then
//
//   - `|` is written `\|`, so a cell cannot end early and split the row;
//   - `<`, `>` and `&` are written as the entities &lt; &gt; &amp;, so no
//     HTML tag or entity reaches the renderer;
//   - the backslash and the characters markdown gives a meaning inside a
//     line (backtick, *, _, ~, [, ]) are escaped with a backslash, so a
//     name cannot open a code span, emphasis or a link;
//   - a newline never appears raw: Terminal has already written it \n.
func MarkdownCell(s string) string {
	s = Terminal(s)
	if !strings.ContainsAny(s, markdownSpecial) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '|', '`', '*', '_', '~', '[', ']':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// markdownSpecial is every byte MarkdownCell changes. They are all ASCII,
// so working byte by byte never splits a UTF-8 sequence.
const markdownSpecial = "<>&\\|`*_~[]"

// MarkdownText returns s fit for markdown prose: a sentence, a list item,
// emphasis. It is MarkdownCell (backslash escapes of ASCII punctuation are
// valid anywhere in CommonMark, so a cell's escapes suit prose too), and
// besides, a string that would start a block where it begins a line is
// defused, since a name may begin one ("alice left at …", "- bob: …"):
//
//   - a leading space is written &#32;, so four of them cannot open a code
//     block;
//   - a leading #, +, - or = is escaped, so it is no heading, list item or
//     underline (>, *, _, ~ and the backtick MarkdownCell has escaped
//     already);
//   - digits followed by . or ) have that mark escaped, so they are no
//     ordered list item.
func MarkdownText(s string) string {
	s = MarkdownCell(s)
	if s == "" {
		return s
	}
	switch s[0] {
	case ' ':
		return "&#32;" + s[1:]
	case '#', '+', '-', '=':
		return `\` + s
	}
	d := 0
	for d < len(s) && s[d] >= '0' && s[d] <= '9' {
		d++
	}
	if d > 0 && d < len(s) && (s[d] == '.' || s[d] == ')') {
		return s[:d] + `\` + s[d:]
	}
	return s
}

// JSON returns the JSON text b with every character Terminal would escape
// written as a \u escape, so JSON printed to a terminal cannot steer it
// either. encoding/json escapes the C0 controls but writes DEL, the C1
// controls (U+009B is CSI to a terminal) and format characters such as
// U+202E raw. Outside strings JSON has only ASCII punctuation, digits,
// letters and white space, so every such character is inside a string,
// where its \u escape (a surrogate pair above U+FFFF) decodes to the same
// text. b itself is returned when there is nothing to escape; bytes that
// are not UTF-8 (not JSON) are written \ufffd.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c == '\r' {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c == '\r' {
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			out = appendU(out, utf8.RuneError)
		case unsafeRune(r):
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				out = appendU(appendU(out, hi), lo)
			} else {
				out = appendU(out, r)
			}
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}
