package netcore

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"
)

// The wire format, byte by byte, is in docs/protocol.md; keep the two in
// step. Everything is little-endian. IDs never change meaning: a new message
// gets a new ID, and a receiver skips record types it does not know.

// Protocol identity.
const (
	Magic0  = 'L'
	Magic1  = 'S'
	Version = 2 // bump when a known record changes shape
)

// Header layout.
const (
	HeaderLen = 24
	// flagSealed marks a datagram whose body is AEAD-sealed with the
	// session's pre-shared key (Q7). Other flag bits are reserved and must
	// be zero.
	flagSealed = 0x01
	// sealPrefixLen is the sender instance (8) and nonce counter (8) that
	// follow the header of a sealed datagram; sealTagLen the GCM tag.
	sealPrefixLen = 16
	sealTagLen    = 16
	// SealOverhead is what sealing adds to a datagram.
	SealOverhead = sealPrefixLen + sealTagLen
	// maxBody is the most body bytes a datagram may carry, sealed or not,
	// so that fragmenting does not depend on whether a key is set (Q5).
	maxBody = MaxDatagram - HeaderLen - SealOverhead
)

// PeerID names a machine within a session.
type PeerID uint16

// PeerUnassigned is the sender ID of a machine that has not been welcomed
// into a session yet (handshake only).
const PeerUnassigned PeerID = 0xFFFF

// Channel says how a datagram travels. Numbered channels (reliable,
// unreliable, global) number their datagrams consecutively (L2); control
// datagrams (handshake, acks, link reports) are not numbered.
type Channel uint8

const (
	ChannelControl    Channel = 0 // unnumbered: handshake, acks, link reports
	ChannelReliable   Channel = 1 // private link: acked, resent, never dropped, in order (T8, T11)
	ChannelUnreliable Channel = 2 // private link: numbered, newest state wins (Q1)
	ChannelGlobal     Channel = 3 // lobby/chat: acked, fixed retry, dropped at timeout (T14)
	numChannels               = 4
)

func (c Channel) String() string {
	switch c {
	case ChannelControl:
		return "control"
	case ChannelReliable:
		return "reliable"
	case ChannelUnreliable:
		return "unreliable"
	case ChannelGlobal:
		return "global"
	}
	return "invalid"
}

// Record types. Stable numeric IDs (S19 applies to the wire as well).
// RecData and RecAck are the two a reader of NextRecord tells apart: a
// message and its acknowledgement.
const (
	recHello      uint8 = 0x01
	recChallenge  uint8 = 0x02
	recResponse   uint8 = 0x03
	recWelcome    uint8 = 0x04
	recRefuse     uint8 = 0x05
	RecData       uint8 = 0x10
	recFragment   uint8 = 0x11
	RecAck        uint8 = 0x20
	recLinkReport uint8 = 0x21
	// recKeepAlive and recKeepAliveReply carry keep-alives outside the
	// numbered channels, so they are in no loss total (L2) yet still show
	// a silent peer (T11): see keepalive.go.
	recKeepAlive      uint8 = 0x22
	recKeepAliveReply uint8 = 0x23
	// recCarriedAck is an Ack, byte for byte, carried by a numbered
	// datagram going the other way: the ack rides on a reply that leaves
	// in the same wake-up (docs/protocol.md "Coalescing"). It
	// has a type of its own so that a receiver that does not know it
	// skips it (and is resent what it did not ack) rather than reject the
	// message with it, and so that a plain Ack stays control-only.
	recCarriedAck uint8 = 0x24
)

