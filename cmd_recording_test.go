package main

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What report and replay say about a file that is not a whole recording,
// to the byte: one plain sentence naming the file, exit 2 and nothing on
// stdout for a file that is no recording at all; a note that names where a
// recording was cut short or damaged, and the rest shown, for one that
// ends early.
func TestRecordingErrorsGolden(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rnd := rand.New(rand.NewPCG(40, 4))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rnd.UintN(256))
	}
	noNewline := bytes.ReplaceAll(random[:200], []byte("\n"), []byte("x"))
	full, err := os.ReadFile(filepath.Join("testdata", "golden", "handoff.lsrec"))
	if err != nil {
		t.Fatal(err)
	}
	header := bytes.IndexByte(full, '\n') + 1

	// Cut in the middle of a record: the note names the record the cut
	// falls in (0 is the header) and where it starts.
	cut := len(full) / 2
	if full[cut-1] == '\n' {
		cut++
	}
	at := bytes.LastIndexByte(full[:cut], '\n') + 1
	index := bytes.Count(full[:at], []byte("\n"))
	truncated := write("cut.lsrec", full[:cut])

	// A damaged record: one byte of a record's body changed, its checksum
	// no longer matches.
	damaged := bytes.Clone(full)
	damagedAt := at
	damaged[damagedAt+20] ^= 0x01
	damagedFile := write("damaged.lsrec", damaged)
	line := damaged[damagedAt : damagedAt+bytes.IndexByte(damaged[damagedAt:], '\n')]
	checksum := fmt.Sprintf("checksum %08x, want %s", crc32.Checksum(line[9:], crc32.MakeTable(crc32.Castagnoli)), line[:8])

	for _, c := range []struct {
		name   string
		file   string
		code   int
		stderr string // %[1]s: the command, %[2]s: the file, %[3]s: what it shows, %[4]s: the damage
	}{
		{"random bytes", write("x.bin", random), 2, "lagscope %[1]s: %[2]s is not a lagscope recording\n"},
		{"random bytes, no line end", write("y.bin", noNewline), 2, "lagscope %[1]s: %[2]s is not a lagscope recording\n"},
		{"NDJSON", write("events.ndjson", []byte(`{"type":"master","frame":0,"player":"a"}`+"\n")), 2, "lagscope %[1]s: %[2]s is not a lagscope recording\n"},
		{"empty", write("empty.lsrec", nil), 2, "lagscope %[1]s: %[2]s is not a lagscope recording (the file is empty)\n"},
		{"a directory", dir, 2, "lagscope %[1]s: %[2]s is a directory, not a lagscope recording\n"},
		{"cut inside the header", write("head.lsrec", full[:header/2]), 2,
			"lagscope %[1]s: %[2]s is cut short: it ends inside its header, before anything was recorded\n"},
		{"cut short", truncated, 0, fmt.Sprintf("lagscope %%[1]s: note: %%[2]s was cut short at byte %d (record %d); %%[3]s\n", at, index)},
		{"damaged", damagedFile, 0, fmt.Sprintf("lagscope %%[1]s: note: %%[2]s has a damaged record at byte %d (record %d): %%[4]s; %%[3]s\n", damagedAt, index)},
	} {
		for _, cmd := range []string{"report", "replay"} {
			rest := map[string]string{"report": "the report covers everything before it", "replay": "showing everything before it"}[cmd]
			args := []string{cmd, c.file}
			if cmd == "replay" {
				args = []string{cmd, "--json", c.file}
			}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			got := errb.String()
			want := fmt.Sprintf(c.stderr, cmd, c.file, rest, checksum)
			if code != c.code || got != want {
				t.Errorf("%s: lagscope %s: exit %d, stderr\n%q\nwant exit %d,\n%q", c.name, strings.Join(args, " "), code, got, c.code, want)
			}
			if (out.Len() == 0) != (c.code != 0) {
				t.Errorf("%s: lagscope %s: exit %d with %d bytes on stdout", c.name, cmd, code, out.Len())
			}
		}
	}
}

// A cut-short recording's report still says so in the report itself, as
// it always did, besides the note on stderr.
func TestReportOfCutShortRecordingSaysSo(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "golden", "handoff.lsrec"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cut.lsrec")
	if err := os.WriteFile(file, full[:len(full)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--format", "markdown", file}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Recording cut off") || !strings.Contains(errb.String(), "was cut short at byte") {
		t.Errorf("stdout:\n%s\nstderr: %q", out.String(), errb.String())
	}
}
