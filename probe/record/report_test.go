package record

import (
	"bytes"
	"github.com/lagscope/lagscope/vocab"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// A live recording's header is written before the session has a name, and
// a machine lists its links in the order the others joined: the report
// takes the session's name from the recorded views, lists links in name
// order, and counts one wait as "1 wait".
func TestReportLiveSessionNameAndOrder(t *testing.T) {
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "lagscope demo", Self: "you"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	lk := func(peer string, srtt float64) feed.LinkView {
		return feed.LinkView{Peer: peer, Link: feed.Link{From: "you", To: peer, State: feed.LinkMeasured, RTTKnown: true,
			SRTT: units.FromMillis(srtt), RTO: time.Second, ConnTimeout: 10 * time.Second, LossKnown: true, Sent: 10}}
	}
	for s := range 3 {
		if err := w.View(feed.View{At: time.Duration(s) * time.Second, Session: "f41de538", Self: "you",
			Links: []feed.LinkView{lk("cyd", 40), lk("ada", 100), lk("bob", 50)}}); err != nil {
			t.Fatal(err)
		}
	}
	w.event(2*time.Second, "you", &feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: 60}, Player: "you", WaitMs: 170, Cause: "cyd"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(rec)
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
	if err := r.write(&md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "f41de538 — 00:02") || !strings.Contains(md.String(), "170 ms over 1 wait (you 170 ms)") {
		t.Fatalf("markdown:\n%s", md.String())
	}
}

// The report counts executed commands per issuing player, each once
// however many machines recorded it, and how many ran on a later send frame
// than scheduled (S13).
func TestReportCountsCommands_S13(t *testing.T) {
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "test", Virtual: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	cmds := []Command{
		{Player: "alice", SendFrame: 6, Frame: 6, Seq: 1, Type: feed.CmdGame},
		{Player: "bob", SendFrame: 6, Frame: 6, Seq: 1, Type: feed.CmdGame},
		{Player: "alice", SendFrame: 1845, Frame: 1842, Seq: 2, Type: feed.CmdGame},
		{Player: "alice", SendFrame: 1850, Frame: 1850, Seq: 3, Type: feed.CmdNetworkReport},
	}
	for _, machine := range []string{"alice", "bob"} { // both machines recorded every command
		for i, c := range cmds {
			if err := w.Command(time.Duration(i)*time.Second, machine, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()
	rec, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(rec)
	want := []commandRow{{Player: "alice", Count: 3, Moved: 1}, {Player: "bob", Count: 1}}
	if !slices.Equal(r.Commands, want) {
		t.Fatalf("commands %+v, want %+v", r.Commands, want)
	}
	var txt bytes.Buffer
	r.write(&txt, FormatText)
	if !strings.Contains(txt.String(), "Commands executed: alice 3, bob 1; 1 ran on a later send frame than scheduled") {
		t.Fatalf("text:\n%s", txt.String())
	}
}