// Record and message sizes.
const (
	recordHeaderLen = 3 // type u8, length u16
	dataFixedLen    = 4 // message id
	fragFixedLen    = 8 // message id, index, count
	ackFixedLen     = 6 // channel, count, cumulative
	linkReportLen   = 16
	keepAliveFixed  = 5 // id, flags
	keepReplyLen    = 4 // id
	// MaxDataPayload is the largest message sent whole, in one Data record.
	MaxDataPayload = maxBody - recordHeaderLen - dataFixedLen
	// fragmentPayload is the size of every fragment but the last (Q5).
	fragmentPayload = maxBody - recordHeaderLen - fragFixedLen
	// maxKeepAlivePayload is the largest message a KeepAlive carries: it
	// is never cut into fragments, so it fits one control datagram.
	maxKeepAlivePayload = maxBody - recordHeaderLen - keepAliveFixed
	// maxMessage bounds a message, and so the memory reassembly may hold
	// for one.
	maxMessage = 1 << 20
	// maxFragments is the most fragments a message of maxMessage bytes needs.
	maxFragments = (maxMessage + fragmentPayload - 1) / fragmentPayload
	// MaxNameLen bounds a player name in the handshake.
	MaxNameLen = 32
	// CookieLen is the size of a handshake challenge cookie.
	CookieLen = 16
)

// Decode errors. They are sentinels so that rejecting a flood of bad
// datagrams allocates nothing.
var (
	errShort    = errors.New("netcore: datagram or record too short")
	errMagic    = errors.New("netcore: bad magic")
	errVersion  = errors.New("netcore: unsupported protocol version")
	errReserved = errors.New("netcore: reserved bits set")
	errChannel  = errors.New("netcore: bad channel")
	errLength   = errors.New("netcore: length does not match content")
	errField    = errors.New("netcore: field out of range")
	ErrOversize = errors.New("netcore: datagram or message too large")
	errAuth     = errors.New("netcore: authentication failed")
)

var le = binary.LittleEndian

// Header is the fixed 24-byte start of every datagram.
type Header struct {
	Flags   uint8
	Token   uint64 // session token: guards against blind spoofing
	Sender  PeerID
	Channel Channel
	// Seq numbers every datagram a numbered channel sends, resends
	// included, consecutively: the receiver's loss window judges these
	// (L2). 0 on control.
	Seq uint32
	// Packet is the acked channels' packet number: the same for every
	// copy of a packet, the unit of acks, ordering and exactly-once
	// delivery. 0 on the unreliable and control channels.
	Packet uint32
}

// PutHeader writes h into b[:HeaderLen]. b must be at least HeaderLen long.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderLen-1]
	b[0], b[1], b[2], b[3] = Magic0, Magic1, Version, h.Flags
	le.PutUint64(b[4:], h.Token)
	le.PutUint16(b[12:], uint16(h.Sender))
	b[14], b[15] = byte(h.Channel), 0
	le.PutUint32(b[16:], h.Seq)
	le.PutUint32(b[20:], h.Packet)
}

// DecodeHeader reads and checks the header at the start of b.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, errShort
	}
	if b[0] != Magic0 || b[1] != Magic1 {
		return Header{}, errMagic
	}
	if b[2] != Version {
		return Header{}, errVersion
	}
	if b[3]&^flagSealed != 0 || b[15] != 0 {
		return Header{}, errReserved
	}
	h := Header{
		Flags:   b[3],
		Token:   le.Uint64(b[4:]),
		Sender:  PeerID(le.Uint16(b[12:])),
		Channel: Channel(b[14]),
		Seq:     le.Uint32(b[16:]),
		Packet:  le.Uint32(b[20:]),
	}
	switch {
	case h.Channel >= numChannels:
		return Header{}, errChannel
	case h.Channel == ChannelControl && (h.Seq != 0 || h.Packet != 0):
		return Header{}, errField
	case h.Channel == ChannelUnreliable && h.Packet != 0:
		return Header{}, errField
	}
	return h, nil
}

// NextRecord splits the first record off a body: its type, its payload
// (aliasing body) and the rest of the body.
func NextRecord(body []byte) (typ uint8, payload, rest []byte, err error) {
	if len(body) < recordHeaderLen {
		return 0, nil, nil, errShort
	}
	n := int(le.Uint16(body[1:]))
	if len(body)-recordHeaderLen < n {
		return 0, nil, nil, errLength
	}
	end := recordHeaderLen + n
	return body[0], body[recordHeaderLen:end], body[end:], nil
}

