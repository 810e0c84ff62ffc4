package probe

// The events a peer publishes, one struct per NDJSON type of CONTRACTS.md.
// Sinks (NDJSON writer, UI, recorder, metrics) read them; none reaches back.

// Event is one published event.
type Event interface {
	head() *Header
	// Network reports whether every machine publishes the same event on the
	// same frame (a network event, a timing change); such events are printed
	// once per session by the simulator.
	Network() bool
}

// Header is common to every event. TMs is set by live drivers only.
type Header struct {
	Type  string   `json:"type"`
	Frame int      `json:"frame"`
	TMs   *float64 `json:"t_ms,omitempty"`
}

func (h *Header) head() *Header { return h }

// Head gives access to the common fields.
func Head(e Event) *Header { return e.head() }

// Sink receives a peer's events on the peer's own goroutine.
type Sink interface {
	Emit(from string, e Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(from string, e Event)

// Emit calls f.
func (f SinkFunc) Emit(from string, e Event) { f(from, e) }

// MasterEvent: the master at start and after a handoff (S16).
type MasterEvent struct {
	Header
	Player string `json:"player"`
}

// ReportEvent: a NETWORK_REPORT executed (S5–S7). RTTMs is null when the
// report left the round trip out (S6).
type ReportEvent struct {
	Header
	Player    string   `json:"player"`
	RTTMs     *float64 `json:"rtt_ms"`
	WaitMs    float64  `json:"wait_ms"`
	ProcessMs float64  `json:"process_ms"`
}

// TimingEvent: a timing event executed (S12, S15).
type TimingEvent struct {
	Header
	Decided    int    `json:"decided"`
	SendPeriod int    `json:"send_period"`
	LookAhead  int    `json:"look_ahead"`
	Rung       int    `json:"rung"`
	Tier       string `json:"tier"`
	FPS        int    `json:"fps"`
	Reason     string `json:"reason"`
}

// TimingActiveEvent: the timing in force changed (each staged step too).
type TimingActiveEvent struct {
	Header
	SendPeriod int    `json:"send_period"`
	LookAhead  int    `json:"look_ahead"`
	Rung       int    `json:"rung"`
	Tier       string `json:"tier"`
	FPS        int    `json:"fps"`
}

// MessageEvent: a line added to the message list. Player is set for lines
// only one machine sees (a desync it detected, a bad connection).
type MessageEvent struct {
	Header
	Text   string `json:"text"`
	Player string `json:"player,omitempty"`
}

// RemovedEvent: a removal executed.
type RemovedEvent struct {
	Header
	Player string `json:"player"`
}

// StallEvent: Player's machine waited WaitMs before executing Frame, last for
// the commands of Cause.
type StallEvent struct {
	Header
	Player string  `json:"player"`
	WaitMs float64 `json:"wait_ms"`
	Cause  string  `json:"cause,omitempty"`
}

// LinkStat is one private link as seen from From. Unknown values are null (L3).
type LinkStat struct {
	From          string   `json:"from"`
	To            string   `json:"to"`
	State         string   `json:"state"`
	SRTTMs        *float64 `json:"srtt_ms"`
	RTTVARMs      *float64 `json:"rttvar_ms"`
	RTOMs         *float64 `json:"rto_ms"`
	ConnTimeoutMs *float64 `json:"conn_timeout_ms"`
	Sent          *uint64  `json:"sent"`
	Retransmitted *uint64  `json:"retransmitted"`
	Expected      *uint64  `json:"expected"`
	Missing       *uint64  `json:"missing"`
	PeerExpected  *uint64  `json:"peer_expected"`
	PeerMissing   *uint64  `json:"peer_missing"`
}

// LinkEvent: a periodic link line.
type LinkEvent struct {
	Header
	LinkStat
}

// PlayerSummary sums one machine's waits.
type PlayerSummary struct {
	Player      string  `json:"player"`
	TotalWaitMs float64 `json:"total_wait_ms"`
	MaxWaitMs   float64 `json:"max_wait_ms"`
	Frames      int     `json:"frames"`
}

// SummaryEvent: the last line of a run.
type SummaryEvent struct {
	Header
	Links   []LinkStat      `json:"links"`
	Players []PlayerSummary `json:"players"`
}

func (*MasterEvent) Network() bool       { return true }
func (*ReportEvent) Network() bool       { return true }
func (*TimingEvent) Network() bool       { return true }
func (*TimingActiveEvent) Network() bool { return true }
func (e *MessageEvent) Network() bool    { return e.Player == "" }
func (*RemovedEvent) Network() bool      { return true }
func (*StallEvent) Network() bool        { return false }
func (*LinkEvent) Network() bool         { return false }
func (*SummaryEvent) Network() bool      { return false }
