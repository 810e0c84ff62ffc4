package housetest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// history matches what narrates the project's history or points at files
// a reader of the repository does not have: issue and session numbers,
// the planning documents, the seeds. Requirement numbers (T/S/L/Q, defined
// in docs/requirements.md) are the project's vocabulary and do not match,
// and neither does a session's 8-digit ID on a captured screen ("session
// 52614223 · 30 fps"): a session number of the project's history is short.
var history = regexp.MustCompile(`(?i)issue #?[0-9]|session [0-9]{1,5}\b|(CONTRACTS|SPEC|DESIGN|STYLE)\.md|seed 0{2}`)

// findHistory is history.FindString(s), the regular expression run only
// on text that could match it: every match holds "issue " before a digit
// or '#', "session " before a digit, ".md" or the seeds' "seed" and two
// zeros, in some case, so
// an ASCII line without any of them has none (a line with other bytes is
// searched whole: case folding there knows more letters than ASCII's).
// Most lines have none, and the search alone took minutes of the suite
// under the race detector.
func findHistory(s string) string {
	if !mayHold(s) {
		return ""
	}
	return history.FindString(s)
}

func mayHold(s string) bool {
	var buf [512]byte
	low := buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return true
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low = append(low, c)
	}
	before := func(word string, next func(byte) bool) bool {
		for rest := low; ; {
			i := bytes.Index(rest, []byte(word))
			if i < 0 {
				return false
			}
			rest = rest[i+len(word):]
			if len(rest) > 0 && next(rest[0]) {
				return true
			}
		}
	}
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	return before("issue ", func(c byte) bool { return digit(c) || c == '#' }) ||
		before("session ", digit) || bytes.Contains(low, []byte(".md")) || bytes.Contains(low, []byte("seed "+"00"))
}

// root is the module's root: the nearest directory above the test's with
// a go.mod.
func root(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = up
	}
}

// proseAndCode lists the files the rule holds for: every Go file, the
// README and docs/, outside testdata (goldens carry what programs print,
// a session's id among it) and hidden directories.
func proseAndCode(t *testing.T, top string) []string {
	var out []string
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") || rel == "README.md" || strings.HasPrefix(rel, "docs"+string(filepath.Separator)) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCommentsExplainNotNarrate fails on every line of code, test or doc
// that names an issue or a session, or a planning file that is not in the
// repository.
func TestCommentsExplainNotNarrate(t *testing.T) {
	top := root(t)
	files := proseAndCode(t, top)
	if len(files) < 50 {
		t.Fatalf("found %d files under %s: the walk is not where the code is", len(files), top)
	}
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(top, rel))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if m := findHistory(line); m != "" {
				t.Errorf("%s:%d: %q narrates history or names a file outside the repository: %s", rel, i+1, m, strings.TrimSpace(line))
				continue
			}
			// The same across a line break inside a comment or a
			// paragraph: "(issue" at the end of one line, "7)" on the next.
			if i+1 < len(lines) {
				next := strings.TrimLeft(strings.TrimSpace(lines[i+1]), "/#*> ")
				if m := findHistory(strings.TrimSpace(line) + " " + next); m != "" && findHistory(next) == "" {
					t.Errorf("%s:%d: %q, across the line break, narrates history: %s", rel, i+1, m, strings.TrimSpace(line))
				}
			}
		}
	}
}

// mdLink is a relative Markdown link's target, without its #anchor.
var mdLink = regexp.MustCompile(`\]\(([^)#:\s]+)(#[^)]*)?\)`)

// TestDocLinksResolve fails on a link in the README or docs/ to a file
// the repository does not have.
func TestDocLinksResolve(t *testing.T) {
	top := root(t)
	for _, rel := range proseAndCode(t, top) {
		if !strings.HasSuffix(rel, ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(top, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(top, filepath.Dir(rel), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which the repository does not have", rel, m[1])
			}
		}
	}
}
