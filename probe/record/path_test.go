package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/lagscope/lagscope/vocab"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// pathSample is a traced path: a LAN hop that adds delay, a silent uplink,
// a rate-limited hop and the peer.
func pathSample(peer string) feed.PathView {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	return feed.PathView{Peer: peer, Available: true, Complete: true,
		Hops: []feed.PathHop{
			{TTL: 1, Addr: netip.MustParseAddr("192.168.1.1"), Link: "lan", Sent: 30, Answered: true,
				Best: ms(0.6), Median: ms(210.4), Last: ms(230), Worst: ms(260.1), Judged: true},
			{TTL: 2, Link: "uplink", Sent: 30, Loss: 1, Judged: true},
			{TTL: 3, Addr: netip.MustParseAddr("100.64.0.1"), Link: "isp", Sent: 30, Loss: 0.1, Answered: true, RateLimited: true,
				Best: ms(211), Median: ms(214), Last: ms(214), Worst: ms(300), Judged: true},
			{TTL: 4, Addr: netip.MustParseAddr("2001:db8::7"), Link: "peer", Sent: 30, Answered: true,
				Best: ms(212), Median: ms(215), Last: ms(215), Worst: ms(290), Judged: true},
		},
		DelayStarts: &feed.PathStart{TTL: 1, Link: "lan", Added: ms(210.4)},
	}
}

func pathEvent(from string, pv feed.PathView) *feed.PathEvent {
	return &feed.PathEvent{Header: feed.Header{Type: vocab.EventPath}, PathStat: pv.Stat(from)}
}