// appendRecordHeader appends a record header for a payload of n bytes.
func appendRecordHeader(b []byte, typ uint8, n int) []byte {
	return append(b, typ, byte(n), byte(n>>8))
}

// Data is one whole message on a numbered channel.
type Data struct {
	MsgID   uint32
	Payload []byte // aliases the datagram
}

// AppendData appends a Data record.
func AppendData(b []byte, d Data) []byte {
	b = appendRecordHeader(b, RecData, dataFixedLen+len(d.Payload))
	b = le.AppendUint32(b, d.MsgID)
	return append(b, d.Payload...)
}

// DecodeData decodes a Data record's payload.
func DecodeData(p []byte) (Data, error) {
	if len(p) < dataFixedLen {
		return Data{}, errShort
	}
	if len(p)-dataFixedLen > MaxDataPayload {
		return Data{}, ErrOversize
	}
	return Data{MsgID: le.Uint32(p), Payload: p[dataFixedLen:]}, nil
}

// fragment is one piece of a message longer than MaxDataPayload (Q5).
// Every fragment but the last carries exactly fragmentPayload bytes, so a
// fragment's place in the message is Index·fragmentPayload.
type fragment struct {
	MsgID   uint32
	Index   uint16
	Count   uint16
	Payload []byte // aliases the datagram
}

// appendFragment appends a Fragment record.
func appendFragment(b []byte, f fragment) []byte {
	b = appendRecordHeader(b, recFragment, fragFixedLen+len(f.Payload))
	b = le.AppendUint32(b, f.MsgID)
	b = le.AppendUint16(b, f.Index)
	b = le.AppendUint16(b, f.Count)
	return append(b, f.Payload...)
}

// decodeFragment decodes a Fragment record's payload and checks that it
// can belong to a message of at most maxMessage bytes.
func decodeFragment(p []byte) (fragment, error) {
	if len(p) < fragFixedLen {
		return fragment{}, errShort
	}
	f := fragment{
		MsgID:   le.Uint32(p),
		Index:   le.Uint16(p[4:]),
		Count:   le.Uint16(p[6:]),
		Payload: p[fragFixedLen:],
	}
	switch {
	case f.Count > maxFragments:
		return fragment{}, ErrOversize
	case f.Count < 2 || f.Index >= f.Count:
		return fragment{}, errField
	case len(f.Payload) > fragmentPayload:
		return fragment{}, ErrOversize
	case f.Index < f.Count-1 && len(f.Payload) != fragmentPayload:
		return fragment{}, errLength
	case f.Index == f.Count-1 && int(f.Index)*fragmentPayload+len(f.Payload) > maxMessage:
		return fragment{}, ErrOversize
	}
	return f, nil
}

// ack acknowledges packets of one acked channel (reliable or global) by
// their packet numbers (Header.Packet). The explicit packets are those that
// just arrived: each may give a round-trip sample. Cumulative (reliable
// channel only; 0 on global) says every packet before it has arrived: it
// frees retries after a lost ack but gives no sample. One datagram may carry
// several Ack records (T1).
type ack struct {
	Channel    Channel
	Cumulative uint32
	packets    []byte // count × u32, aliases the datagram
}

// Len is the number of explicit packets.
func (a ack) Len() int { return len(a.packets) / 4 }

// Packet returns the i-th explicit packet number.
func (a ack) Packet(i int) uint32 { return le.Uint32(a.packets[4*i:]) }

// appendAck appends an Ack record for the given packets (at most 255 of
// them: the record counts them in one byte).
func appendAck(b []byte, ch Channel, cumulative uint32, packets ...uint32) []byte {
	b = appendRecordHeader(b, RecAck, ackFixedLen+4*len(packets))
	b = append(b, byte(ch), byte(len(packets)))
	b = le.AppendUint32(b, cumulative)
	for _, s := range packets {
		b = le.AppendUint32(b, s)
	}
	return b
}

