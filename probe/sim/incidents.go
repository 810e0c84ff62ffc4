package sim

// Incidents in the simulator: every machine tells the same incidents from
// the same evidence (package incident), so the run prints one machine's —
// the teller: the first player of the house order still running — and
// summary.incidents holds the teller's. Options.OnIncident hears every
// machine's.

// teller is the machine whose incidents the run prints: the first seated
// player still running, nil when none is.
func (r *runner) teller() *machine {
	for _, m := range r.machines {
		if m.peer != nil && !m.peer.Observer() && !m.host.Stopped() && !m.peer.Done() {
			return m
		}
	}
	return nil
}

// endIncidents closes every machine's incidents still open at the end of
// the run, before the summary.
func (r *runner) endIncidents() {
	now := r.sched.Now()
	for _, m := range r.machines {
		if m.peer != nil && !m.host.Stopped() {
			m.peer.CloseIncidents(now)
		}
	}
}
