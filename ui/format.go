package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/textsafe"
	"github.com/lagscope/lagscope/units"
)

// unknown is how every value that is not known is written (L3): never 0.
const unknown = "—"

// fmtMs writes a duration in milliseconds, or unknown (L3).
func fmtMs(d time.Duration, known bool) string {
	if !known {
		return unknown
	}
	return fmtMsVal(units.Millis(d))
}

func fmtMsVal(v float64) string { return string(appendMsVal(nil, v)) }

// The append forms write into a buffer the caller keeps, so the link
// table's numbers cost no allocation; the fmt forms are them.

func appendMs(dst []byte, d time.Duration) []byte { return appendMsVal(dst, units.Millis(d)) }

func appendMsVal(dst []byte, v float64) []byte {
	switch {
	case v < 10:
		return strconv.AppendFloat(dst, v, 'f', 1, 64)
	default:
		return strconv.AppendFloat(dst, v, 'f', 0, 64)
	}
}

// fmtSec writes a millisecond value in seconds, for connection timeouts
// (2 s to 30 s, T10).
func fmtSec(d time.Duration) string { return string(appendSec(nil, d)) }

func appendSec(dst []byte, d time.Duration) []byte {
	v := units.Millis(d)
	if v < 10000 {
		return append(strconv.AppendFloat(dst, v/1000, 'f', 1, 64), 's')
	}
	return append(strconv.AppendFloat(dst, v/1000, 'f', 0, 64), 's')
}

// fmtCount writes a datagram count, or unknown (L3).
func fmtCount(v uint64, known bool) string {
	if !known {
		return unknown
	}
	return strconv.FormatUint(v, 10)
}

func fmtShare(s share) string {
	if !s.ok {
		return unknown
	}
	return string(appendShare(nil, s))
}

// appendShare writes a known share.
func appendShare(dst []byte, s share) []byte {
	p := s.v * 100
	switch {
	case p >= 99.95:
		return append(dst, "100%"...)
	case p >= 10:
		return append(strconv.AppendFloat(dst, p, 'f', 0, 64), '%')
	default:
		return append(strconv.AppendFloat(dst, p, 'f', 1, 64), '%')
	}
}

// fmtWait writes a wait: milliseconds below a second, then seconds, then
// minutes.
func fmtWait(d time.Duration) string { return string(appendWait(nil, d)) }

func appendWait(dst []byte, d time.Duration) []byte {
	switch {
	case d < time.Second:
		return append(strconv.AppendInt(dst, units.WholeMillis(d), 10), "ms"...)
	case d < 10*time.Second:
		return append(strconv.AppendFloat(dst, d.Seconds(), 'f', 1, 64), 's')
	case d < 100*time.Second:
		return append(strconv.AppendFloat(dst, d.Seconds(), 'f', 0, 64), 's')
	}
	return fmt.Appendf(dst, "%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// fmtClock writes a time since the session's start as m:ss or h:mm:ss.
func fmtClock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// fit makes s exactly w cells wide: cut (ANSI-aware) or padded.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := width(s)
	if n == w {
		return s
	}
	if n < w {
		return s + spaces(w-n)
	}
	return cut(s, w)
}

// fitName fits a name in w cells, counted in terminal cells (a CJK letter
// or an emoji takes two): padded when it fits, else cut and ended with "…",
// so a cut name never reads as a whole, shorter one.
func fitName(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return fit(s, w)
	}
	return fit(ansi.Truncate(s, w, "…"), w)
}

// cut cuts s, wider than w cells, to w cells.
func cut(s string, w int) string {
	if cutHook != nil {
		if cut, next, ok := cutAt(stripANSI(s), w); ok && isWordRune(cut) && isWordRune(next) {
			cutHook(stripANSI(s), w)
		}
	}
	if strings.ContainsAny(s, "\t\n\r") {
		return lipgloss.NewStyle().MaxWidth(w).Render(s)
	}
	// What lipgloss's MaxWidth does to one line without tabs, without its
	// style machinery around it.
	return ansi.Truncate(s, w, "")
}

// writeFit writes s onto b exactly w cells wide, as fit does.
func writeFit(b *strings.Builder, s string, w int) {
	if w <= 0 {
		return
	}
	n := width(s)
	switch {
	case n == w:
		b.WriteString(s)
	case n < w:
		b.WriteString(s)
		writeSpaces(b, w-n)
	default:
		b.WriteString(cut(s, w))
	}
}

// width is the cells s takes on screen (lipgloss.Width, without splitting
// a single line into a slice of one).
func width(s string) int {
	if strings.IndexByte(s, '\n') >= 0 {
		return lipgloss.Width(s)
	}
	return ansi.StringWidth(s)
}

// blanks are spaces to slice padding from instead of building it.
var blanks = strings.Repeat(" ", 512)

// spaces is n spaces.
func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= len(blanks) {
		return blanks[:n]
	}
	return strings.Repeat(" ", n)
}

func writeSpaces(b *strings.Builder, n int) {
	for n > len(blanks) {
		b.WriteString(blanks)
		n -= len(blanks)
	}
	if n > 0 {
		b.WriteString(blanks[:n])
	}
}

// cutHook, when set (by tests), hears of every text fit cuts in the middle
// of a word: the check behind "never cut mid-word".
var cutHook func(text string, w int)