// appendAck1 is appendAck for one packet without a variadic slice.
func appendAck1(b []byte, ch Channel, cumulative, packet uint32) []byte {
	return appendAckRecord(b, RecAck, ch, cumulative, packet)
}

// appendAckRecord appends an Ack or CarriedAck record (typ) for one packet.
func appendAckRecord(b []byte, typ uint8, ch Channel, cumulative, packet uint32) []byte {
	b = appendRecordHeader(b, typ, ackFixedLen+4)
	b = append(b, byte(ch), 1)
	b = le.AppendUint32(b, cumulative)
	return le.AppendUint32(b, packet)
}

// decodeAck decodes an Ack record's payload.
func decodeAck(p []byte) (ack, error) {
	if len(p) < ackFixedLen {
		return ack{}, errShort
	}
	a := ack{Channel: Channel(p[0]), Cumulative: le.Uint32(p[2:])}
	if a.Channel != ChannelReliable && a.Channel != ChannelGlobal {
		return ack{}, errChannel
	}
	n := int(p[1])
	if len(p) != ackFixedLen+4*n {
		return ack{}, errLength
	}
	a.packets = p[ackFixedLen:]
	return a, nil
}

// LinkReport is a machine's own inbound totals for one link, sent to the
// peer once per ping interval so the peer learns its outbound loss (L4).
type LinkReport struct {
	Expected, Missing uint64
}

// AppendLinkReport appends a LinkReport record.
func AppendLinkReport(b []byte, r LinkReport) []byte {
	b = appendRecordHeader(b, recLinkReport, linkReportLen)
	b = le.AppendUint64(b, r.Expected)
	return le.AppendUint64(b, r.Missing)
}

// decodeLinkReport decodes a LinkReport record's payload.
func decodeLinkReport(p []byte) (LinkReport, error) {
	if len(p) != linkReportLen {
		return LinkReport{}, errLength
	}
	r := LinkReport{Expected: le.Uint64(p), Missing: le.Uint64(p[8:])}
	if r.Missing > r.Expected {
		return LinkReport{}, errField
	}
	return r, nil
}

// keepAlive is a message carried unnumbered on the control channel: a
// keep-alive or a lobby ping, which L2 keeps out of every loss total. When
// WantReply is set the peer answers with a KeepAliveReply echoing ID, and
// until it does the sender counts the peer as silent from the moment it
// sent it (T11).
type keepAlive struct {
	ID        uint32
	WantReply bool
	Payload   []byte // aliases the datagram
}

// keepAliveWantReply is the only flag bit of a KeepAlive; the others are
// reserved and must be zero.
const keepAliveWantReply = 0x01

// appendKeepAlive appends a KeepAlive record. The payload must be at most
// maxKeepAlivePayload bytes (the caller checks).
func appendKeepAlive(b []byte, k keepAlive) []byte {
	b = appendRecordHeader(b, recKeepAlive, keepAliveFixed+len(k.Payload))
	b = le.AppendUint32(b, k.ID)
	var flags byte
	if k.WantReply {
		flags = keepAliveWantReply
	}
	b = append(b, flags)
	return append(b, k.Payload...)
}

// decodeKeepAlive decodes a KeepAlive record's payload.
func decodeKeepAlive(p []byte) (keepAlive, error) {
	if len(p) < keepAliveFixed {
		return keepAlive{}, errShort
	}
	if len(p)-keepAliveFixed > maxKeepAlivePayload {
		return keepAlive{}, ErrOversize
	}
	if p[4]&^keepAliveWantReply != 0 {
		return keepAlive{}, errReserved
	}
	return keepAlive{ID: le.Uint32(p), WantReply: p[4]&keepAliveWantReply != 0, Payload: p[keepAliveFixed:]}, nil
}

