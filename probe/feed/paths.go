package feed

import "time"

// Paths between machines: a pair's datagrams travel direct, or
// through the host when the two found no direct path.
const (
	PathDirect  = "direct"
	PathRelayed = "relayed"
)

// PendingPair is a pair of the lobby that carries no traffic yet, and what
// is being tried for it: "direct" (the address the host saw), "punching"
// (connectivity checks to every address known) or "relayed" (through the
// host). For is how long it has been tried.
type PendingPair struct {
	A, B   string
	Trying string
	For    time.Duration
}

// RelayStat is what the host forwarded for one relayed pair (the summary's
// `relay`): datagrams and bytes forwarded, and those refused (over the
// pair's budget).
type RelayStat struct {
	Between          [2]string `json:"between"`
	Datagrams        uint64    `json:"datagrams"`
	Bytes            uint64    `json:"bytes"`
	RefusedDatagrams uint64    `json:"refused_datagrams"`
	RefusedBytes     uint64    `json:"refused_bytes"`
}
