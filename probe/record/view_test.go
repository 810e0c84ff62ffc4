package record

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// The record of a View keeps the recording format's layout: every field of
// the View but the matrix (which a recording leaves out, feed.View), under
// its Go name. A field added to the View fails here until the record
// carries it, so a recording never drops one silently (S19).
func TestViewRecordHasEveryViewField_S19(t *testing.T) {
	vt, rt := reflect.TypeOf(feed.View{}), reflect.TypeOf(viewRecord{})
	var want, got []string
	for i := range vt.NumField() {
		if f := vt.Field(i); f.Tag.Get("json") != "-" {
			want = append(want, f.Name)
		}
	}
	for i := range rt.NumField() {
		got = append(got, rt.Field(i).Name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record fields %v, View fields %v", got, want)
	}
	lt, lr := reflect.TypeOf(feed.LinkView{}), reflect.TypeOf(linkRecord{})
	if lt.NumField() != lr.NumField() {
		t.Fatalf("LinkView has %d fields, its record %d", lt.NumField(), lr.NumField())
	}
}

// A View written and read back is the View that was written (its matrix
// aside): typed links with unknowns flagged (L3), durations to the
// nanosecond, a bad link still bad (T11).
func TestViewRecordRoundTrip_L3(t *testing.T) {
	rtt := 61 * time.Millisecond
	v := feed.View{At: 2500 * time.Millisecond, Session: "s", Self: "alice", Master: "bob", Frame: 75, Started: true, FPS: 30, Speed: 30,
		InForce: rungs.Timing{SendPeriod: 2, LookAhead: 6}, Target: rungs.Timing{SendPeriod: 3, LookAhead: 9}, Stalled: true, WaitedOn: "bob",
		Links: []feed.LinkView{
			{Link: feed.Link{From: "alice", To: "bob", State: feed.LinkBad, RTTKnown: true, SRTT: 612_345_678, RTTVAR: 12_345_678,
				RTO: 700_000_001, ConnTimeout: 5_149_999_999, LossKnown: true, Sent: 40, Retransmitted: 3, Expected: 80, Missing: 2,
				PeerKnown: true, PeerExpected: 39, PeerMissing: 1}, Peer: "bob", Bad: true, Caused: 1234 * time.Millisecond, Through: 80},
			{Link: feed.Link{From: "alice", To: "erin", State: feed.LinkUnmeasured, RTO: time.Second, ConnTimeout: 10 * time.Second,
				LossKnown: true, Sent: 1}, Peer: "erin", Observer: true, Through: 5},
		},
		Players: []feed.PlayerView{{Name: "alice", Self: true, Report: &feed.ReportView{Frame: 64, RTT: &rtt, Wait: time.Millisecond}}, {Name: "bob", Master: true}},
		Totals:  feed.LossTotals{Sent: 41, Retransmitted: 3, Expected: 80, Missing: 2},
		Matrix:  feed.MatrixView{Players: []feed.MatrixPlayer{{Name: "alice"}}},
	}
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "test"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.View(v); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Records) != 1 || rec.Records[0].View == nil {
		t.Fatalf("records %+v", rec.Records)
	}
	want := v
	want.Matrix = feed.MatrixView{}
	if got := *rec.Records[0].View; !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
}
