package sim

import (
	"time"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
)

// The diagnosis in `sim`: every machine diagnoses at every
// master evaluation frame, as a live one does, but a simulated machine
// streams no telemetry (it would change the run), so its matrix would hold
// its own row only. The runner holds every machine and fills in the rest
// of the matrix from each machine's own row: every machine then diagnoses
// from every machine's links, and the line printed — once per evaluation,
// by the machine that narrates that frame — is the diagnosis of the whole
// session as it stood when that machine executed the frame.

// fillMatrix completes a machine's matrix with every running machine's own
// row. A machine that has vanished or left keeps its row unknown: nobody
// hears from it any more.
func (r *runner) fillMatrix(now time.Duration, m *feed.MatrixView) {
	for i := range m.Players {
		row := &m.Players[i]
		if row.Known {
			continue
		}
		mc := r.byName[row.Name]
		if mc == nil || mc.peer == nil || mc.host.Stopped() || mc.peer.Done() {
			continue
		}
		*row = mc.peer.OwnRow(now)
		row.Self = false
	}
}

// finalDiagnosis is summary.diagnosis: the current master's machine's view
// at the end, or the first machine still running when that one is gone.
func (r *runner) finalDiagnosis() diagnosis.Diagnosis {
	now := r.sched.Now()
	if m := r.byName[r.master]; m != nil && m.peer != nil && !m.host.Stopped() && !m.peer.Done() {
		return m.peer.Diagnose(now)
	}
	for _, m := range r.machines {
		if m.peer != nil && !m.host.Stopped() && !m.peer.Done() {
			return m.peer.Diagnose(now)
		}
	}
	return diagnosis.Diagnose(diagnosis.Input{Speed: r.sc.FPS})
}
