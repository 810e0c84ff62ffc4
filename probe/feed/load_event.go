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
	Cap       int64                `json:"-"`
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

// Network: every machine publishes the test's line on its own clock, when
// the tester's result reaches it; the simulator prints the tester's.
func (*LoadEvent) Network() bool { return false }

// LoadStartEvent (live, and sim where a scenario runs a test): a load test
// between two members begins (docs/load-test.md), published by every
// machine of the session when it learns of it — the tester when the host
// grants its turn, the others when the host tells them. Its JSON is fixed:
//
//	{"type":"load_start","t_ms":…,"frame":…,"from":…,"to":…,"for_ms":…}
//
// ForMs is the longest the test takes.
type LoadStartEvent struct {
	Header
	From  string
	To    string
	ForMs float64
}

// loadStartJSON is the event's fixed field order.
type loadStartJSON struct {
	Type  vocab.EventType `json:"type"`
	TMs   *float64        `json:"t_ms,omitempty"`
	Frame int             `json:"frame"`
	From  string          `json:"from"`
	To    string          `json:"to"`
	ForMs float64         `json:"for_ms"`
}

// MarshalJSON writes the fixed shape.
func (e *LoadStartEvent) MarshalJSON() ([]byte, error) {
	return json.Marshal(loadStartJSON{Type: vocab.EventLoadStart, TMs: e.TMs, Frame: e.Frame, From: e.From, To: e.To, ForMs: e.ForMs})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *LoadStartEvent) UnmarshalJSON(b []byte) error {
	var j loadStartJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	e.Header = Header{Type: j.Type, Frame: j.Frame, TMs: j.TMs}
	e.From, e.To, e.ForMs = j.From, j.To, j.ForMs
	return nil
}

// Network: every machine publishes it on its own clock; the simulator
// prints the tester's.
func (*LoadStartEvent) Network() bool { return false }

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
	// Seen is the test between two members running in the session as
	// this machine was told of it (whichever machine this is: the
	// tester, its peer, another player, a watcher), nil when none runs.
	Seen *LoadSeen `json:",omitempty"`
}

// LoadSeen is a test between two members of the session, from its start
// to its end: who tests whom, when it began on this machine's clock, and
// the longest it takes.
type LoadSeen struct {
	From, To string
	Began    time.Duration
	For      time.Duration
}

// LoadRun is a test in progress.
type LoadRun struct {
	Peer     string
	Tester   bool
	Waiting  bool // asked the host for the session's turn, not granted yet
	Progress loadtest.Progress
	// Where (the tester) is where the test's own trace puts the added
	// delay so far: the loaded hold that adds most, read over that hold
	// alone (docs/load-test.md); nil before a hold was read.
	Where *loadtest.WhereAt `json:",omitempty"`
}
