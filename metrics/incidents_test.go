package metrics

import (
	"encoding/json"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/vocab"
)

// incidentFamilies are the incident families the contract names.
var incidentFamilies = []string{"lagscope_incidents_total", "lagscope_incident_wait_seconds_total", "lagscope_incidents_open"}

// incidentLine is an `incident` line as a machine prints it.
func incidentLine(t *testing.T, line string) *feed.IncidentEvent {
	t.Helper()
	var e feed.IncidentEvent
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return &e
}

// byCause is a family's values by cause, for the session.
func byCause(t *testing.T, e *Exporter, name string) (map[string]float64, *dto.MetricFamily) {
	t.Helper()
	fams, _ := scrape(t, e)
	f := fams[name]
	out := map[string]float64{}
	if f == nil {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		l := labels(m)
		if l["session"] != "lan" {
			t.Errorf("%s: session %q", name, l["session"])
		}
		out[l["cause"]] = value(m)
	}
	return out, f
}

const (
	adaOpen   = `{"type":"incident","frame":300,"t_ms":12100,"id":1,"phase":"open","opened_ms":10250,"opened_frame":268,"closed_ms":null,"closed_frame":null,"player":"ada","between":null,"cause":"latency","added_ms":240,"loss":0.0,"wait_ms":820,"frames_waited":25,"rung_from":1,"rung_peak":1,"where":null,"load_test":null,"text":"x"}`
	adaUpdate = `{"type":"incident","frame":330,"t_ms":13100,"id":1,"phase":"update","opened_ms":10250,"opened_frame":268,"closed_ms":null,"closed_frame":null,"player":"ada","between":null,"cause":"latency","added_ms":300,"loss":0.0,"wait_ms":1500,"frames_waited":40,"rung_from":1,"rung_peak":2,"where":null,"load_test":null,"text":"x"}`
	// The cause turns to loss: what it waits from now on is loss's.
	adaLoss  = `{"type":"incident","frame":400,"t_ms":16100,"id":1,"phase":"update","opened_ms":10250,"opened_frame":268,"closed_ms":null,"closed_frame":null,"player":"ada","between":null,"cause":"loss","added_ms":300,"loss":0.03,"wait_ms":2000,"frames_waited":50,"rung_from":1,"rung_peak":2,"where":null,"load_test":null,"text":"x"}`
	adaClose = `{"type":"incident","frame":600,"t_ms":22100,"id":1,"phase":"close","opened_ms":10250,"opened_frame":268,"closed_ms":20000,"closed_frame":550,"player":"ada","between":null,"cause":"loss","added_ms":300,"loss":0.03,"wait_ms":2250,"frames_waited":55,"rung_from":1,"rung_peak":2,"where":null,"load_test":null,"text":"x"}`
	bobOpen  = `{"type":"incident","frame":450,"t_ms":17000,"id":2,"phase":"open","opened_ms":16500,"opened_frame":420,"closed_ms":null,"closed_frame":null,"player":"bob","between":null,"cause":"processing","added_ms":null,"loss":null,"wait_ms":100,"frames_waited":3,"rung_from":2,"rung_peak":2,"where":null,"load_test":null,"text":"x"}`
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The incident families count the lines of one machine, by cause: opened
// under the first line's cause, waits as each line's wait_ms grows under
// that line's cause, open now by the cause now; every cause an incident
// may name has its series from the first update, at zero.
func TestIncidentFamilies(t *testing.T) {
	e, err := New("lan")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, n := range incidentFamilies {
		if got, _ := byCause(t, e, n); len(got) != 0 {
			t.Fatalf("%s before any update: %v", n, got)
		}
	}
	step := func(lines ...string) {
		var es []feed.Event
		for _, l := range lines {
			es = append(es, incidentLine(t, l))
		}
		e.Observe(feed.Update{View: view("you"), Events: es})
	}
	check := func(when string, opened, waited, open map[string]float64) {
		t.Helper()
		for _, c := range []struct {
			name string
			want map[string]float64
			typ  dto.MetricType
		}{{"lagscope_incidents_total", opened, dto.MetricType_COUNTER}, {"lagscope_incident_wait_seconds_total", waited, dto.MetricType_COUNTER},
			{"lagscope_incidents_open", open, dto.MetricType_GAUGE}} {
			got, f := byCause(t, e, c.name)
			if f == nil || f.GetType() != c.typ || f.GetHelp() == "" {
				t.Fatalf("%s: %s missing, not a %v or without help", when, c.name, c.typ)
			}
			if len(got) != len(vocab.IncidentCauses) {
				t.Errorf("%s: %s has series for %v, want every incident cause", when, c.name, got)
			}
			for cause, v := range got {
				if !near(v, c.want[cause]) {
					t.Errorf("%s: %s{cause=%q} = %v, want %v", when, c.name, cause, v, c.want[cause])
				}
			}
		}
	}
	step()
	check("at start", nil, nil, nil)
	step(adaOpen)
	check("ada opens", map[string]float64{"latency": 1}, map[string]float64{"latency": 0.82}, map[string]float64{"latency": 1})
	step(adaUpdate)
	step(adaLoss, bobOpen)
	check("ada's cause turns to loss, bob opens", map[string]float64{"latency": 1, "processing": 1},
		map[string]float64{"latency": 1.5, "loss": 0.5, "processing": 0.1}, map[string]float64{"loss": 1, "processing": 1})
	step(adaClose)
	check("ada closes", map[string]float64{"latency": 1, "processing": 1},
		map[string]float64{"latency": 1.5, "loss": 0.75, "processing": 0.1}, map[string]float64{"processing": 1})
	// A line of a closed incident again counts nothing.
	step(adaClose)
	check("ada's close again", map[string]float64{"latency": 1, "processing": 1},
		map[string]float64{"latency": 1.5, "loss": 0.75, "processing": 0.1}, map[string]float64{"processing": 1})
	// The machine's end: nothing stays open, the counters stay.
	e.Observe(feed.Update{View: view("you"), Done: true})
	check("the end", map[string]float64{"latency": 1, "processing": 1},
		map[string]float64{"latency": 1.5, "loss": 0.75, "processing": 0.1}, nil)
}

// With several machines in one process (the demo), the families count
// the teller's lines only: each machine tells the same incidents, and
// counting them all would count each several times. Without a teller set,
// the first machine observed tells.
func TestIncidentFamiliesCountOneMachine(t *testing.T) {
	for _, teller := range []string{"you", ""} {
		e, err := New("lan")
		if err != nil {
			t.Fatal(err)
		}
		e.SetIncidentTeller(teller)
		if teller == "" {
			e.Observe(feed.Update{View: view("you")})
		}
		e.Observe(feed.Update{View: view("ada"), Events: []feed.Event{incidentLine(t, adaOpen), incidentLine(t, bobOpen)}})
		e.Observe(feed.Update{View: view("you"), Events: []feed.Event{incidentLine(t, adaOpen)}})
		e.Observe(feed.Update{View: view("bob"), Events: []feed.Event{incidentLine(t, adaOpen)}})
		got, _ := byCause(t, e, "lagscope_incidents_total")
		if got["latency"] != 1 || got["processing"] != 0 {
			t.Errorf("teller %q: opened %v, want you's one latency incident", teller, got)
		}
		e.Close()
	}
}

// Bad lines count nothing they should not: a cause this build does not
// name counts as unknown, a wait that goes down adds nothing, and the
// closed incidents a book remembers stay bounded.
func TestIncidentFamiliesOddLines(t *testing.T) {
	e, _ := New("lan")
	defer e.Close()
	odd := incidentLine(t, adaOpen)
	odd.Cause = "gremlins"
	e.Observe(feed.Update{View: view("you"), Events: []feed.Event{odd}})
	down := incidentLine(t, adaUpdate)
	down.Cause, down.WaitMs = "gremlins", 100
	e.Observe(feed.Update{View: view("you"), Events: []feed.Event{down}})
	if got, _ := byCause(t, e, "lagscope_incidents_total"); got["unknown"] != 1 {
		t.Errorf("an unnamed cause: %v, want it under unknown", got)
	}
	if got, _ := byCause(t, e, "lagscope_incident_wait_seconds_total"); !near(got["unknown"], 0.82) {
		t.Errorf("a wait that went down: %v, want 0.82 under unknown", got)
	}
	b := newIncidentBook()
	for id := 1; id <= 3*maxClosedKept; id++ {
		open := incidentLine(t, bobOpen)
		open.ID = id
		b.take(&open.Incident)
		cl := incidentLine(t, adaClose)
		cl.ID = id
		b.take(&cl.Incident)
	}
	if len(b.seen) > maxClosedKept || b.causes[causeSlot(vocab.CauseProcessing)].opened != 3*maxClosedKept || b.causes[causeSlot(vocab.CauseLoss)].open != 0 {
		t.Errorf("%d incidents remembered, %d opened, %d open", len(b.seen), b.causes[causeSlot(vocab.CauseProcessing)].opened, b.causes[causeSlot(vocab.CauseLoss)].open)
	}
}
