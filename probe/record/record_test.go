package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

func f64(v float64) *float64 { return &v }
func u64(v uint64) *uint64   { return &v }

// sample writes a small recording of every record kind and returns its bytes
// and what was written, in order.
func sample(t testing.TB) ([]byte, []feed.Event) {
	t.Helper()
	var buf bytes.Buffer
	w, err := newWriter(&buf, Header{Program: "test", Session: "s1", Virtual: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	events := []feed.Event{
		&feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster}, Player: "alice"},
		&feed.ReportEvent{Header: feed.Header{Type: vocab.EventReport, Frame: 32}, Player: "bob", RTTMs: nil, WaitMs: 3.5, ProcessMs: 1},
		&feed.ReportEvent{Header: feed.Header{Type: vocab.EventReport, Frame: 32}, Player: "alice", RTTMs: f64(61.25), WaitMs: 0, ProcessMs: 1},
		&feed.TimingEvent{Header: feed.Header{Type: vocab.EventTiming, Frame: 70}, Decided: 64, SendPeriod: 6, LookAhead: 18, Rung: 6, Tier: "Poor", FPS: 30, Reason: "initial"},
		&feed.MessageEvent{Header: feed.Header{Type: vocab.EventMessage, Frame: 70}, Text: "Connection quality target: Poor <&>"},
		&feed.TimingActiveEvent{Header: feed.Header{Type: vocab.EventTimingActive, Frame: 70}, SendPeriod: 6, LookAhead: 18, Rung: 6, Tier: "Poor", FPS: 30},
		&feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: 71}, Player: "carol", WaitMs: 120.5, Cause: "bob"},
		&feed.LinkEvent{Header: feed.Header{Type: vocab.EventLink, Frame: 90}, LinkStat: feed.LinkStat{From: "alice", To: "bob", State: "measured",
			SRTTMs: f64(600), RTTVARMs: f64(10), RTOMs: f64(640), ConnTimeoutMs: f64(5050), Sent: u64(10), Retransmitted: u64(1), Expected: u64(40), Missing: u64(2)}},
		&feed.RemovedEvent{Header: feed.Header{Type: vocab.EventRemoved, Frame: 300}, Player: "carol"},
		&feed.SummaryEvent{Header: feed.Header{Type: vocab.EventSummary, Frame: 3000}, Links: []feed.LinkStat{}, Players: []feed.PlayerSummary{{Player: "alice", TotalWaitMs: 10, MaxWaitMs: 5, Frames: 3000}}},
	}
	for i, e := range events {
		if err := w.event(time.Duration(i)*time.Second, "alice", e); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			rtt := 61 * time.Millisecond
			v := feed.View{At: 3 * time.Second, Session: "s1", Self: "alice", Master: "alice", Frame: 90, Started: true, FPS: 30,
				InForce: rungs.Timing{SendPeriod: 2, LookAhead: 6}, Target: rungs.Timing{SendPeriod: 6, LookAhead: 18},
				Links: []feed.LinkView{{Link: feed.Link{From: "alice", To: "bob", State: feed.LinkMeasured, RTTKnown: true, SRTT: 600 * time.Millisecond,
					RTTVAR: 10 * time.Millisecond, RTO: 640 * time.Millisecond, ConnTimeout: 5050 * time.Millisecond}, Peer: "bob", Caused: time.Second}},
				Players: []feed.PlayerView{{Name: "alice", Self: true, Master: true, Report: &feed.ReportView{Frame: 32, RTT: &rtt}}}}
			if err := w.View(v); err != nil {
				t.Fatal(err)
			}
			if err := w.Command(3*time.Second, "alice", Command{Player: "bob", SendFrame: 72, Frame: 71, Seq: 9, Type: feed.CmdGame, Payload: []byte{0, 1, 2}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), events
}

func TestRoundTrip_S19(t *testing.T) {
	b, events := sample(t)
	rec, err := readAll(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stop != nil {
		t.Fatalf("clean file stopped: %v", rec.Stop)
	}
	h := rec.Header
	if h.Magic != magic || h.Format != format || h.Protocol != feed.ProtocolVersion || h.Session != "s1" || !h.Virtual {
		t.Fatalf("header %+v", h)
	}
	if rec.Size != int64(len(b)) {
		t.Fatalf("size %d, file %d", rec.Size, len(b))
	}
	var got []feed.Event
	var views, cmds int
	for _, r := range rec.Records {
		switch r.Kind {
		case KindEvent:
			got = append(got, r.Event)
			want, _ := jsonOf(events[len(got)-1])
			if string(r.Raw) != want {
				t.Fatalf("raw %s, want %s", r.Raw, want)
			}
			if r.At != time.Duration(len(got)-1)*time.Second || r.From != "alice" {
				t.Fatalf("at %v from %q", r.At, r.From)
			}
		case KindView:
			views++
			v := r.View
			if v.Self != "alice" || v.InForce.LookAhead != 6 || len(v.Links) != 1 || v.Links[0].SRTT != 600*time.Millisecond || !v.Links[0].RTTKnown || v.Links[0].LossKnown || v.Links[0].PeerKnown || v.Links[0].Caused != time.Second ||
				*v.Players[0].Report.RTT != 61*time.Millisecond {
				t.Fatalf("view %+v", v)
			}
		case KindCommand:
			cmds++
			c := r.Command
			if c.Player != "bob" || r.From != "alice" || c.SendFrame != 72 || c.Frame != 71 || !c.Moved() || c.Type != feed.CmdGame || !bytes.Equal(c.Payload, []byte{0, 1, 2}) {
				t.Fatalf("command %+v", c)
			}
		}
	}
	if len(got) != len(events) || views != 1 || cmds != 1 {
		t.Fatalf("%d events, %d views, %d commands", len(got), views, cmds)
	}
	for i := range events {
		a, _ := jsonOf(events[i])
		b, _ := jsonOf(got[i])
		if a != b {
			t.Fatalf("event %d decoded to %s, want %s", i, b, a)
		}
	}
}

// A recording cut at any byte of its last records keeps every complete
// record and names the offset of the first one it could not return.
func TestTruncatedAtEveryOffset_S19(t *testing.T) {
	b, _ := sample(t)
	full, err := readAll(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := len(full.Records)
	// Cut everywhere inside the last four records and the one before them
	// ends: ends[i] is where record i (header = -1) ends.
	first := full.Records[n-4].Offset
	for cut := first; cut <= int64(len(b)); cut++ {
		rec, err := readAll(bytes.NewReader(b[:cut]))
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		// The records that end at or before the cut are complete.
		want := 0
		for _, r := range full.Records {
			end := int64(len(b))
			if i := indexOf(full.Records, r) + 1; i < n {
				end = full.Records[i].Offset
			}
			if end <= cut {
				want++
			}
		}
		if len(rec.Records) != want {
			t.Fatalf("cut %d: %d records, want %d", cut, len(rec.Records), want)
		}
		for i := range rec.Records {
			if string(rec.Records[i].Raw) != string(full.Records[i].Raw) || rec.Records[i].Offset != full.Records[i].Offset {
				t.Fatalf("cut %d: record %d differs", cut, i)
			}
		}
		if cut == int64(len(b)) {
			if rec.Stop != nil {
				t.Fatalf("whole file: stop %v", rec.Stop)
			}
			continue
		}
		atBoundary := want < n && full.Records[want].Offset == cut
		if atBoundary {
			if rec.Stop != nil {
				t.Fatalf("cut %d on a record boundary: stop %v", cut, rec.Stop)
			}
			continue
		}
		if rec.Stop == nil || !errors.Is(rec.Stop, ErrTruncated) {
			t.Fatalf("cut %d: stop %v, want truncated", cut, rec.Stop)
		}
		if rec.Stop.Offset != full.Records[want].Offset || rec.Stop.Index != want+1 {
			t.Fatalf("cut %d: stopped at %d (record %d), want %d (record %d)", cut, rec.Stop.Offset, rec.Stop.Index, full.Records[want].Offset, want+1)
		}
		if rec.Size != rec.Stop.Offset {
			t.Fatalf("cut %d: size %d, stop %d", cut, rec.Size, rec.Stop.Offset)
		}
	}
}

func indexOf(rs []Record, r Record) int {
	for i := range rs {
		if rs[i].Offset == r.Offset {
			return i
		}
	}
	return -1
}

// A flipped byte anywhere in a record stops the reader there, with every
// record before it returned.
func TestDamagedRecordStops_S19(t *testing.T) {
	b, _ := sample(t)
	full, _ := readAll(bytes.NewReader(b))
	target := full.Records[5]
	end := full.Records[6].Offset
	for off := target.Offset; off < end; off++ {
		c := bytes.Clone(b)
		c[off] ^= 0x20
		rec, err := readAll(bytes.NewReader(c))
		if err != nil {
			t.Fatalf("flip at %d: %v", off, err)
		}
		if len(rec.Records) != 5 || rec.Stop == nil || rec.Stop.Offset != target.Offset {
			t.Fatalf("flip at %d: %d records, stop %v", off, len(rec.Records), rec.Stop)
		}
	}
}

func TestNotARecording(t *testing.T) {
	for name, in := range map[string]string{
		"empty":   "",
		"ndjson":  `{"type":"master","frame":0,"player":"alice"}` + "\n",
		"badcrc":  "00000000 H {}\n",
		"nomagic": string(appendLine(nil, kindHeader, []byte(`{"magic":"x","format":1}`))),
		"event":   string(appendLine(nil, KindEvent, []byte(`{"at_ns":0}`))),
	} {
		if _, err := readAll(strings.NewReader(in)); !errors.Is(err, ErrNotRecording) {
			t.Errorf("%s: err %v, want ErrNotRecording", name, err)
		}
	}
	newer := appendLine(nil, kindHeader, []byte(fmt.Sprintf(`{"magic":%q,"format":%d,"protocol":1}`, magic, format+1)))
	if _, err := readAll(bytes.NewReader(newer)); !errors.Is(err, ErrVersion) {
		t.Errorf("newer format: %v", err)
	}
}

// A kind this build does not know is skipped, not an error: a newer writer
// may add kinds (S19: IDs never change meaning, new ones may appear).
func TestUnknownKindAndEventTypeKept_S19(t *testing.T) {
	var buf bytes.Buffer
	w, _ := newWriter(&buf, Header{}, time.Now)
	w.Close()
	buf.Write(appendLine(nil, 'Z', []byte(`{"at_ns":5,"from":"x","what":1}`)))
	buf.Write(appendLine(nil, KindEvent, []byte(`{"at_ns":6,"event":{"type":"future","frame":1}}`)))
	rec, err := readAll(&buf)
	if err != nil || rec.Stop != nil || len(rec.Records) != 2 {
		t.Fatalf("%v %v %d", err, rec.Stop, len(rec.Records))
	}
	if rec.Records[0].Kind != 'Z' || rec.Records[0].At != 5 {
		t.Fatalf("unknown kind: %+v", rec.Records[0])
	}
	if rec.Records[1].Event != nil || string(rec.Records[1].Raw) != `{"type":"future","frame":1}` {
		t.Fatalf("unknown event: %+v", rec.Records[1])
	}
}

// fullDisk accepts limit bytes, then fails the way a full disk does.
type fullDisk struct {
	bytes.Buffer
	limit int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	room := d.limit - d.Len()
	if room >= len(p) {
		return d.Buffer.Write(p)
	}
	d.Buffer.Write(p[:max(room, 0)])
	return max(room, 0), syscall.ENOSPC
}

// A full disk keeps every record written whole; the writer reports the
// error and writes nothing after it, so no record follows a torn one.
func TestFullDiskKeepsCompleteRecords(t *testing.T) {
	_, events := sample(t)
	write := func(limit int) (*fullDisk, *Writer, error) {
		d := &fullDisk{limit: limit}
		clock := time.Unix(0, 0)
		w, err := newWriter(d, Header{Program: "test", Session: "s1", Virtual: true}, func() time.Time { return clock })
		if err != nil {
			t.Fatal(err)
		}
		var werr error
		for i, e := range events {
			clock = clock.Add(2 * time.Second) // every record flushes at once
			if err := w.event(time.Duration(i)*time.Second, "alice", e); err != nil && werr == nil {
				werr = err
			}
		}
		return d, w, werr
	}
	d, _, _ := write(1 << 30)
	whole := bytes.Clone(d.Bytes())
	for _, limit := range []int{len(whole) / 3, len(whole) / 2, len(whole) - 7} {
		d, w, werr := write(limit)
		if !errors.Is(werr, syscall.ENOSPC) || !errors.Is(w.Err(), syscall.ENOSPC) {
			t.Fatalf("limit %d: write error %v", limit, werr)
		}
		if err := w.event(time.Hour, "alice", events[0]); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write after failure: %v", err)
		}
		rec, err := readAll(bytes.NewReader(d.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rec.Records {
			want, _ := jsonOf(events[i])
			if string(r.Raw) != want {
				t.Fatalf("limit %d: record %d %s", limit, i, r.Raw)
			}
		}
		// Everything that fit whole is there.
		if int(rec.Size) > limit || limit-int(rec.Size) > longestLine(d.Bytes(), whole) {
			t.Fatalf("limit %d: kept %d bytes", limit, rec.Size)
		}
	}
}

func longestLine(_ []byte, whole []byte) int {
	m := 0
	for _, l := range bytes.SplitAfter(whole, []byte("\n")) {
		m = max(m, len(l))
	}
	return m
}

// On a real file a failed write is cut back to the last whole record.
func TestCreateTruncatesTornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.lsrec")
	w, err := Create(path, Header{Program: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// Replace the destination with one that tears the next write after 10
	// bytes, as a full disk would.
	tear := &tearingFile{f: w.file, after: 10}
	w.w = tear
	w.event(0, "a", &feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster}, Player: "alice"})
	if err := w.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush: %v", err)
	}
	w.Close()
	b, _ := os.ReadFile(path)
	rec, err := readAll(bytes.NewReader(b))
	if err != nil || rec.Stop != nil || len(rec.Records) != 0 || rec.Size != int64(len(b)) {
		t.Fatalf("after a torn write: %v %v %d records, %d of %d bytes", err, rec.Stop, len(rec.Records), rec.Size, len(b))
	}
}

type tearingFile struct {
	f     *os.File
	after int
}

func (t *tearingFile) Write(p []byte) (int, error) {
	n, _ := t.f.Write(p[:min(t.after, len(p))])
	return n, syscall.ENOSPC
}

// Records are written out within flushEvery of being added (flushed at
// least every second), measured on an injected clock.
func TestFlushedWithinASecond(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(100, 0)
	w, err := newWriter(&out, Header{}, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	headerLen := out.Len()
	if headerLen == 0 {
		t.Fatal("header not written at once")
	}
	ev := &feed.MasterEvent{Header: feed.Header{Type: vocab.EventMaster}, Player: "alice"}
	w.event(0, "a", ev)
	clock = clock.Add(999 * time.Millisecond)
	w.event(0, "a", ev)
	if out.Len() != headerLen {
		t.Fatal("flushed before a second had passed")
	}
	clock = clock.Add(time.Millisecond)
	w.event(0, "a", ev)
	rec, _ := readAll(bytes.NewReader(out.Bytes()))
	if len(rec.Records) != 3 {
		t.Fatalf("after a second: %d records out", len(rec.Records))
	}
}

// Observe records every event of an update, a View at most once a second
// per machine (and on the last update), and flushes each update.
func TestObserveViewsOncePerSecond(t *testing.T) {
	var out bytes.Buffer
	w, _ := newWriter(&out, Header{}, time.Now)
	ev := func(f int) feed.Event {
		return &feed.StallEvent{Header: feed.Header{Type: vocab.EventStall, Frame: f}, Player: "alice", WaitMs: 40}
	}
	for i := 0; i < 25; i++ { // ten updates a second for 2.5 s
		at := time.Duration(i) * 100 * time.Millisecond
		w.Observe(feed.Update{View: feed.View{At: at, Self: "alice"}, Events: []feed.Event{ev(i)}})
		w.Observe(feed.Update{View: feed.View{At: at, Self: "bob"}})
	}
	w.Observe(feed.Update{View: feed.View{At: 2550 * time.Millisecond, Self: "alice"}, Done: true})
	rec, _ := readAll(bytes.NewReader(out.Bytes()))
	views := map[string][]time.Duration{}
	events := 0
	for _, r := range rec.Records {
		if r.Kind == KindView {
			views[r.From] = append(views[r.From], r.At)
		}
		if r.Kind == KindEvent {
			events++
		}
	}
	if events != 25 {
		t.Fatalf("%d events", events)
	}
	wantA := []time.Duration{0, time.Second, 2 * time.Second, 2550 * time.Millisecond}
	if fmt.Sprint(views["alice"]) != fmt.Sprint(wantA) || len(views["bob"]) != 3 {
		t.Fatalf("views %v", views)
	}
}

func jsonOf(e feed.Event) (string, error) {
	raw, err := json.Marshal(e)
	return string(raw), err
}

func TestSpreadNearestRank(t *testing.T) {
	var xs []float64
	for i := 100; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	s := spreadOf(xs)
	if *s.Min != 1 || *s.Max != 100 || *s.P95 != 95 || *s.Mean != 50.5 {
		t.Fatalf("%v %v %v %v", *s.Min, *s.Mean, *s.P95, *s.Max)
	}
	if e := spreadOf(nil); e.Min != nil || e.P95 != nil {
		t.Fatal("no samples is not a zero (L3)")
	}
	if share(3, 0) != nil || *share(1, 4) != 0.25 {
		t.Fatal("share")
	}
}

// A file with no line end is cut short only when it begins as a header
// does: the start of a real header cut anywhere is ErrTruncated, bytes of
// anything else are not a recording.
func TestHeaderCutShortOrNotARecording(t *testing.T) {
	b, _ := sample(t)
	end := bytes.IndexByte(b, '\n')
	for cut := 1; cut < end; cut++ {
		_, err := readAll(bytes.NewReader(b[:cut]))
		var se *StopError
		if !errors.As(err, &se) || !errors.Is(err, ErrTruncated) || errors.Is(err, ErrNotRecording) || se.Offset != 0 || se.Index != 0 {
			t.Fatalf("header cut at %d: %v, want cut short at byte 0 (record 0)", cut, err)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	// From 12 bytes on, random bytes are past where a header's frame
	// could match them (" H {" after the checksum digits).
	for n := 12; n <= 300; n++ {
		junk := make([]byte, n)
		for i := range junk {
			if junk[i] = byte(rnd.UintN(256)); junk[i] == '\n' {
				junk[i] = 'x'
			}
		}
		if _, err := readAll(bytes.NewReader(junk)); !errors.Is(err, ErrNotRecording) || errors.Is(err, ErrTruncated) {
			t.Fatalf("%d random bytes without a newline: %v, want ErrNotRecording", n, err)
		}
	}
	for _, s := range []string{"lagscope", "d502d298 E {", "d502d298 H {\"format\":1", "D502D298 H"} {
		if _, err := readAll(strings.NewReader(s)); !errors.Is(err, ErrNotRecording) {
			t.Errorf("%q: %v, want ErrNotRecording", s, err)
		}
	}
}
