package probe

import (
	"bytes"
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
)

// The event's JSON is diagnosis.Event's, with the live t_ms after the
// frame, and it reads back to the same bytes (docs/diagnosis.md).
func TestDiagnosisEventJSON(t *testing.T) {
	d := diagnosis.Diagnose(diagnosis.Input{Speed: 30})
	e := &feed.DiagnosisEvent{Header: feed.Header{Type: vocab.EventDiagnosis, Frame: 256}, Diagnosis: d}
	got, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(diagnosis.Event{Frame: 256, Diagnosis: d})
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	tms := 8533.25
	e.TMs = &tms
	got, _ = json.Marshal(e)
	if !bytes.HasPrefix(got, []byte(`{"type":"diagnosis","frame":256,"t_ms":8533.25,"verdict":`)) {
		t.Fatalf("live event %s", got)
	}
	var back feed.DiagnosisEvent
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	if !bytes.Equal(again, got) || back.TMs == nil || *back.TMs != tms || back.Frame != 256 {
		t.Fatalf("read back %s\nfrom      %s", again, got)
	}
}

type diagLog map[string][]*feed.DiagnosisEvent

func (l diagLog) sink() feed.Sink {
	return feed.SinkFunc(func(from string, e feed.Event) {
		if d, ok := e.(*feed.DiagnosisEvent); ok {
			l[from] = append(l[from], d)
		}
	})
}

// Live, each machine — an observer too — diagnoses at every master
// evaluation frame (S9) from the links it knows: with telemetry every
// player's row reaches it and all four players take part in the fit; the
// View carries the last diagnosis.
func TestDiagnosisFromTelemetryOnEveryMachine_S9(t *testing.T) {
	log := diagLog{}
	prof := impair.Profile{Delay: 20 * time.Millisecond}
	w := newTMWorldWith(t, 4, 1, prof, 3, func(_ int, c *Config) { c.Telemetry, c.Sink = true, log.sink() })
	w.runUntilFrame(t, 800)
	for _, m := range w.ms {
		evs := log[m.peer.Name()]
		var frames []int
		for _, e := range evs {
			frames = append(frames, e.Frame)
			if !rungs.IsEvaluationFrame(e.Frame) {
				t.Errorf("%s: diagnosis on frame %d, not an evaluation frame", m.peer.Name(), e.Frame)
			}
		}
		if len(evs) < 3 || frames[len(frames)-1] != 768 {
			t.Fatalf("%s: diagnoses on frames %v, want every evaluation up to 768", m.peer.Name(), frames)
		}
		last := evs[len(evs)-1]
		if last.Diagnosis.Measured != 4 || len(last.Diagnosis.Links) != 6 {
			t.Errorf("%s: %d measured, %d links; verdict %q", m.peer.Name(), last.Diagnosis.Measured, len(last.Diagnosis.Links), last.Diagnosis.Verdict)
		}
		for _, p := range last.Diagnosis.Players {
			if p.AccessRTTMs < 15 || p.AccessRTTMs > 25 { // 40 ms round trips, 20 each
				t.Errorf("%s: %s access %.1f ms, want about 20", m.peer.Name(), p.Player, p.AccessRTTMs)
			}
		}
		v := m.peer.View(w.sched.Now())
		if v.Diagnosis == nil || v.Diagnosis.Verdict != last.Diagnosis.Verdict {
			t.Errorf("%s: View.Diagnosis %v, want the last event's", m.peer.Name(), v.Diagnosis)
		}
	}
}

// Without telemetry a machine knows only its own links: the other players
// have one pair each and cannot be split, so fewer than three take part
// and the verdict says so (what it knows, nothing more).
func TestDiagnosisFromOwnLinksOnly(t *testing.T) {
	log := diagLog{}
	w := newTMWorldWith(t, 4, 0, impair.Profile{Delay: 20 * time.Millisecond}, 4, func(_ int, c *Config) { c.Sink = log.sink() })
	w.runUntilFrame(t, 300)
	evs := log["p1"]
	if len(evs) == 0 {
		t.Fatal("no diagnosis")
	}
	if d := evs[len(evs)-1].Diagnosis; d.Measured >= diagnosis.MinMeasured || d.Culprit != "" {
		t.Fatalf("measured %d culprit %q from a star of links; verdict %q", d.Measured, d.Culprit, d.Verdict)
	}
	// The summary's diagnosis is always there, whatever is known.
	if d := w.ms[0].peer.Diagnose(w.sched.Now()); d.Verdict == "" || len(d.Players) != 4 {
		t.Fatalf("summary diagnosis %+v", d)
	}
}

// BenchmarkPeerDiagnose is one machine's whole evaluation: gathering what
// it knows (its own row and 15 telemetry rows, 240 directed links) into the
// estimator's input and the estimate, every 256 frames on every machine.
func BenchmarkPeerDiagnose(b *testing.B) {
	b.ReportAllocs()
	w := newTMWorldWith(b, 16, 0, impair.Profile{Delay: 10 * time.Millisecond}, 5, func(_ int, c *Config) { c.Telemetry = true })
	w.sched.RunUntil(12 * time.Second)
	now := w.sched.Now()
	p := w.ms[0].peer
	b.ResetTimer()
	for range b.N {
		if d := p.Diagnose(now); d.Measured != 16 {
			b.Fatalf("%d measured: %s", d.Measured, d.Verdict)
		}
	}
}
