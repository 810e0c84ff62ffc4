package record

import (
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// report is what `lagscope report` says about a recording: per
// link round trips and loss shares, the timing history with tiers, and the
// longest waits with who caused them — short enough to paste into a chat.
// Times are milliseconds; a share or statistic that was never measured is
// null (L3), never 0.
type report struct {
	Program  string        `json:"program,omitempty"`
	Session  string        `json:"session,omitempty"`
	Protocol int           `json:"protocol"`
	Virtual  bool          `json:"virtual"`
	Length   time.Duration `json:"-"`
	LengthMs float64       `json:"length_ms"`
	Players  []string      `json:"players"`
	// Incidents are the session's story, in the order they opened: each
	// as its close line without its type (an incident the recording ends
	// in the middle of: its latest line, without a close). Null for a
	// recording made before machines told incidents (incidents.go); the
	// text and markdown reports lead with them, worst first.
	Incidents []feed.Incident `json:"incidents"`
	// endFrame is the summary's frame, nil without one: an incident
	// closed on it was still going when the run ended.
	endFrame *int
	// clock is the session's clock as the recording holds it, and fps
	// the frame rate the recording's last View had (sessiontime.go).
	clock sessionClock
	fps   int
	// Diagnosis is the last diagnosis in the recording, null when it holds
	// none; the text and markdown reports print it after the incidents, as
	// the state at the end.
	Diagnosis *diagnosisReport `json:"diagnosis"`
	Links     []linkReport     `json:"links"`
	// Paths are the last hop trace of each link a machine traced, in
	// name order; absent when none was traced.
	Paths []pathReport `json:"paths,omitempty"`
	// Loads are the load tests, the latest reportLoadRows in the order
	// they ended; absent when none ran. LoadOmitted counts the older ones
	// left out.
	Loads       []loadReport `json:"load_tests,omitempty"`
	LoadOmitted int          `json:"load_tests_omitted,omitempty"`
	Timing      []timingRow  `json:"timing"`
	// TimingOmitted counts the older timing rows left out to stay short.
	TimingOmitted int          `json:"timing_omitted,omitempty"`
	Waits         []waitRow    `json:"longest_waits"`
	Causes        []causeRow   `json:"causes"`
	Stopped       string       `json:"stopped,omitempty"` // where a cut-off recording ended
	Removed       []removedRow `json:"removed,omitempty"`
	// Commands counts the executed commands by the player who issued
	// them, each once however many machines recorded it (S7); empty for a
	// recording without commands.
	Commands []commandRow `json:"commands,omitempty"`
}

// commandRow is one player's executed commands.
type commandRow struct {
	Player string `json:"player"`
	Count  int    `json:"count"`
	// Moved ran on a later send frame than the frame they were scheduled
	// for: a timing change had made that frame no longer a send frame (S13).
	Moved int `json:"moved"`
}

// linkReport is one private link as its From machine saw it.
type linkReport struct {
	From    string   `json:"from"`
	To      string   `json:"to"`
	Samples int      `json:"samples"`
	SRTT    spread   `json:"srtt_ms"`
	Jitter  *float64 `json:"jitter_ms"` // mean RTTVAR: RFC 6298's mean deviation of the round trip (T3)
	// Cumulative totals over the recording, every life of the link added
	// up (L5), and the three shares they give: resend share, inbound and
	// outbound loss (L8 says how to read them).
	Sent          uint64    `json:"sent"`
	Retransmitted uint64    `json:"retransmitted"`
	Expected      uint64    `json:"expected"`
	Lost          uint64    `json:"lost"`
	PeerExpected  uint64    `json:"peer_expected"`
	PeerLost      uint64    `json:"peer_lost"`
	ResendShare   *float64  `json:"resend_share"`  // retransmitted / sent
	InboundLoss   *float64  `json:"inbound_loss"`  // lost / expected
	OutboundLoss  *float64  `json:"outbound_loss"` // peer_lost / peer_expected (the peer's LinkReports, L4)
	Bad           []episode `json:"bad"`           // T11: a packet outlived the connection timeout
}

// spread summarises samples; all null when there were none.
type spread struct {
	Min  *float64 `json:"min"`
	Mean *float64 `json:"mean"`
	P95  *float64 `json:"p95"`
	Max  *float64 `json:"max"`
}

// episode is a stretch of time a link was bad, by the per-second samples.
type episode struct {
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"`
	Open   bool    `json:"open,omitempty"` // still bad when the recording ended
}

// timingRow is one executed timing event (S12, S15, S17).
type timingRow struct {
	AtMs       float64 `json:"at_ms"`
	Frame      int     `json:"frame"`
	Decided    int     `json:"decided"`
	SendPeriod int     `json:"send_period"`
	LookAhead  int     `json:"look_ahead"`
	Rung       int     `json:"rung"`
	Tier       string  `json:"tier"`
	FPS        int     `json:"fps"`
	Reason     string  `json:"reason"`
}

// waitRow is one stall: Player's machine waited before executing Frame,
// last for Cause's commands.
type waitRow struct {
	AtMs   float64 `json:"at_ms"`
	Frame  int     `json:"frame"`
	Player string  `json:"player"`
	Cause  string  `json:"cause"`
	WaitMs float64 `json:"wait_ms"`
}

// causesCount says what the "Who caused the waits" totals count, and how
// they differ from the diagnosis's caused wait, so that two figures for
// one player do not read as a contradiction.
const causesCount = "Every wait recorded in the session, by the player waited for (players who left included). " +
	"The diagnosis's caused wait counts what the players seated at its end waited, as their links count it."

// causeRow adds up the waits a player caused the others.
type causeRow struct {
	Cause   string             `json:"cause"`
	TotalMs float64            `json:"total_ms"`
	Waits   int                `json:"waits"`
	Of      map[string]float64 `json:"of"` // waiting player → ms
}

// removedRow is a player leaving (S7, S16).
type removedRow struct {
	AtMs   float64 `json:"at_ms"`
	Frame  int     `json:"frame"`
	Player string  `json:"player"`
}
