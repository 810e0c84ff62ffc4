package record

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/vocab"
)

// A session whose culprit's home line is slow, with hops in the scenario:
// the culprit traces its own path, the others trace theirs toward it and
// share the summaries. The recording keeps the diagnosis with where; the
// replay shows it, and the report says it in text and markdown.
func TestWhereRecordedReplayedAndReported(t *testing.T) {
	rec := recordedSim(t, `{"fps": 30, "frames": 2400, "seed": 5, "players": ["ada", "bob", "cat", "dan"],
	  "network": {"rtt_ms": 20},
	  "access": {
	    "ada": {"rtt_ms": 150, "hops": [{"addr": "192.168.1.1", "rtt_ms": 2}, {"addr": "198.18.1.1", "rtt_ms": 132}]},
	    "bob": {"rtt_ms": 10, "hops": [{"addr": "192.168.2.1", "rtt_ms": 1}]},
	    "cat": {"rtt_ms": 10, "hops": [{"addr": "192.168.3.1", "rtt_ms": 1}]},
	    "dan": {"rtt_ms": 10, "hops": [{"addr": "192.168.4.1", "rtt_ms": 1}]}}}`)
	c := newCursor(rec, "")
	u := c.advance(c.End())
	d := u.View.Diagnosis
	if d == nil || d.Culprit != "ada" {
		t.Fatalf("replayed diagnosis %+v, want ada named", d)
	}
	var where vocab.HopLink
	for _, p := range d.Players {
		if p.Player == "ada" && p.Where != nil {
			where = p.Where.Link
		}
	}
	if where != "uplink" {
		t.Fatalf("replayed diagnosis: ada's where %q, want uplink: %s", where, d.Verdict)
	}
	r := summarize(rec)
	var txt, md bytes.Buffer
	if err := r.write(&txt, FormatText); err != nil {
		t.Fatal(err)
	}
	if err := r.write(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for f, s := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		if !strings.Contains(s, "Where the delay starts: ada uplink, hop 2 (adds ") {
			t.Errorf("%s report without ada's where:\n%s", f, s)
		}
		if !strings.Contains(s, "often the router's upload queue") {
			t.Errorf("%s report without the advice:\n%s", f, s)
		}
	}
}
