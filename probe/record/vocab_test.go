package record

import (
	"testing"

	"github.com/lagscope/lagscope/vocab"
)

// A recording takes every cause a diagnosis names and every hop link, and
// refuses what no diagnosis or trace writes: a cause or a link added to
// vocab without a case in the recording's checks fails here.
func TestRecordingKnowsEveryCauseAndHopLink(t *testing.T) {
	for _, c := range vocab.Causes {
		err := checkCauses([]vocab.Cause{c})
		if c.Diagnosed() != (err == nil) {
			t.Errorf("cause %q: the recording's check says %v", c, err)
		}
	}
	if checkCauses([]vocab.Cause{"hiccups"}) == nil {
		t.Error("a cause no diagnosis names passed")
	}
	for _, l := range vocab.HopLinks {
		if err := checkLabel("link", l); err != nil {
			t.Errorf("hop link %q: %v", l, err)
		}
	}
	if checkLabel("link", "garage") == nil {
		t.Error("a hop link no trace names passed")
	}
}