// cutAt is the last rune kept and the first rune dropped when plain text
// is cut to w cells.
func cutAt(plain string, w int) (last, next rune, ok bool) {
	x := 0
	for _, r := range plain {
		rw := lipgloss.Width(string(r))
		if x+rw > w {
			return last, r, x > 0
		}
		x += rw
		last = r
	}
	return 0, 0, false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// padLeft right-aligns plain text in w cells.
func padLeft(s string, w int) string {
	n := width(s)
	if n >= w {
		return fit(s, w)
	}
	return spaces(w-n) + s
}

// block makes lines exactly w wide and h high.
func block(lines []string, w, h int) string {
	var b strings.Builder
	b.Grow(h * (w + 1))
	for i := 0; i < h; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(lines) {
			writeFit(&b, lines[i], w)
		} else {
			writeSpaces(&b, w)
		}
	}
	return b.String()
}

// blockString is block over a multi-line string.
func blockString(s string, w, h int) string { return block(strings.Split(s, "\n"), w, h) }

// sideBySide joins blocks left to right, top-aligned, as
// lipgloss.JoinHorizontal does: a shorter block is padded with empty lines
// and every line of a block with spaces to the block's widest line.
func sideBySide(blocks ...string) string {
	switch len(blocks) {
	case 0:
		return ""
	case 1:
		return blocks[0]
	}
	var lines [8][]string // a few blocks without a slice of slices on the heap
	split := lines[:0]
	widest := make([]int, len(blocks))
	height, size := 0, 0
	for i, bl := range blocks {
		ls := strings.Split(bl, "\n")
		for _, l := range ls {
			widest[i] = max(widest[i], ansi.StringWidth(l))
		}
		split = append(split, ls)
		height = max(height, len(ls))
		size += len(bl)
	}
	var b strings.Builder
	b.Grow(size + height*8)
	for y := 0; y < height; y++ {
		for i, ls := range split {
			l := ""
			if y < len(ls) {
				l = ls[y]
			}
			b.WriteString(l)
			writeSpaces(&b, widest[i]-ansi.StringWidth(l))
		}
		if y < height-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func lipglossWidth(s string) int { return lipgloss.Width(s) }

// wrap breaks plain text into lines of at most w cells, between words. A
// word longer than a whole line is the only thing ever split: long
// messages wrap, never cut mid-word.
func wrap(text string, w int) []string {
	if w <= 0 {
		return nil
	}
	if lipgloss.Width(text) <= w {
		return []string{text}
	}
	var out []string
	var line strings.Builder
	lw := 0
	for _, word := range strings.Fields(text) {
		ww := lipgloss.Width(word)
		for ww > w {
			// A word wider than the line: it must be split somewhere.
			if lw > 0 {
				out = append(out, line.String())
				line.Reset()
				lw = 0
			}
			r := []rune(word)
			n := 0
			for n < len(r) && lipgloss.Width(string(r[:n+1])) <= w {
				n++
			}
			n = max(n, 1)
			out = append(out, string(r[:n]))
			word = string(r[n:])
			ww = lipgloss.Width(word)
		}
		if ww == 0 {
			continue
		}
		if lw > 0 && lw+1+ww > w {
			out = append(out, line.String())
			line.Reset()
			lw = 0
		}
		if lw > 0 {
			line.WriteByte(' ')
			lw++
		}
		line.WriteString(word)
		lw += ww
	}
	if lw > 0 || len(out) == 0 {
		out = append(out, line.String())
	}
	return out
}

// flow lays out styled parts on lines of width w, sep between parts on a
// line; a part that does not fit on the current line starts the next one,
// indented by indent. Parts are never split unless one is wider than a
// line on its own.
func flow(first string, parts []string, sep, indent string, w int) []string {
	var out []string
	line, lw := first, lipgloss.Width(first)
	fresh := true // nothing but first or indent on the line yet
	sw, iw := lipgloss.Width(sep), lipgloss.Width(indent)
	for _, p := range parts {
		pw := lipgloss.Width(p)
		if !fresh && lw+sw+pw > w {
			out = append(out, fit(line, w))
			line, lw, fresh = indent, iw, true
		}
		if !fresh {
			line += sep
			lw += sw
		}
		line += p
		lw += pw
		fresh = false
	}
	return append(out, fit(line, w))
}

// fitWords fits plain text in w cells, dropping whole words from the end
// (and saying so with "…") rather than cutting one.
func fitWords(text string, w int) string {
	if lipgloss.Width(text) <= w {
		return text
	}
	if w < 1 {
		return ""
	}
	words := strings.Fields(text)
	for n := len(words) - 1; n > 0; n-- {
		s := strings.Join(words[:n], " ") + "…"
		if lipgloss.Width(s) <= w {
			return s
		}
	}
	return "…"
}

// textOf is text from outside the program (a player's name, a message, a
// verdict naming players) made safe for the terminal: control bytes and
// escape sequences written out visibly rather than sent (textsafe).
func textOf(s string) string { return textsafe.Terminal(s) }

// fmtBytes is a byte count in the largest unit that keeps it at or above
// one: "512 B", "56.0 kB", "3.2 MB".
func fmtBytes(n uint64) string {
	switch {
	case n < 1000:
		return strconv.FormatUint(n, 10) + " B"
	case n < 1000*1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + " kB"
	case n < 1000*1000*1000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + " GB"
}

// relayOf is the host's relay counters for the pair a–b (either order),
// nil when this machine relays nothing for it.
func relayOf(s *session, a, b string) *feed.RelayStat {
	for i := range s.view.Relay {
		r := &s.view.Relay[i]
		if (r.Between[0] == a && r.Between[1] == b) || (r.Between[0] == b && r.Between[1] == a) {
			return r
		}
	}
	return nil
}

// relayText is a relayed pair's counters in one line.
func relayText(r *feed.RelayStat) string {
	t := fmtCount(r.Datagrams, true) + " packets, " + fmtBytes(r.Bytes)
	if r.RefusedDatagrams > 0 {
		t += "; refused " + fmtCount(r.RefusedDatagrams, true) + ", " + fmtBytes(r.RefusedBytes)
	}
	return t
}
