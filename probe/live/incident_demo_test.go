package live

import (
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// demoMachines plays the demo (its own defaults: four players, mixed
// access links, seed 1, ada's spike from 10 s to 30 s) in virtual time
// for length and returns every machine's events, yours first, and your
// summary's incidents once the run ends.
func demoMachines(t *testing.T, spike bool, length time.Duration) ([][]feed.Event, []feed.Incident) {
	t.Helper()
	cfg := DemoConfig{Players: 4, Profile: "mix", Seed: 1, Spike: spike}
	events := make([][]feed.Event, cfg.Players)
	ups, m, err := playDemo(cfg, length, time.Second, func(i int) feed.Sink {
		return feed.SinkFunc(func(_ string, e feed.Event) { events[i] = append(events[i], e) })
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups {
		events[0] = append(events[0], u.Events...)
	}
	you := m.sessions[0]
	you.EndIncidents(length)
	return events, you.Summary().Incidents
}

func tMs(e feed.Event) time.Duration {
	if h := feed.Head(e); h.TMs != nil {
		return time.Duration(*h.TMs * float64(time.Millisecond))
	}
	return -1
}

// The demo's spike in virtual time: ada's incident opens within 2 s of
// the first stall ada causes, names ada with cause latency, no diagnosis
// says that no one holds the match back while it is open, it closes
// within 10 s of ada's round trips coming back to their baseline, and
// the summary's wait_ms is within 5 % of the waits that every machine's
// own stall records put on ada in its frames.
func TestDemoSpikeIsAnIncidentOfAdas(t *testing.T) {
	events, sum := demoMachines(t, true, 70*time.Second)

	firstStall := time.Duration(-1)
	for _, evs := range events {
		for _, e := range evs {
			if s, ok := e.(*feed.StallEvent); ok && s.Cause == "ada" && tMs(e) >= spikeStart {
				if firstStall < 0 || tMs(e) < firstStall {
					firstStall = tMs(e)
				}
				break
			}
		}
	}
	if firstStall < 0 {
		t.Fatal("no machine stalled for ada during the spike")
	}

	var opened, closed *feed.IncidentEvent
	var openAt, closeAt time.Duration
	for _, e := range events[0] {
		switch e := e.(type) {
		case *feed.IncidentEvent:
			if e.Player == nil || *e.Player != "ada" {
				t.Errorf("an incident not of ada's: %+v", e.Incident)
				continue
			}
			switch e.Phase {
			case vocab.IncidentOpen:
				if opened == nil {
					opened, openAt = e, tMs(e)
				}
			case vocab.IncidentClose:
				closed, closeAt = e, tMs(e)
			}
		case *feed.DiagnosisEvent:
			if opened != nil && closed == nil && strings.Contains(e.Diagnosis.Verdict, "No one") {
				t.Errorf("at %v, with ada's incident open, the verdict says %q", tMs(e), e.Diagnosis.Verdict)
			}
			if opened != nil && closed == nil && !strings.Contains(firstSentence(e.Diagnosis.Verdict), "ada") {
				t.Errorf("at %v the verdict's first sentence does not name ada: %q", tMs(e), e.Diagnosis.Verdict)
			}
		}
	}
	if opened == nil || closed == nil {
		t.Fatalf("ada's incident: opened %v, closed %v", opened != nil, closed != nil)
	}
	t.Logf("first stall for ada at %v; incident opened at %v (opened_ms %.0f), closed at %v: %s",
		firstStall, openAt, opened.OpenedMs, closeAt, closed.Text)
	if openAt-firstStall > 2*time.Second {
		t.Errorf("the incident opened %v after the first stall ada caused, want 2 s at most", openAt-firstStall)
	}
	if closed.Cause != vocab.CauseLatency {
		t.Errorf("cause %q, want latency", closed.Cause)
	}

	// ada's round trips back at their baseline: your link to ada's SRTT
	// within riseMin of what it was before the spike.
	var before, back time.Duration = -1, -1
	for _, e := range events[0] {
		l, ok := e.(*feed.LinkEvent)
		if !ok || l.From != "you" || l.To != "ada" || l.SRTTMs == nil {
			continue
		}
		srtt := time.Duration(*l.SRTTMs * float64(time.Millisecond))
		switch at := tMs(e); {
		case at < spikeStart:
			before = srtt
		case at >= spikeEnd && back < 0 && before > 0 && srtt < before+50*time.Millisecond:
			back = at
		}
	}
	if back < 0 {
		t.Fatal("ada's round trip never came back to its baseline")
	}
	if closeAt-back > 10*time.Second {
		t.Errorf("ada's round trips were back at %v, the incident closed at %v", back, closeAt)
	}

	var inc *feed.Incident
	for i := range sum {
		if sum[i].Player != nil && *sum[i].Player == "ada" {
			inc = &sum[i]
		}
	}
	if inc == nil || inc.ClosedFrame == nil {
		t.Fatalf("the summary's incidents have no closed incident of ada's: %+v", sum)
	}
	var stalls float64
	for _, evs := range events {
		for _, e := range evs {
			if s, ok := e.(*feed.StallEvent); ok && s.Cause == "ada" && s.Frame >= inc.OpenedFrame && s.Frame <= *inc.ClosedFrame {
				stalls += s.WaitMs
			}
		}
	}
	t.Logf("incident wait_ms %.0f, frames %d–%d; stall records for ada there: %.0f ms", inc.WaitMs, inc.OpenedFrame, *inc.ClosedFrame, stalls)
	if stalls == 0 || inc.WaitMs < 0.95*stalls || inc.WaitMs > 1.05*stalls {
		t.Errorf("wait_ms %.0f, the machines' stall records put %.0f ms on ada: want within 5 %%", inc.WaitMs, stalls)
	}
}

// firstSentence is s up to its first full stop followed by a space.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// The demo with its spike off is a clean four-player match (LAN, cable,
// DSL and Wi-Fi links with their usual loss and jitter): five minutes of
// it open no incident.
func TestCleanDemoOpensNoIncident(t *testing.T) {
	events, sum := demoMachines(t, false, 5*time.Minute)
	for _, e := range events[0] {
		if e, ok := e.(*feed.IncidentEvent); ok {
			t.Errorf("incident at %v: %s", tMs(e), e.Text)
		}
	}
	if len(sum) != 0 {
		t.Errorf("summary: %d incidents, want none", len(sum))
	}
}
