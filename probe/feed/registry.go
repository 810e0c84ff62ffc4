package feed

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lagscope/lagscope/vocab"
)

// registry is the one table from an event's type name to its Go type:
// the NDJSON writer refuses an event it does not hold, and a recording's
// reader decodes through it, so a type cannot be published that a replay
// would drop. Every vocab.EventTypes name is here (a test says so).
var registry = map[vocab.EventType]func() Event{
	vocab.EventSession:      func() Event { return &SessionEvent{} },
	vocab.EventRoster:       func() Event { return &RosterEvent{} },
	vocab.EventMaster:       func() Event { return &MasterEvent{} },
	vocab.EventReport:       func() Event { return &ReportEvent{} },
	vocab.EventTiming:       func() Event { return &TimingEvent{} },
	vocab.EventTimingActive: func() Event { return &TimingActiveEvent{} },
	vocab.EventMessage:      func() Event { return &MessageEvent{} },
	vocab.EventRemoved:      func() Event { return &RemovedEvent{} },
	vocab.EventStall:        func() Event { return &StallEvent{} },
	vocab.EventLink:         func() Event { return &LinkEvent{} },
	vocab.EventDiagnosis:    func() Event { return &DiagnosisEvent{} },
	vocab.EventAlert:        func() Event { return &AlertEvent{} },
	vocab.EventSummary:      func() Event { return &SummaryEvent{} },
	vocab.EventPath:         func() Event { return &PathEvent{} },
	vocab.EventLoadStart:    func() Event { return &LoadStartEvent{} },
	vocab.EventLoad:         func() Event { return &LoadEvent{} },
	vocab.EventIncident:     func() Event { return &IncidentEvent{} },
}

// NewEvent is an empty event of type t, nil for a type this build does
// not know (a newer writer may add types).
func NewEvent(t vocab.EventType) Event {
	if mk, ok := registry[t]; ok {
		return mk()
	}
	return nil
}

// Registered reports whether t is in the registry.
func Registered(t vocab.EventType) bool { _, ok := registry[t]; return ok }

// DecodeEvent turns one NDJSON event object into its Go type. An object of
// a type this build does not know gives (nil, nil); anything that is not
// an event object gives an error.
func DecodeEvent(raw []byte) (Event, error) {
	var head struct {
		Type *vocab.EventType `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.Type == nil {
		return nil, fmt.Errorf("event without a type")
	}
	e := NewEvent(*head.Type)
	if e == nil {
		return nil, nil
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(e); err != nil {
		return nil, fmt.Errorf("%s event: %w", *head.Type, err)
	}
	if got := Head(e).Type; got != *head.Type {
		return nil, fmt.Errorf("%s event decoded as %s", *head.Type, got)
	}
	return e, nil
}
