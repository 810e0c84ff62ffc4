package vocab

// EventType is the `type` of a published NDJSON event (docs/cli.md).
type EventType string

const (
	EventSession      EventType = "session"       // this machine's part in a session
	EventRoster       EventType = "roster"        // the lobby's roster changed
	EventMaster       EventType = "master"        // the master at start and after a handoff
	EventReport       EventType = "report"        // a report executed
	EventTiming       EventType = "timing"        // a timing event executed
	EventTimingActive EventType = "timing_active" // the timing in force changed
	EventMessage      EventType = "message"       // a line of the message list
	EventRemoved      EventType = "removed"       // a removal executed
	EventStall        EventType = "stall"         // a machine waited before a frame
	EventLink         EventType = "link"          // a link's figures
	EventDiagnosis    EventType = "diagnosis"     // whose share costs the match
	EventAlert        EventType = "alert"         // an episode worth a line of its own
	EventSummary      EventType = "summary"       // the last line
	EventPath         EventType = "path"          // a link's hop trace
	EventLoadStart    EventType = "load_start"    // a load test between two members begins
	EventLoad         EventType = "load"          // a load test's result
	EventIncident     EventType = "incident"      // one episode of lag: open, update, close
)

// EventTypes is every event type, in the order docs/cli.md lists them.
var EventTypes = [...]EventType{EventSession, EventRoster, EventMaster, EventReport, EventTiming, EventTimingActive,
	EventMessage, EventRemoved, EventStall, EventLink, EventDiagnosis, EventAlert, EventSummary, EventPath, EventLoadStart,
	EventLoad, EventIncident}