// keepAliveReply answers a KeepAlive that wanted one: its ID echoed.
type keepAliveReply struct {
	ID uint32
}

// appendKeepAliveReply appends a KeepAliveReply record.
func appendKeepAliveReply(b []byte, r keepAliveReply) []byte {
	b = appendRecordHeader(b, recKeepAliveReply, keepReplyLen)
	return le.AppendUint32(b, r.ID)
}

// decodeKeepAliveReply decodes a KeepAliveReply record's payload.
func decodeKeepAliveReply(p []byte) (keepAliveReply, error) {
	if len(p) != keepReplyLen {
		return keepAliveReply{}, errLength
	}
	return keepAliveReply{ID: le.Uint32(p)}, nil
}

// Role is what a joining machine asks to be.
type Role uint8

const (
	RolePlayer   Role = 1 // seated, waited for
	RoleObserver Role = 2 // sees everything, never waited for
)

// Handshake records (codec only here; the session logic lives in probe).
// A joiner sends Hello with token 0 and sender PeerUnassigned; the host
// answers Challenge with a cookie bound to the joiner's address; the joiner
// echoes it in Response; the host answers Welcome (with the joiner's ID and
// the session token) or Refuse. Nonce is the joiner's random number, echoed
// in every answer so a joiner can match answers to its attempt.
type (
	Hello struct {
		Nonce uint64
		Role  Role
		Name  string
	}
	Challenge struct {
		Nonce  uint64
		Cookie [CookieLen]byte
	}
	Response struct {
		Nonce  uint64
		Cookie [CookieLen]byte
		Role   Role
		Key    PublicKey // the joiner's identity (seal.go); zero when it does not seal
		Name   string
	}
	Welcome struct {
		Nonce uint64
		Peer  PeerID
		Token uint64
		Key   PublicKey // the host's identity; zero when it does not seal
	}
	Refuse struct {
		Nonce  uint64
		Reason RefuseReason
	}
)

// RefuseReason says why a host refused a joiner. The numbers are stable on
// the wire (S19 applies to the wire too): a reason never changes meaning,
// and a new one takes the next number. A decoded Refuse keeps numbers it
// does not know.
type RefuseReason uint8

const (
	RefuseFull       RefuseReason = 1 // no seat left
	RefuseStarted    RefuseReason = 2 // game running, players cannot join
	RefuseBadCookie  RefuseReason = 3 // challenge not answered correctly
	refuseBadVersion RefuseReason = 4 // reserved: the header version already differs
	RefuseNameTaken  RefuseReason = 5 // another machine in the session has that name
	RefuseBadName    RefuseReason = 6 // empty, too long, or not printable
	RefuseNeedKey    RefuseReason = 7 // the session is keyed: join with its code (--key); sent plain
)

func appendName(b []byte, name string) []byte {
	b = append(b, byte(len(name)))
	return append(b, name...)
}

func decodeName(p []byte) (string, error) {
	if len(p) < 1 {
		return "", errShort
	}
	n := int(p[0])
	if n > MaxNameLen {
		return "", ErrOversize
	}
	if len(p) != 1+n {
		return "", errLength
	}
	name := p[1:]
	if !utf8.Valid(name) {
		return "", errField
	}
	return string(name), nil
}

func validRole(r Role) bool { return r == RolePlayer || r == RoleObserver }

// AppendHello appends a Hello record. The name is cut to MaxNameLen bytes
// by the caller's choice; an over-long name is an encoding error.
func AppendHello(b []byte, m Hello) ([]byte, error) {
	if len(m.Name) > MaxNameLen || !utf8.ValidString(m.Name) || !validRole(m.Role) {
		return b, errField
	}
	b = appendRecordHeader(b, recHello, 10+len(m.Name))
	b = le.AppendUint64(b, m.Nonce)
	b = append(b, byte(m.Role))
	return appendName(b, m.Name), nil
}

