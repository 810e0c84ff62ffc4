package record

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lagscope/lagscope/probe"
)

// newEvent returns an empty event of an NDJSON type (docs/cli.md), or nil
// for a type this build does not know: a newer writer may add types, and a
// reader keeps their bytes without understanding them.
func newEvent(typ string) probe.Event {
	switch typ {
	case "master":
		return &probe.MasterEvent{}
	case "report":
		return &probe.ReportEvent{}
	case "timing":
		return &probe.TimingEvent{}
	case "timing_active":
		return &probe.TimingActiveEvent{}
	case "message":
		return &probe.MessageEvent{}
	case "removed":
		return &probe.RemovedEvent{}
	case "stall":
		return &probe.StallEvent{}
	case "alert":
		return &probe.AlertEvent{}
	case "link":
		return &probe.LinkEvent{}
	case "summary":
		return &probe.SummaryEvent{}
	case "diagnosis":
		return &probe.DiagnosisEvent{}
	case "path":
		return &probe.PathEvent{}
	case "load":
		return &probe.LoadEvent{}
	}
	return nil
}

// decodeEvent turns one NDJSON event object into its probe type. An object
// of an unknown type gives (nil, nil); anything that is not an event object
// gives an error.
func decodeEvent(raw []byte) (probe.Event, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.Type == nil {
		return nil, fmt.Errorf("event without a type")
	}
	e := newEvent(*head.Type)
	if e == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(e); err != nil {
		return nil, fmt.Errorf("%s event: %w", *head.Type, err)
	}
	return e, nil
}
