package feed

// Command types. These are the network event IDs of S19: they travel inside
// frame packets, recordings name them, and they never change meaning.
// LATENCYFUDGE keeps its ID so old recordings still decode, but nothing
// sends it and the timing never reads it.
const (
	CmdGame          uint8 = 0x01 // an opaque game command (synthetic in sim and demo)
	CmdNetworkReport uint8 = 0x10 // S5: NETWORK_REPORT
	CmdTiming        uint8 = 0x11 // S12: a timing change with its frame rate (S15)
	CmdRemove        uint8 = 0x12 // S7/S16: a player is removed
	CmdGameSpeed     uint8 = 0x13 // S17: the game speed (caps the frame rate)
	CmdLatencyFudge  uint8 = 0x14 // S19: reserved, never sent, ignored on receipt
)

// ProtocolVersion names the version of the frame-packet format and event IDs;
// recordings carry it (S19).
const ProtocolVersion = 2

// Command is one command or network event, tagged with the frame on which
// every machine executes it (S1). Seq orders one player's commands.
type Command struct {
	Tag     int32 // the frame it was scheduled for; executes on the next send frame ≥ Tag (S13)
	Seq     uint32
	Type    uint8
	Payload []byte
}
