package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/record"
)

// writeTimingRecording writes a simulation's recording: the master, a
// valid 2/6 timing event, the timing event sp/la with tier (what a writer
// that took it would have put beside it), and a later valid event.
func writeTimingRecording(t *testing.T, sp, la int, tier string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "run.lsrec")
	w, err := record.Create(file, record.Header{Program: "lagscope sim", Session: "s", Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	r := record.NewSimRecorder(w) // stores each event's line as printed
	timing := func(frame, sp, la, rung int, tier string) feed.Event {
		return &feed.TimingEvent{Header: feed.Header{Type: vocab.EventTiming, Frame: frame}, Decided: frame - 6,
			SendPeriod: sp, LookAhead: la, Rung: rung, Tier: tier, FPS: 30, Reason: "worse"}
	}
	for i, e := range []feed.Event{
		&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster, Frame: 0}, Player: "alice"},
		timing(70, 2, 6, 2, "Fast"),
		timing(262, sp, la, min(max(sp, 1), 10), tier),
		timing(518, 3, 9, 3, "Normal"),
	} {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		r.Line(time.Duration(i)*time.Second, "alice", raw)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}

// A timing event whose target is not a valid timing — 3/7 and 3/10 (not
// whole send periods), 0/0 (no send period), 1/1 (below rung 1's 4) — is
// damage in a recording, whatever tier it names: replay shows everything
// before it and says where and why it stopped, report says the recording
// is cut off there, and neither shows it as a timing of any tier.
func TestInvalidTimingInRecordingIsDamage_S19(t *testing.T) {
	for _, tc := range []struct {
		sp, la int
		tier   string // what the old rule would have written
	}{
		{3, 7, "Normal"}, {3, 10, "Bad"}, {0, 0, "Fast"}, {1, 1, "Fast"}, {3, 7, "—"}, {0, 0, "—"},
	} {
		t.Run(fmt.Sprintf("%d-%d %s", tc.sp, tc.la, tc.tier), func(t *testing.T) {
			file := writeTimingRecording(t, tc.sp, tc.la, tc.tier)
			want := fmt.Sprintf("timing %d/%d is not one a timing event may carry", tc.sp, tc.la)

			var out, errb bytes.Buffer
			if code := run([]string{"replay", "--json", file}, &out, &errb); code != 0 {
				t.Fatalf("replay: exit %d: %s", code, errb.String())
			}
			if s := errb.String(); !strings.Contains(s, "damaged record") || !strings.Contains(s, want) || strings.Count(s, "\n") != 1 {
				t.Errorf("replay stderr %q, want one line naming the damage: %q", s, want)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 || !strings.Contains(lines[1], `"look_ahead":6`) {
				t.Errorf("replay printed %q, want the two events before the damage", out.String())
			}

			out.Reset()
			errb.Reset()
			if code := run([]string{"report", "--format", "json", file}, &out, &errb); code != 0 {
				t.Fatalf("report: exit %d: %s", code, errb.String())
			}
			var r reportDoc // cmd_report_test.go
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Stopped, "damaged record") || !strings.Contains(r.Stopped, want) {
				t.Errorf("report stopped %q, want the damage: %q", r.Stopped, want)
			}
			if len(r.Timing) != 1 || r.Timing[0].SendPeriod != 2 || r.Timing[0].LookAhead != 6 {
				t.Errorf("report timing rows %+v, want the 2/6 before the damage alone", r.Timing)
			}

			out.Reset()
			errb.Reset()
			if code := run([]string{"report", file}, &out, &errb); code != 0 {
				t.Fatalf("report: exit %d: %s", code, errb.String())
			}
			if s := out.String(); !strings.Contains(s, "recording cut off: ") || !strings.Contains(s, want) {
				t.Errorf("report text does not show the damage %q:\n%s", want, s)
			}
		})
	}
}
