package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func runRung(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"rung"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// The issue's own example line (S3, S4, S9, S17).
func TestRungHuman_S3(t *testing.T) {
	code, out, errs := runRung(t, "--rtt", "180ms")
	want := "180 ms at 30 fps: one-way 3 frames → rung 1 (1/4), Fast; with headroom 225 ms → rung 2 (2/6), Fast\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant %q", code, out, errs, want)
	}
}

func TestRungHumanExtended_S4(t *testing.T) {
	code, out, _ := runRung(t, "--rtt", "2s", "--fps", "60")
	want := "2000 ms at 60 fps: one-way 60 frames → rung 10 (10/70, extended), Bad; with headroom 2500 ms → rung 10 (10/90, extended), Bad\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d: %q, want %q", code, out, want)
	}
	_, out, _ = runRung(t, "--rtt", "20s")
	if !strings.Contains(out, "one-way 300 frames (more than 10/250 covers) → rung 10 (10/250, extended), Bad") {
		t.Fatalf("a trip past 10/250 is not called out: %q", out)
	}
}

// The exact JSON docs/cli.md fixes for `rung --json`.
func TestRungJSONContract_S3(t *testing.T) {
	code, out, errs := runRung(t, "--rtt", "200", "--json")
	want := `{"rtt_ms":200,"fps":30,"one_way_frames":3,"rung":1,"send_period":1,"look_ahead":4,"tier":"Fast","extended":false,` +
		`"headroom":{"rtt_ms":250,"one_way_frames":4,"rung":2,"send_period":2,"look_ahead":6,"tier":"Fast","extended":false}}` + "\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("exit %d\nstdout %s\nwant   %s\nstderr %q", code, out, want, errs)
	}
}

type rungJSON struct {
	RTTMS        float64 `json:"rtt_ms"`
	FPS          int     `json:"fps"`
	OneWayFrames int     `json:"one_way_frames"`
	Rung         int     `json:"rung"`
	SendPeriod   int     `json:"send_period"`
	LookAhead    int     `json:"look_ahead"`
	Tier         string  `json:"tier"`
	Extended     bool    `json:"extended"`
	Headroom     struct {
		RTTMS        float64 `json:"rtt_ms"`
		OneWayFrames int     `json:"one_way_frames"`
		Rung         int     `json:"rung"`
		SendPeriod   int     `json:"send_period"`
		LookAhead    int     `json:"look_ahead"`
		Tier         string  `json:"tier"`
		Extended     bool    `json:"extended"`
	} `json:"headroom"`
}

func decodeRung(t *testing.T, out string) rungJSON {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var v rungJSON
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	return v
}

// The R reference values through the command, with the rtt given every way
// the flag takes it.
func TestRungReferenceValues_S3(t *testing.T) {
	for _, tc := range []struct {
		rtt, fps string
		rungN    int
		timing   [2]int
		tier     string
		extended bool
	}{
		{"100", "60", 1, [2]int{1, 4}, "Fast", false},
		{"101ms", "60", 2, [2]int{2, 6}, "Fast", false},
		{"300", "60", 5, [2]int{5, 15}, "Normal", false},
		{"2s", "60", 10, [2]int{10, 70}, "Bad", true},
		{"400", "30", 3, [2]int{3, 9}, "Normal", false},
		{"401", "30", 4, [2]int{4, 12}, "Normal", false},
		{"1333", "30", 10, [2]int{10, 30}, "Bad", false},
		{"1334ms", "30", 10, [2]int{10, 40}, "Bad", true},
		{"1.4s", "30", 10, [2]int{10, 40}, "Bad", true},
		{"20s", "30", 10, [2]int{10, 250}, "Bad", true},
		{"200", "30", 1, [2]int{1, 4}, "Fast", false},
	} {
		code, out, errs := runRung(t, "--rtt", tc.rtt, "--fps", tc.fps, "--json")
		if code != 0 || errs != "" {
			t.Fatalf("--rtt %s --fps %s: exit %d, %q", tc.rtt, tc.fps, code, errs)
		}
		v := decodeRung(t, out)
		if v.Rung != tc.rungN || v.SendPeriod != tc.timing[0] || v.LookAhead != tc.timing[1] || v.Tier != tc.tier || v.Extended != tc.extended {
			t.Errorf("--rtt %s --fps %s: %+v", tc.rtt, tc.fps, v)
		}
	}
	// 200 ms at 30 fps with headroom is rung 2 (S4's example).
	v := decodeRung(t, mustRung(t, "--rtt", "200ms", "--json"))
	if v.Headroom.RTTMS != 250 || v.Headroom.Rung != 2 {
		t.Errorf("headroom %+v, want 250 ms → rung 2", v.Headroom)
	}
}

func mustRung(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runRung(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, %q", args, code, errs)
	}
	return out
}

