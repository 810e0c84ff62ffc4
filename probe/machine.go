package probe

import "github.com/lagscope/lagscope/netcore"

// A Peer is driven like the Endpoint under it: Receive, Tick, NextDeadline.
var _ netcore.Machine = (*Peer)(nil)
