package feed

import (
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/units"
	"github.com/lagscope/lagscope/vocab"
)

// The events a peer publishes, one struct per NDJSON event type (docs/cli.md).
// Sinks (NDJSON writer, UI, recorder, metrics) read them; none reaches back.

// Event is one published event.
type Event interface {
	head() *Header
	// Network reports whether every machine publishes the same event on the
	// same frame (a network event, a timing change); such events are printed
	// once per session by the simulator.
	Network() bool
}

// Header is common to every event. TMs and GameMs are set by live drivers
// only: TMs is this process's clock; GameMs is the session time of Frame
// (the game's time since it started, the same on every machine), once the
// game has started.
type Header struct {
	Type   vocab.EventType `json:"type"`
	Frame  int             `json:"frame"`
	TMs    *float64        `json:"t_ms,omitempty"`
	GameMs *float64        `json:"game_ms,omitempty"`
	// Pregame marks an event from before the game started that reaches a
	// machine after its start (a late watcher's snapshot brings the
	// lobby's lines): it has no session time. Not written.
	Pregame bool `json:"-"`
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
	// RTT (with HasRTT), Wait and Process are the report's figures as the
	// engine reads them (NewReportEvent sets both forms). JSON does not
	// carry them: an event read from JSON has them 0.
	RTT     time.Duration `json:"-"`
	HasRTT  bool          `json:"-"`
	Wait    time.Duration `json:"-"`
	Process time.Duration `json:"-"`
}

// NewReportEvent is the event of player's report under h: its round trip
// rtt when hasRTT, its wait and its processing time, both as the engine
// reads them and in ms as JSON writes them.
func NewReportEvent(h Header, player string, rtt time.Duration, hasRTT bool, wait, process time.Duration) *ReportEvent {
	h.Type = vocab.EventReport
	e := &ReportEvent{Header: h, Player: player, WaitMs: units.Millis(wait), ProcessMs: units.Millis(process),
		HasRTT: hasRTT, Wait: wait, Process: process}
	if hasRTT {
		ms := units.Millis(rtt)
		e.RTTMs, e.RTT = &ms, rtt
	}
	return e
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
	// Kind and Subject type the line for front ends (an alarm, a tier);
	// they are not written: the text says the same to a reader.
	Kind    MessageKind `json:"-"`
	Subject string      `json:"-"`
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
	// Wait is WaitMs as the engine reads it, set by the machine that
	// waited. JSON does not carry it: an event read from JSON has it 0.
	Wait time.Duration `json:"-"`
}

// AlertKind says what an alert is about.
type AlertKind string

// The alert kinds (the `alert` event's kind).
const (
	AlertBad  AlertKind = "bad"  // a link has gone bad (T11)
	AlertLoss AlertKind = "loss" // a link's inbound or outbound loss passed the threshold
	AlertTier AlertKind = "tier" // the target tier worsened (S18)
)

// AlertEvent: something a person looking away would want to know, raised
// once per episode by the machine Player (each machine raises its own). An
// episode ends when its condition has been clear for a while; From and To
// name the link, nil for an alert about the whole session.
type AlertEvent struct {
	Header
	Player string    `json:"player"`
	Kind   AlertKind `json:"kind"`
	From   *string   `json:"from"`
	To     *string   `json:"to"`
	Text   string    `json:"text"`
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
	// Path is how the measuring pair's datagrams travel: "direct", or
	// "relayed" through the host.
	Path string `json:"path"`
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
	// Diagnosis is who and what cost the session at the end:
	// always present; with nothing measured its numbers are null and its
	// verdict says so (Peer.Diagnose).
	Diagnosis diagnosis.Diagnosis `json:"diagnosis"`
	// Rejected (live machines) counts what this machine refused to act on.
	Rejected *RejectedCounts `json:"rejected,omitempty"`
	// Process (live) is what running the session cost this process.
	Process *ProcessStats `json:"process,omitempty"`
	// Relay (the host, when it relayed) is what it forwarded per pair.
	Relay []RelayStat `json:"relay,omitempty"`
	// Watch (a watcher that attached after the start) says what
	// it attached to and how soon its Matrix was complete.
	Watch *WatchSummary `json:"watch,omitempty"`
	// Incidents is every incident of the run, as its last line.
	Incidents []Incident `json:"incidents"`
}

// WatchSummary is a late watcher's attach: the frame, the timing in force
// and the master the host's snapshot gave, the telemetry updates that moved
// its picture on, and after how many of them its Matrix first held every
// pair of seated players (null: never). Counted in updates, not seconds:
// each player sends at most ten a second (telemetryMinGap).
type WatchSummary struct {
	Frame               int     `json:"frame"`
	SendPeriod          int     `json:"send_period"`
	LookAhead           int     `json:"look_ahead"`
	FPS                 int     `json:"fps"`
	Master              string  `json:"master"`
	TelemetryUpdates    uint64  `json:"telemetry_updates"`
	MatrixCompleteAfter *uint64 `json:"matrix_complete_after"`
}