// decodeHello decodes a Hello record's payload.
func decodeHello(p []byte) (Hello, error) {
	if len(p) < 10 {
		return Hello{}, errShort
	}
	m := Hello{Nonce: le.Uint64(p), Role: Role(p[8])}
	if !validRole(m.Role) {
		return Hello{}, errField
	}
	var err error
	if m.Name, err = decodeName(p[9:]); err != nil {
		return Hello{}, err
	}
	return m, nil
}

// appendChallenge appends a Challenge record.
func appendChallenge(b []byte, m Challenge) []byte {
	b = appendRecordHeader(b, recChallenge, 8+CookieLen)
	b = le.AppendUint64(b, m.Nonce)
	return append(b, m.Cookie[:]...)
}

// decodeChallenge decodes a Challenge record's payload.
func decodeChallenge(p []byte) (Challenge, error) {
	if len(p) != 8+CookieLen {
		return Challenge{}, errLength
	}
	m := Challenge{Nonce: le.Uint64(p)}
	copy(m.Cookie[:], p[8:])
	return m, nil
}

// AppendResponse appends a Response record.
func AppendResponse(b []byte, m Response) ([]byte, error) {
	if len(m.Name) > MaxNameLen || !utf8.ValidString(m.Name) || !validRole(m.Role) {
		return b, errField
	}
	b = appendRecordHeader(b, recResponse, 8+CookieLen+1+len(m.Key)+1+len(m.Name))
	b = le.AppendUint64(b, m.Nonce)
	b = append(b, m.Cookie[:]...)
	b = append(b, byte(m.Role))
	b = append(b, m.Key[:]...)
	return appendName(b, m.Name), nil
}

// decodeResponse decodes a Response record's payload.
func decodeResponse(p []byte) (Response, error) {
	const keyAt = 8 + CookieLen + 1
	if len(p) < keyAt+len(PublicKey{})+1 {
		return Response{}, errShort
	}
	m := Response{Nonce: le.Uint64(p), Role: Role(p[8+CookieLen])}
	copy(m.Cookie[:], p[8:])
	copy(m.Key[:], p[keyAt:])
	if !validRole(m.Role) {
		return Response{}, errField
	}
	var err error
	if m.Name, err = decodeName(p[keyAt+len(m.Key):]); err != nil {
		return Response{}, err
	}
	return m, nil
}

// appendWelcome appends a Welcome record.
func appendWelcome(b []byte, m Welcome) []byte {
	b = appendRecordHeader(b, recWelcome, welcomeLen)
	b = le.AppendUint64(b, m.Nonce)
	b = le.AppendUint16(b, uint16(m.Peer))
	b = le.AppendUint64(b, m.Token)
	return append(b, m.Key[:]...)
}

// welcomeLen is a Welcome record's payload: nonce, PeerID, token, key.
const welcomeLen = 8 + 2 + 8 + len(PublicKey{})

// decodeWelcome decodes a Welcome record's payload.
func decodeWelcome(p []byte) (Welcome, error) {
	if len(p) != welcomeLen {
		return Welcome{}, errLength
	}
	m := Welcome{Nonce: le.Uint64(p), Peer: PeerID(le.Uint16(p[8:])), Token: le.Uint64(p[10:])}
	copy(m.Key[:], p[18:])
	if m.Peer == PeerUnassigned || m.Token == 0 {
		return Welcome{}, errField
	}
	return m, nil
}

// AppendRefuse appends a Refuse record.
func AppendRefuse(b []byte, m Refuse) []byte {
	b = appendRecordHeader(b, recRefuse, 9)
	b = le.AppendUint64(b, m.Nonce)
	return append(b, byte(m.Reason))
}

// decodeRefuse decodes a Refuse record's payload. An unknown reason is kept
// as is: a newer host may know more reasons than we do.
func decodeRefuse(p []byte) (Refuse, error) {
	if len(p) != 9 {
		return Refuse{}, errLength
	}
	return Refuse{Nonce: le.Uint64(p), Reason: RefuseReason(p[8])}, nil
}
