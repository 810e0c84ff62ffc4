package record

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/probe/loadtest"
	"github.com/lagscope/lagscope/vocab"
)

// examples is one plausible event of every type the contract's registry
// holds. A type added to the registry without an example here fails
// TestEveryEventTypeRoundTrips.
func examples() map[vocab.EventType]feed.Event {
	h := func(t vocab.EventType, frame int) feed.Header { return feed.Header{Type: t, Frame: frame} }
	d := diagnosis.Diagnosis{Verdict: "ada's connection adds 150 ms", Culprit: "ada",
		Players: []diagnosis.PlayerDiagnosis{{Player: "ada", AccessRTTMs: 150, AccessLoss: 0, JitterMs: 4, ProcessMs: 0,
			CausedWaitMs: 4500, RungWithout: 1, FPSWithout: 30, Causes: []vocab.Cause{vocab.CauseLatency}}},
		Links: []diagnosis.LinkDiagnosis{}}
	hop := netip.MustParseAddr("192.168.1.1")
	grade := "D"
	return map[vocab.EventType]feed.Event{
		vocab.EventSession:      &feed.SessionEvent{Header: h(vocab.EventSession, 0), Session: "7c3a91", Role: "host", Name: "ada", Addr: "127.0.0.1:7373", Need: 2},
		vocab.EventRoster:       &feed.RosterEvent{Header: h(vocab.EventRoster, 0), Version: 3, Need: 2, Players: []string{"ada", "bob"}, Observers: []string{"mon"}},
		vocab.EventMaster:       &feed.MasterEvent{Header: h(vocab.EventMaster, 0), Player: "ada"},
		vocab.EventReport:       &feed.ReportEvent{Header: h(vocab.EventReport, 32), Player: "bob", RTTMs: f64(61.25), WaitMs: 3.5, ProcessMs: 1},
		vocab.EventTiming:       &feed.TimingEvent{Header: h(vocab.EventTiming, 70), Decided: 64, SendPeriod: 2, LookAhead: 6, Rung: 2, Tier: "Fast", FPS: 30, Reason: "initial"},
		vocab.EventTimingActive: &feed.TimingActiveEvent{Header: h(vocab.EventTimingActive, 70), SendPeriod: 2, LookAhead: 6, Rung: 2, Tier: "Fast", FPS: 30},
		vocab.EventMessage:      &feed.MessageEvent{Header: h(vocab.EventMessage, 70), Text: "Connection quality target: Fast"},
		vocab.EventRemoved:      &feed.RemovedEvent{Header: h(vocab.EventRemoved, 300), Player: "bob"},
		vocab.EventIncident: &feed.IncidentEvent{Header: h(vocab.EventIncident, 300), Incident: feed.Incident{ID: 1, Phase: vocab.IncidentOpen,
			OpenedMs: 10250, OpenedFrame: 268, Player: new("ada"), Cause: vocab.CauseLatency, AddedMs: f64(240), Loss: f64(0),
			WaitMs: 820, FramesWaited: 25, RungFrom: 1, RungPeak: 1, Text: "Waiting for ada since 00:10: ada's round trips are 240 ms above normal."}},
		vocab.EventStall: &feed.StallEvent{Header: h(vocab.EventStall, 71), Player: "ada", WaitMs: 120.5, Cause: "bob"},
		vocab.EventLink: &feed.LinkEvent{Header: h(vocab.EventLink, 90), LinkStat: feed.LinkStat{From: "ada", To: "bob", State: "measured",
			SRTTMs: f64(60), RTTVARMs: f64(5), RTOMs: f64(100), ConnTimeoutMs: f64(2000), Sent: u64(10), Retransmitted: u64(1), Expected: u64(40), Missing: u64(2)}},
		vocab.EventDiagnosis: &feed.DiagnosisEvent{Header: h(vocab.EventDiagnosis, 1280), Diagnosis: d},
		vocab.EventAlert:     &feed.AlertEvent{Header: h(vocab.EventAlert, 200), Player: "ada", Kind: feed.AlertTier, Text: "Connection quality target worsened from Fast to Normal"},
		vocab.EventSummary: &feed.SummaryEvent{Header: h(vocab.EventSummary, 3000), Links: []feed.LinkStat{},
			Players: []feed.PlayerSummary{{Player: "ada", TotalWaitMs: 10, MaxWaitMs: 5, Frames: 3000}}, Diagnosis: d},
		vocab.EventPath: &feed.PathEvent{Header: h(vocab.EventPath, 400), PathStat: feed.PathStat{From: "ada", To: "bob", Available: true,
			Hops: []feed.PathHopStat{{TTL: 1, Addr: &hop, Link: vocab.HopLAN, Sent: 30, Loss: 0, BestMs: f64(0.5), RTTMs: f64(1.2), WorstMs: f64(3)}}}},
		vocab.EventLoadStart: &feed.LoadStartEvent{Header: feed.Header{Type: vocab.EventLoadStart, Frame: 2300, TMs: f64(76000)},
			From: "ada", To: "bob", ForMs: 25000},
		vocab.EventLoad: &feed.LoadEvent{Header: h(vocab.EventLoad, 2700), From: "ada", To: "bob",
			Result: loadtest.Result{IdleRTTMS: f64(12.1), Upload: &loadtest.DirResult{AddedMS: f64(368), P90AddedMS: f64(420.5),
				Mbps: f64(9.6), Loss: f64(0.002), Grade: &grade}}},
	}
}

