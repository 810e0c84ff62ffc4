package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/lagscope/lagscope/netcore/impair"
	"github.com/lagscope/lagscope/units"
)

// AccessSpec is a player's own access link, between its machine and the
// core of the network (the scenario key `access`): "ada is on bad Wi-Fi".
// A datagram from a to b crosses a's access (half of a's RTTMs, LossUp),
// the pair's link, then b's access (half of b's RTTMs, LossDown): delays
// add, losses compound. JitterMs spreads each crossing's delay uniformly by
// ± that much. Fields left out are 0. Hops are the routers on it, as a
// trace meets them (hops.go): the LAN link into the first is where jitter,
// LossUp and LossDown happen. Queue is the line's bottleneck (queue.go).
type AccessSpec struct {
	RTTMs    *float64   `json:"rtt_ms"`
	JitterMs *float64   `json:"jitter_ms"`
	LossUp   *float64   `json:"loss_up"`
	LossDown *float64   `json:"loss_down"`
	Hops     []HopSpec  `json:"hops"`
	Queue    *queueSpec `json:"queue"`
}

// profiles are the two crossings of the access link: up (leaving the
// player) and down (reaching it).
func (a AccessSpec) profiles() (up, down impair.Profile) {
	if a.RTTMs != nil {
		up.Delay = units.FromMillis(*a.RTTMs / 2)
	}
	if a.JitterMs != nil {
		up.Jitter = units.FromMillis(*a.JitterMs)
	}
	down = up
	if a.LossUp != nil {
		up.Loss = *a.LossUp
	}
	if a.LossDown != nil {
		down.Loss = *a.LossDown
	}
	return up, down
}

// checkAccess validates an `access` object: players only (an observer is
// not part of the diagnosis and has no access of its own here), the same
// ranges as a link's.
func checkAccess(key string, access map[string]AccessSpec, players []string) error {
	for _, name := range slices.Sorted(maps.Keys(access)) {
		a := access[name]
		k := key + "." + name
		if !slices.Contains(players, name) {
			return fmt.Errorf("scenario: key %q: %q is not a player", key, name)
		}
		if err := checkLine(k, a.RTTMs, a.JitterMs, share{"loss_up", a.LossUp}, share{"loss_down", a.LossDown}); err != nil {
			return err
		}
		rtt := 0.0
		if a.RTTMs != nil {
			rtt = *a.RTTMs
		}
		if err := checkHops(k, a.Hops, rtt); err != nil {
			return err
		}
		if err := checkQueue(k, a.Queue); err != nil {
			return err
		}
	}
	return nil
}

// applyAccess sets the access links a scenario or timeline entry names; a
// spec replaces that player's access link whole. Names go in sorted order
// so that a run never depends on map order.
func (r *runner) applyAccess(access map[string]AccessSpec) {
	for _, name := range slices.Sorted(maps.Keys(access)) {
		m := r.byName[name]
		if m == nil {
			continue
		}
		up, down := access[name].profiles()
		r.net.SetAccess(m.addr, up, down)
		r.net.SetAccessHops(m.addr, routers(access[name].Hops))
		qUp, qDown := access[name].Queue.queues()
		r.net.SetAccessQueue(m.addr, qUp, qDown)
	}
}
