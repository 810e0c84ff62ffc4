package ui

import (
	"strings"
	"testing"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/vocab"
)

// Every cause a diagnosis names has its evidence in words in the
// Diagnosis view, and every hop link its words in the Path and Diagnosis
// views: a cause or a link added to vocab without a case here fails.
func TestEveryCauseAndHopLinkHasWords(t *testing.T) {
	d := fixtureDiagnosis()
	pd := &d.Players[1]
	pd.Bufferbloat = &diagnosis.Bufferbloat{UploadMs: 380, DownloadMs: 120}
	for _, c := range vocab.Causes {
		if !c.Diagnosed() {
			continue
		}
		if got := playerEvidence(d, pd, c); got == string(c) || got == "" {
			t.Errorf("cause %q has no evidence in the Diagnosis view (it reads %q)", c, got)
		}
		if c.Words() == string(c) {
			t.Errorf("cause %q has no words for people", c)
		}
	}
	for _, l := range vocab.HopLinks {
		if w := l.Words(); w == string(l) || w == "" {
			t.Errorf("hop link %q has no words for people", l)
		}
		if got := linkText(l); got != string(l) {
			t.Errorf("hop link %q reads %q in the Path view", l, got)
		}
		if !strings.Contains(l.Words(), " ") {
			t.Errorf("hop link %q's words %q are not a phrase", l, l.Words())
		}
	}
}
