// Package record writes and reads lagscope recordings (`--record FILE`):
// what a session published, kept so that `lagscope replay` and
// `lagscope report` can look at it later.
//
// A recording is append-only text, one record a line:
//
//	<crc32c, 8 hex digits> <kind> <JSON>\n
//
// The checksum (CRC-32C, Castagnoli) covers the kind, the space and the
// JSON. The first record is the header (kind H); it names the recording
// format and the protocol version of the engine that wrote it (S19), so a
// reader can refuse what it cannot read instead of misreading it. Then come
// events (kind E: the NDJSON object exactly as a sink saw it, with the time
// and the machine that published it), views (kind V: the picture of a
// machine, once a second: the per-second link lines with SRTT, RTO and the
// loss totals, L1–L5) and commands (kind C: an executed command with the
// send frame it ran on and the frame it was scheduled for, S13, in the order
// the machine that recorded it executed them).
//
// Every record is a whole line or nothing: a writer never seeks back, and a
// reader stops at the first line that is incomplete or fails its checksum and
// says where (StopError). A recording cut off by SIGKILL, a power cut or a
// full disk therefore keeps every record that was written out completely.
// Writers flush at least once a second, so such a cut loses at most the last
// second.
//
// Network events are stored once per recording, as the machine that
// recorded them executed them (S7, S19: NETWORK_REPORT is an event of its
// own and appears in recordings).
package record