// pathRecording records two traced links' path events (the second twice:
// the report keeps the last) and a View holding their paths.
func pathRecording(t *testing.T) (*Recording, feed.View) {
	t.Helper()
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "lagscope host", Self: "ada"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	lossy := pathSample("cyd")
	lossy.Hops = lossy.Hops[:1]
	lossy.Complete, lossy.DelayStarts = false, nil
	lossy.LossStarts = &feed.PathStart{TTL: 1, Link: "lan", Loss: 0.0975}
	lossy.Hops[0].Loss = 0.0975
	unavailable := feed.PathView{Peer: "dan", Why: "a relayed link"}
	v := feed.View{At: 2 * time.Second, Session: "s", Self: "ada", Paths: []feed.PathView{pathSample("bob"), lossy, unavailable}}
	for i, e := range []*feed.PathEvent{pathEvent("ada", lossy), pathEvent("ada", pathSample("bob")), pathEvent("ada", unavailable),
		pathEvent("ada", lossy)} {
		if err := w.event(time.Duration(i+1)*time.Second, "ada", e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.View(v); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil {
		t.Fatalf("read: %v %v", err, rec.Stop)
	}
	return rec, v
}

// Path events and the View's paths are recorded and read back as written.
func TestPathRecordRoundTrip(t *testing.T) {
	rec, v := pathRecording(t)
	if len(rec.Records) != 5 {
		t.Fatalf("%d records", len(rec.Records))
	}
	e, ok := rec.Records[1].Event.(*feed.PathEvent)
	if !ok {
		t.Fatalf("record 1 is %T", rec.Records[1].Event)
	}
	if want := pathEvent("ada", pathSample("bob")); !reflect.DeepEqual(e.PathStat, want.PathStat) {
		t.Fatalf("read back\n%+v\nwant\n%+v", e.PathStat, want.PathStat)
	}
	got := rec.Records[4].View
	if got == nil || !reflect.DeepEqual(got.Paths, v.Paths) {
		t.Fatalf("view paths read back\n%+v\nwant\n%+v", got, v.Paths)
	}
}

// A path that no tracer writes is damage, in an event and in a View.
func TestImplausiblePathIsDamage(t *testing.T) {
	hop := `{"ttl":1,"addr":"10.0.0.1","link":"lan","sent":3,"loss":0,"best_ms":1,"rtt_ms":1,"worst_ms":1,"rate_limited":false}`
	event := func(from, body string) string {
		return `{"at_ns":1,"from":"ada","event":{"type":"path","t_ms":1,"from":"` + from + `","to":"bob","available":true,"why":null,` + body + `}}`
	}
	hops := func(hs ...string) string { return `"hops":[` + strings.Join(hs, ",") + `]` }
	view := func(p string) string {
		return `{"at_ns":1,"from":"ada","view":{"Self":"ada","Paths":[` + p + `]}}`
	}
	cases := []struct {
		name string
		kind Kind
		body string
		want string
	}{
		{"bad from", KindEvent, event("\\u001b[2J", hops(hop)), "path from"},
		{"ttl 0", KindEvent, event("ada", hops(strings.Replace(hop, `"ttl":1`, `"ttl":0`, 1))), "ttl 0"},
		{"ttl out of order", KindEvent, event("ada", hops(hop, hop)), "ttl 1 after 1"},
		{"ttl 256", KindEvent, event("ada", hops(strings.Replace(hop, `"ttl":1`, `"ttl":256`, 1))), "ttl 256"},
		{"unknown link", KindEvent, event("ada", hops(strings.Replace(hop, `"lan"`, `"moon"`, 1))), `"moon"`},
		{"loss above 1", KindEvent, event("ada", hops(strings.Replace(hop, `"loss":0`, `"loss":1.5`, 1))), "loss 1.5"},
		{"negative sent", KindEvent, event("ada", hops(strings.Replace(hop, `"sent":3`, `"sent":-3`, 1))), "sent -3"},
		{"absurd rtt", KindEvent, event("ada", hops(strings.Replace(hop, `"rtt_ms":1`, `"rtt_ms":1e300`, 1))), "rtt_ms"},
		{"address not an address", KindEvent, event("ada", hops(strings.Replace(hop, `"10.0.0.1"`, `"10.0.0.999"`, 1))), "path event"},
		{"address with a zone", KindEvent, event("ada", hops(strings.Replace(hop, `"10.0.0.1"`, `"fe80::1%\u001b[31m"`, 1))), "not an address"},
		{"empty address", KindEvent, event("ada", hops(strings.Replace(hop, `"10.0.0.1"`, `""`, 1))), "not an address"},
		{"why with escapes", KindEvent, `{"at_ns":1,"event":{"type":"path","from":"ada","to":"bob","available":false,"why":"\u001b]0;x\u0007","hops":[]}}`, "why"},
		{"hops where it cannot trace", KindEvent, `{"at_ns":1,"event":{"type":"path","from":"ada","to":"bob","available":false,"why":"x","hops":[` + hop + `]}}`, "cannot be traced"},
		{"loss start above 1", KindEvent, event("ada", hops(hop)+`,"loss_starts":{"ttl":1,"link":"lan","loss":2}`), "loss 2"},
		{"delay start on an unknown link", KindEvent, event("ada", hops(hop)+`,"delay_starts":{"ttl":1,"link":"x","added_ms":5}`), `"x"`},
		{"view path peer", KindView, view(`{"Peer":"","Available":true}`), "path peer"},
		{"view hop link", KindView, view(`{"Peer":"bob","Available":true,"Hops":[{"TTL":1,"Link":"mars"}]}`), `"mars"`},
		{"view negative median", KindView, view(`{"Peer":"bob","Available":true,"Hops":[{"TTL":1,"Link":"lan","Median":-5}]}`), "median"},
		{"view loss", KindView, view(`{"Peer":"bob","Available":true,"Hops":[{"TTL":1,"Link":"lan","Loss":7}]}`), "loss 7"},
	}
	for _, c := range cases {
		b := append(headerLine(feed.ProtocolVersion), appendLine(nil, c.kind, []byte(c.body))...)
		rec, err := readAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch s := rec.Stop; {
		case s == nil:
			t.Errorf("%s: read without a word", c.name)
		case !errors.Is(s, errCorrupt) || len(rec.Records) != 0:
			t.Errorf("%s: stop %v with %d records", c.name, s, len(rec.Records))
		case !strings.Contains(s.Error(), c.want) || strings.ContainsAny(s.Error(), "\n\x1b"):
			t.Errorf("%s: %q, want one clean line with %q", c.name, s.Error(), c.want)
		}
	}
}

// The report prints each traced link's last path as a table, in text and
// markdown, and its JSON carries the paths as the events wrote them.
func TestReportPathTables(t *testing.T) {
	rec, _ := pathRecording(t)
	r := summarize(rec)
	if len(r.Paths) != 3 || r.Paths[0].To != "bob" || r.Paths[1].To != "cyd" || r.Paths[2].To != "dan" {
		t.Fatalf("paths %+v", r.Paths)
	}
	if r.Paths[1].AtMs != 4000 {
		t.Fatalf("cyd's path at %v ms, want the last event's 4000", r.Paths[1].AtMs)
	}
	var text, md, js bytes.Buffer
	for _, w := range []struct {
		b      *bytes.Buffer
		format string
	}{{&text, FormatText}, {&md, FormatMarkdown}, {&js, FormatJSON}} {
		if err := r.write(w.b, w.format); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		"ada → bob at 00:02: reached the peer; delay starts at hop 1 (lan), +210.4 ms; no loss",
		"    1    192.168.1.1  lan     30    0.0%    0.6    210.4   260.1",
		"    2    —            uplink  30    100.0%  —      —       —\n",
		"    3    100.64.0.1   isp     30    10.0%   211.0  214.0   300.0  rate-limited",
		"    4    2001:db8::7  peer",
		"ada → cyd at 00:04: the peer has not answered yet; no added delay; loss starts at hop 1 (lan), 9.8%",
		"ada → dan at 00:03: not traced: a relayed link",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{
		"**Path ada → bob** at 00:02: reached the peer; delay starts at hop 1 (lan), +210.4 ms; no loss.",
		"| hop | address | link | sent | loss | best ms | median ms | worst ms | |",
		"| 2 | — | uplink | 30 | 100.0% | — | — | — |  |",
		"| 3 | 100.64.0.1 | isp | 30 | 10.0% | 211.0 | 214.0 | 300.0 | rate-limited |",
		"**Path ada → dan** at 00:03: not traced: a relayed link.",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md.String())
		}
	}
	var back struct {
		Paths []pathReport `json:"paths"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Paths, r.Paths) {
		t.Fatalf("JSON paths\n%+v\nwant\n%+v", back.Paths, r.Paths)
	}
}

// A crafted name in a path reaches the markdown table escaped.
func TestReportPathEscapesNames(t *testing.T) {
	r := &report{Paths: []pathReport{{PathStat: feed.PathStat{From: "a|b", To: "c*d", Available: true,
		Hops: []feed.PathHopStat{{TTL: 1, Link: "l|n"}}}}}}
	var md bytes.Buffer
	r.markdownPaths(&md)
	if strings.Contains(md.String(), "a|b") || strings.Contains(md.String(), "| l|n |") {
		t.Fatalf("markdown not escaped:\n%s", md.String())
	}
}
