package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe"
)

// A live recording's header is written before the session has a name, and
// a machine lists its links in the order the others joined: the report
// takes the session's name from the recorded views, lists links in name
// order, and counts one wait as "1 wait" (issue 8's report).
func TestReportLiveSessionNameAndOrder(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Program: "lagscope demo", Self: "you"})
	if err != nil {
		t.Fatal(err)
	}
	lk := func(peer string, srtt float64) probe.LinkView {
		return probe.LinkView{Peer: peer, LinkStat: probe.LinkStat{From: "you", To: peer, State: "measured", SRTTMs: f64(srtt), Sent: u64(10), Retransmitted: u64(0)}}
	}
	for s := range 3 {
		if err := w.View(probe.View{At: time.Duration(s) * time.Second, Session: "f41de538", Self: "you",
			Links: []probe.LinkView{lk("cyd", 40), lk("ada", 100), lk("bob", 50)}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Event(2*time.Second, "you", &probe.StallEvent{Header: probe.Header{Type: "stall", Frame: 60}, Player: "you", WaitMs: 170, Cause: "cyd"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := Summarize(rec)
	if r.Session != "f41de538" {
		t.Fatalf("session %q", r.Session)
	}
	var to []string
	for _, l := range r.Links {
		to = append(to, l.To)
	}
	if strings.Join(to, " ") != "ada bob cyd" {
		t.Fatalf("links in order %v", to)
	}
	var md bytes.Buffer
	if err := r.Write(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "f41de538 — 00:02") || !strings.Contains(md.String(), "170 ms over 1 wait (you 170 ms)") {
		t.Fatalf("markdown:\n%s", md.String())
	}
}