// RejectedCounts are datagrams and messages a live machine dropped without
// acting on them: a wrong token, key or sender, bytes that do not decode,
// replays, oversize datagrams, handshakes out of place, lobby messages and
// frame packets that do not decode, and values no conforming peer sends
// (Implausible: the plausibility bounds, plausible.go). Total is their sum.
type RejectedCounts struct {
	Total     uint64 `json:"total"`
	Token     uint64 `json:"token"`
	Sender    uint64 `json:"sender"`
	Malformed uint64 `json:"malformed"`
	Auth      uint64 `json:"auth"`
	Replay    uint64 `json:"replay"`
	Oversize  uint64 `json:"oversize"`
	Window    uint64 `json:"window"`
	Handshake uint64 `json:"handshake"`
	Lobby     uint64 `json:"lobby"`
	Frame     uint64 `json:"frame"`
	// Path: checks and relay frames that would have moved a link to an
	// address that never answered a check of this machine's.
	Path uint64 `json:"path"`
	// Load: load-test messages that do not decode, and requests, claims
	// and pace commands from a machine that may not send them (a watcher,
	// one without the session's turn, before the game, a pace without the
	// peer's nonce: docs/load-test.md).
	Load uint64 `json:"load"`
	// Implausible: a link report claiming more than was sent (netcore), a
	// frame packet or command out of bounds, a timing event or removal
	// from a machine that may not issue it, a timing event whose target
	// is not a valid timing (Peer.Implausible).
	Implausible uint64 `json:"implausible"`
}

// Sum sets Total from the other counts.
func (r *RejectedCounts) Sum() {
	r.Total = r.Token + r.Sender + r.Malformed + r.Auth + r.Replay + r.Oversize + r.Window + r.Handshake + r.Lobby + r.Frame + r.Path + r.Load + r.Implausible
}

// ProcessStats is what a live process spent: CPU time against wall time,
// datagrams through its sockets, the longest it woke up late for a
// deadline of its own (a wait the process caused itself, not the network),
// and how long datagrams waited in its sockets before it read them.
type ProcessStats struct {
	WallMs            float64 `json:"wall_ms"`
	CPUMs             float64 `json:"cpu_ms"`
	CPUShare          float64 `json:"cpu_share"`
	DatagramsSent     uint64  `json:"datagrams_sent"`
	DatagramsReceived uint64  `json:"datagrams_received"`
	MaxLateMs         float64 `json:"max_late_ms"`
	// ReadDelayP50Ms and ReadDelayP99Ms are the median and the 99th
	// percentile of how long a datagram waited in the process's sockets,
	// from the kernel's arrival stamp to the read that took it: this
	// process's own share of every round trip a peer measures to it.
	// Absent where the kernel stamps no arrivals (unknown, not 0).
	ReadDelayP50Ms *float64 `json:"read_delay_p50_ms,omitempty"`
	ReadDelayP99Ms *float64 `json:"read_delay_p99_ms,omitempty"`
}

// SessionEvent (live): the first line of a live machine: what it is, its
// name, the address its socket is bound to and, for a joiner, the host's.
type SessionEvent struct {
	Header
	Session string `json:"session,omitempty"`
	Role    string `json:"role"`
	Name    string `json:"name"`
	Addr    string `json:"addr"`
	Host    string `json:"host,omitempty"`
	Need    int    `json:"need,omitempty"`
}

// RosterEvent (live): the lobby's roster changed. Players are in house
// order; Need is how many seated players start the game.
type RosterEvent struct {
	Header
	Version   uint32   `json:"version"`
	Need      int      `json:"need"`
	Players   []string `json:"players"`
	Observers []string `json:"observers"`
}

func (*MasterEvent) Network() bool       { return true }
func (*ReportEvent) Network() bool       { return true }
func (*TimingEvent) Network() bool       { return true }
func (*TimingActiveEvent) Network() bool { return true }
func (e *MessageEvent) Network() bool    { return e.Player == "" }
func (*RemovedEvent) Network() bool      { return true }
func (*StallEvent) Network() bool        { return false }
func (*AlertEvent) Network() bool        { return false }
func (*LinkEvent) Network() bool         { return false }
func (*SummaryEvent) Network() bool      { return false }
func (*SessionEvent) Network() bool      { return false }
func (*RosterEvent) Network() bool       { return false }
