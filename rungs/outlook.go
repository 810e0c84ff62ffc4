package rungs

// Outlook is where the target goes next if the round trips stay as they
// are: the end of a descent that is pending (S11c: three calm evaluations
// in a row) or running (S11d: one rung per evaluation), worked out from
// the rules and the evaluation frames (S9).
type Outlook struct {
	// To is the target the descent settles at; the zero Timing when the
	// target stays where it is.
	To Timing
	// Decided is the evaluation frame expected to choose To; Active the
	// frame by which To is expected to be in force (S12).
	Decided, Active int
}

// Pending reports whether a descent is expected.
func (o Outlook) Pending() bool { return o.To.SendPeriod > 0 }

// outlookEvaluations bounds the projection: three evaluations to start a
// descent, then at most one per rung, and one look-ahead cut at rung 10.
const outlookEvaluations = inARowNeeded + Rungs + 2

// Outlook projects the evaluations after frame on a copy of the master,
// holding the record's summary as it is at frame. A wait of 0.1 s or more
// in today's reports is taken to hold back the next evaluation too (a
// report covers its player's last two report intervals, S5, so a spike's
// waits are still in the reports one evaluation later) and none after it.
// It changes nothing in m.
func (m *Master) Outlook(frame int, rec *Record) Outlook {
	sum := rec.Summary(frame)
	if !m.initialDone || sum.Forced || !sum.Complete() {
		return Outlook{}
	}
	sim := *m
	var out Outlook
	f := frame
	for i := range outlookEvaluations {
		if i > 0 {
			sum.MaxWait = 0
		}
		f = nextEvaluation(f, m.start)
		prev := sim.target
		d, ok := sim.evaluate(f, sum, sim.fps)
		if !ok {
			if sim.descending || sim.inARow > 0 || i == 0 {
				continue // counting toward the first step (S11c), or held back by today's waits
			}
			break
		}
		if d.Target.compare(prev) >= 0 {
			break
		}
		out = Outlook{To: d.Target, Decided: f, Active: f + activationDelay(prev)}
	}
	return out
}

// nextEvaluation is the first evaluation frame after frame, for a game that
// started on start (S9).
func nextEvaluation(frame, start int) int {
	since := frame - start
	switch {
	case since < 64:
		return start + 64
	case since < 128:
		return start + 128
	}
	return start + (since/evaluateEvery+1)*evaluateEvery
}

// activationDelay is how many frames after its decision a shorter timing is
// in force (S12): its event executes one look-ahead later, the commands
// scheduled under the old look-ahead come due one more look-ahead later,
// and the new send period starts on a frame that is a multiple of both
// send periods, at most one old send period on.
func activationDelay(old Timing) int {
	old = old.sane()
	return 2*old.LookAhead + old.SendPeriod
}