// rtt_ms is a number and keeps fractions.
func TestRungJSONFractionalMS_S3(t *testing.T) {
	v := decodeRung(t, mustRung(t, "--rtt", "180.5", "--json"))
	if v.RTTMS != 180.5 || v.Headroom.RTTMS != 225.625 {
		t.Fatalf("rtt_ms %v headroom %v, want 180.5 and 225.625", v.RTTMS, v.Headroom.RTTMS)
	}
	v = decodeRung(t, mustRung(t, "--rtt", "1500us", "--json"))
	if v.RTTMS != 1.5 {
		t.Fatalf("rtt_ms %v, want 1.5", v.RTTMS)
	}
}

func TestRungTable_S2(t *testing.T) {
	out := mustRung(t, "--table")
	for _, want := range []string{
		"Rung ladder at 30 fps",
		"1       1/4     Fast    3 frames       200 ms",
		"3       3/9     Normal  6 frames       400 ms",
		"10      10/30   Bad     20 frames      1333.3 ms",
		"10 ext  10/250  Bad     240 frames     16000 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "←") {
		t.Error("a table without --rtt marks a row")
	}
	// With a round trip, the rows it needs are marked.
	out = mustRung(t, "--table", "--rtt", "180ms")
	for _, want := range []string{"200 ms    ← 180 ms", "266.7 ms  ← 225 ms with headroom"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out = mustRung(t, "--table", "--rtt", "2s", "--fps", "60")
	if !strings.Contains(out, "← 2000 ms needs 10/70; 2500 ms with headroom needs 10/90") {
		t.Errorf("extended needs are not marked on the extended row:\n%s", out)
	}
}

func TestRungTableJSON_S2(t *testing.T) {
	out := mustRung(t, "--table", "--json", "--fps", "60")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 11 {
		t.Fatalf("%d rows, want rungs 1–10 and the widest extended timing", len(rows))
	}
	first, second, last := rows[0], rows[1], rows[10]
	if first["rung"] != 1.0 || first["send_period"] != 1.0 || first["look_ahead"] != 4.0 || first["tier"] != "Fast" ||
		first["max_one_way_frames"] != 3.0 || first["max_rtt_ms"] != 100.0 || first["fps"] != 60.0 || first["extended"] != false {
		t.Errorf("rung 1 row %v", first)
	}
	if second["max_rtt_ms"] != 133.333333 {
		t.Errorf("rung 2 covers %v ms, want 133.333333", second["max_rtt_ms"])
	}
	if last["look_ahead"] != 250.0 || last["extended"] != true || last["tier"] != "Bad" || last["max_rtt_ms"] != 8000.0 {
		t.Errorf("last row %v", last)
	}
}

// Bad input: one line on stderr, nothing on stdout, exit 2.
func TestRungBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rtt", "-5ms"}, "negative"},
		{[]string{"--rtt=-5"}, "negative"},
		{[]string{"--rtt", "abc"}, "--rtt"},
		{[]string{"--rtt", "NaN"}, "--rtt"},
		{[]string{"--rtt", "Inf"}, "--rtt"},
		{[]string{"--rtt", "1e300"}, "too long"},
		{[]string{"--rtt", "2562047h"}, "too long (at most 1h0m0s)"}, // Its headroom overflowed
		{[]string{"--rtt", "3600001"}, "too long"},
		{[]string{"--table", "--rtt", "61m"}, "too long"},
		{[]string{"--rtt", "1e300h"}, "--rtt"},
		{[]string{"--rtt", ""}, "--rtt"},
		{[]string{}, "--rtt is required"},
		{[]string{"--json"}, "--rtt is required"},
		{[]string{"--rtt", "100", "--fps", "0"}, "--fps 0"},
		{[]string{"--rtt", "100", "--fps", "1001"}, "--fps 1001"},
		{[]string{"--table", "--fps", "-3"}, "--fps -3"},
		{[]string{"--rtt", "100", "--fps", "x"}, "--fps"},
		{[]string{"--rtt", "100", "extra"}, "unexpected argument"},
		{[]string{"--rtt", "100", "--colour"}, "colour"},
	} {
		code, out, errs := runRung(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if out != "" {
			t.Errorf("%v: wrote %q to stdout", tc.args, out)
		}
		if strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: stderr %q, want one line naming %q", tc.args, errs, tc.want)
		}
	}
}

// The edges of what is accepted.
func TestRungAcceptedEdges_S3(t *testing.T) {
	for _, args := range [][]string{
		{"--rtt", "0"}, {"--rtt", "0s"}, {"--rtt", "1", "--fps", "1"}, {"--rtt", "1", "--fps", "1000"},
		{"--table", "--fps", "1000"}, {"--rtt", " 250 "}, {"--rtt", "1h"}, {"--rtt", "3600000"},
	} {
		if code, _, errs := runRung(t, args...); code != 0 {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

func TestRungHelp(t *testing.T) {
	code, out, _ := runRung(t, "--help")
	if code != 0 || !strings.Contains(out, "--rtt") || !strings.Contains(out, "--table") || !strings.Contains(out, "lagscope rung --rtt 180ms") {
		t.Fatalf("exit %d, help %q", code, out)
	}
	var top bytes.Buffer
	run([]string{"--help"}, &top, &bytes.Buffer{})
	if !strings.Contains(top.String(), "rung") {
		t.Fatalf("rung is not listed in --help:\n%s", top.String())
	}
}
