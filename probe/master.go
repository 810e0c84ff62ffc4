package probe

import "github.com/lagscope/lagscope/netcore"

// MasterID is the current master's PeerID (S16), as this machine's game
// has it; ok is false before the start or when every seated player is
// gone. A spectator has the master its state names.
func (p *Peer) MasterID() (netcore.PeerID, bool) {
	if p.masterP == nil {
		return 0, false
	}
	return p.masterP.ID, true
}
