package feed

import "github.com/lagscope/lagscope/vocab"

// Incident is one episode of lag as a machine tells it (docs/diagnosis.md,
// "Incidents"): when it opened and closed, who or which path, why, how
// far it rose, what it cost, where on the path it starts. It is the
// `incident` event's body, and `summary.incidents` holds one per incident
// of the run, as its last line. Times are this machine's t_ms clock (in
// the simulator, virtual time since the game started); frames are the
// game's, common to every machine.
type Incident struct {
	ID          int                 `json:"id"`
	Phase       vocab.IncidentPhase `json:"phase"`
	OpenedMs    float64             `json:"opened_ms"`
	OpenedFrame int                 `json:"opened_frame"`
	ClosedMs    *float64            `json:"closed_ms"`
	ClosedFrame *int                `json:"closed_frame"`
	// Player, or Between for a path neither player's own connection
	// explains; both nil when no one can be told yet (Text says why).
	Player  *string     `json:"player"`
	Between *[2]string  `json:"between"`
	Cause   vocab.Cause `json:"cause"`
	// AddedMs is the largest round trip above the player's (or path's)
	// own baseline seen in the incident, Loss the largest loss share over
	// any 5 s of it; nil when not measured (L3).
	AddedMs *float64 `json:"added_ms"`
	Loss    *float64 `json:"loss"`
	// WaitMs and FramesWaited are what it has cost so far: every seated
	// machine's waits attributed to it, summed.
	WaitMs       float64 `json:"wait_ms"`
	FramesWaited int     `json:"frames_waited"`
	// RungFrom is the target in force when it opened, RungPeak the
	// highest during it.
	RungFrom int `json:"rung_from"`
	RungPeak int `json:"rung_peak"`
	// Where is the hop its delay persists from, once a trace judged it.
	Where *IncidentWhere `json:"where"`
	// LoadTest names the members of a load test it falls inside: its
	// waits are the test's price, not a fault.
	LoadTest *LoadPair `json:"load_test"`
	Text     string    `json:"text"`
}

// IncidentWhere is the hop an incident's delay starts at: the link into
// it, its ttl and what it adds.
type IncidentWhere struct {
	Link    vocab.HopLink `json:"link"`
	TTL     int           `json:"ttl"`
	AddedMs float64       `json:"added_ms"`
}

// LoadPair names a load test's tester and peer.
type LoadPair struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// IncidentEvent is one line of an incident: its first (open), a change
// (update) or its last (close).
type IncidentEvent struct {
	Header
	Incident
}

// Network: each machine tells incidents from what it knows.
func (*IncidentEvent) Network() bool { return false }
