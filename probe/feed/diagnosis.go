package feed

import (
	"encoding/json"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/vocab"
)

// DiagnosisEvent: the diagnosis at a master evaluation frame. Its JSON is
// diagnosis.Event's ({"type":"diagnosis","frame":…, verdict, culprit,
// culprit_link, players, links}) with the header's t_ms after the frame
// when a live driver stamped one.
type DiagnosisEvent struct {
	Header
	Diagnosis diagnosis.Diagnosis
}

// MarshalJSON writes the header's fields, then the diagnosis body.
func (e *DiagnosisEvent) MarshalJSON() ([]byte, error) {
	h := e.Header
	h.Type = vocab.EventDiagnosis
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	body, err := e.Diagnosis.MarshalJSON()
	if err != nil {
		return nil, err
	}
	// {"type":…,"frame":…} + {"verdict":…} → {"type":…,"frame":…,"verdict":…}
	out := make([]byte, 0, len(head)+len(body))
	out = append(out, head[:len(head)-1]...)
	out = append(out, ',')
	return append(out, body[1:]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *DiagnosisEvent) UnmarshalJSON(b []byte) error {
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	var d diagnosis.Diagnosis
	if err := d.UnmarshalJSON(b); err != nil {
		return err
	}
	e.Header, e.Diagnosis = h, d
	return nil
}

// Network: every machine diagnoses on the same evaluation frames, so the
// simulator prints one line per evaluation (its machines all read every
// machine's links, Config.FillMatrix). Live machines each print their own.
func (*DiagnosisEvent) Network() bool { return true }