// Every event type the registry holds round-trips, as itself, through the
// NDJSON writer and back, and through a recording and back; docs/cli.md
// lists it; and the registry holds every type vocab names.
func TestEveryEventTypeRoundTrips(t *testing.T) {
	ex := examples()
	for _, typ := range vocab.EventTypes {
		if !feed.Registered(typ) {
			t.Errorf("event type %q is not in the contract's registry", typ)
		}
	}
	cli, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rec bytes.Buffer
	w, err := newWriter(&rec, Header{Program: "test", Session: "s1", Virtual: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	var order []vocab.EventType
	for _, typ := range vocab.EventTypes {
		if !strings.Contains(string(cli), "| `"+string(typ)+"` |") {
			t.Errorf("docs/cli.md does not list event type %q", typ)
		}
		e, ok := ex[typ]
		if !ok {
			t.Errorf("event type %q has no example in this test: add one", typ)
			continue
		}
		var nd bytes.Buffer
		nw := feed.NewNDJSONWriter(&nd)
		if err := nw.Write(feed.Update{Events: []feed.Event{e}}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		back, err := feed.DecodeEvent(bytes.TrimSpace(nd.Bytes()))
		if err != nil || back == nil {
			t.Fatalf("%s: decoded %v, %v", typ, back, err)
		}
		if a, b := jsonOf(e); a != mustJSON(t, back) || b != nil {
			t.Errorf("%s: NDJSON gave back %s, want %s", typ, mustJSON(t, back), a)
		}
		if err := checkEvent(back); err != nil {
			t.Errorf("%s: the recording's check refuses it: %v", typ, err)
		}
		if err := w.event(time.Second, "ada", e); err != nil {
			t.Fatal(err)
		}
		order = append(order, typ)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(bytes.NewReader(rec.Bytes()))
	if err != nil || got.Stop != nil {
		t.Fatalf("recording: %v, stopped %v", err, got.Stop)
	}
	var types []vocab.EventType
	for _, r := range got.Records {
		if r.Kind != KindEvent {
			continue
		}
		if r.Event == nil {
			t.Errorf("the recording kept %s as bytes only: its reader does not know the type", r.Raw)
			continue
		}
		typ := feed.Head(r.Event).Type
		types = append(types, typ)
		if a, _ := jsonOf(ex[typ]); a != mustJSON(t, r.Event) {
			t.Errorf("%s: the recording gave back %s, want %s", typ, mustJSON(t, r.Event), a)
		}
	}
	if !slices.Equal(types, order) {
		t.Errorf("the recording gave back %v, want %v", types, order)
	}
	// An event the registry does not hold is refused by the writer.
	var nd bytes.Buffer
	bad := &feed.MasterEvent{Header: feed.Header{Type: "future"}, Player: "ada"}
	if err := feed.NewNDJSONWriter(&nd).Write(feed.Update{Events: []feed.Event{bad}}); err == nil {
		t.Error("the NDJSON writer wrote an event type the registry does not hold")
	}
}

func mustJSON(t *testing.T, e feed.Event) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
