package feed

import (
	"encoding/json"
	"github.com/lagscope/lagscope/vocab"
	"time"

	"github.com/lagscope/lagscope/probe/loadtest"
)

// The `load` event: one latency-under-load test between two members
// (docs/load-test.md), published by the machine that ran it (From) when
// it ends. Its JSON is fixed:
//
//	{"type":"load","t_ms":…,"from":…,"to":…,"idle_rtt_ms":…,
//	 "upload":{…},"download":{…},"both":{…},"where":{…},"cost":{…},"stopped":…}
//
// It carries no frame: a test is about the line, not about a frame.

// LoadEvent (live, and sim where a scenario runs a test): a load test's
// result. Its Header's Frame is not written.
type LoadEvent struct {
	Header
	From   string
	To     string
	Result loadtest.Result
}

// loadEventJSON is the event's fixed field order: the type and time, the
// pair, then the result's fields.
type loadEventJSON struct {
	Type vocab.EventType `json:"type"`
	TMs  *float64        `json:"t_ms,omitempty"`
	From string          `json:"from"`
	To   string          `json:"to"`
	loadBody
}

// loadBody is loadtest.Result without its checking decoder, so that
// embedding it keeps the outer fields.
type loadBody struct {
	IdleRTTMS *float64             `json:"idle_rtt_ms"`
	Upload    *loadtest.DirResult  `json:"upload"`
	Download  *loadtest.DirResult  `json:"download"`
	Both      *loadtest.BothResult `json:"both"`
	Where     *loadtest.WhereAt    `json:"where"`
	Cost      *loadtest.GameCost   `json:"cost"`
	Stopped   *string              `json:"stopped"`
}

// MarshalJSON writes the fixed shape: no frame.
func (e *LoadEvent) MarshalJSON() ([]byte, error) {
	return json.Marshal(loadEventJSON{Type: vocab.EventLoad, TMs: e.TMs, From: e.From, To: e.To, loadBody: loadBody(e.Result)})
}

// UnmarshalJSON reads what MarshalJSON writes; the result is checked as
// loadtest.Result checks it (figures finite and not negative, a known
// grade and stop reason).
func (e *LoadEvent) UnmarshalJSON(b []byte) error {
	var j loadEventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var r loadtest.Result
	if err := r.UnmarshalJSON(b); err != nil {
		return err
	}
	e.Header = Header{Type: j.Type, TMs: j.TMs}
	e.From, e.To, e.Result = j.From, j.To, r
	return nil
}

// Network: each tester publishes its own test.
func (*LoadEvent) Network() bool { return false }

// LoadView is this machine's load testing as a front end draws it: the test
// running now, if any, and the latest result of each test this machine
// ran, by peer, house order.
type LoadView struct {
	// Running is the test in progress, nil when none. Peer is the other
	// end; Tester says this machine runs it (else it answers Peer's).
	Running *LoadRun
	// Results are the latest finished test toward each peer.
	Results []LoadEvent
	// Refuses: this machine takes no tests from others (--no-load-tests).
	Refuses bool
	// Cap is the most either direction carries, bit/s.
	Cap int64
	// NextAt is when this machine may start its next test (60 s after
	// its last ended); 0 when it may now.
	NextAt time.Duration
}

// LoadRun is a test in progress.
type LoadRun struct {
	Peer     string
	Tester   bool
	Waiting  bool // asked the host for the session's turn, not granted yet
	Progress loadtest.Progress
}
