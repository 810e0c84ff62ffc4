package probe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lagscope/lagscope/rungs"
)

// MessageKind says what a message line is about, so a front end reacts to
// an alarm without reading its text. The NDJSON line has no field for it
// (the contract fixes the message object), so a message read back from
// bytes — a recording, a replay — gets its kind from the exact wording the
// peer writes here (UnmarshalJSON): one place writes the words, one place
// reads them.
type MessageKind uint8

const (
	// messageNote is every other line: lobby news, demo notes.
	messageNote MessageKind = iota
	// MessageLinkBad: a packet to Subject outlived the connection
	// timeout (T11). An alarm.
	MessageLinkBad
	// messageLinkRecovered: the link to Subject is no longer bad.
	messageLinkRecovered
	// messageDesync: Subject's checksum differs from ours. An alarm.
	messageDesync
	// MessageTier: the connection quality target changed (S18); Subject
	// is the new tier's name.
	MessageTier
	// messageLinkLoss: the link to Subject lost more than the alert
	// threshold over the alert window, one way or both (alerts.go). An
	// alarm.
	messageLinkLoss
)

// Alarm reports whether the line is one a user must not miss.
func (k MessageKind) Alarm() bool {
	return k == MessageLinkBad || k == messageDesync || k == messageLinkLoss
}

const (
	linkPrefix   = "Connection to "
	badSuffix    = " has gone bad"
	okSuffix     = " recovered"
	lossInfix    = " is losing datagrams: "
	desyncPrefix = "Desync with "
	desyncInfix  = " at frame "
	tierPrefix   = "Connection quality target: "
)

// linkMessage: the link from self to peer went bad or recovered (T11).
func linkMessage(frame int, self, peer string, bad bool) *MessageEvent {
	e := &MessageEvent{Header: Header{Type: "message", Frame: frame}, Text: linkPrefix + peer + okSuffix, Player: self,
		Kind: messageLinkRecovered, Subject: peer}
	if bad {
		e.Text, e.Kind = linkPrefix+peer+badSuffix, MessageLinkBad
	}
	return e
}

// desyncMessage: self found peer's checksum of frame f different.
func desyncMessage(frame int, self, peer string, f int) *MessageEvent {
	return &MessageEvent{Header: Header{Type: "message", Frame: frame}, Text: fmt.Sprintf("%s%s%s%d", desyncPrefix, peer, desyncInfix, f),
		Player: self, Kind: messageDesync, Subject: peer}
}

// tierMessage: the master's timing moved the quality target to another
// tier (S18); nil when the tier stays.
func tierMessage(prev, next rungs.Timing) *MessageEvent {
	msg, ok := rungs.TierMessage(prev, next)
	if !ok {
		return nil
	}
	return &MessageEvent{Header: Header{Type: "message"}, Text: msg, Kind: MessageTier, Subject: next.Tier().String()}
}

// UnmarshalJSON reads the message object and recovers its kind from the
// wording above; any other text is a note.
func (e *MessageEvent) UnmarshalJSON(b []byte) error {
	type plain MessageEvent // without this method
	var x plain
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*e = MessageEvent(x)
	e.Kind, e.Subject = kindOf(e.Text, e.Player != "")
	return nil
}

// kindOf parses a message's text; own is whether one machine published it
// (link and desync lines are; tier lines are network events, S7).
func kindOf(text string, own bool) (MessageKind, string) {
	if !own {
		if t, ok := strings.CutPrefix(text, tierPrefix); ok && t != "" {
			return MessageTier, t
		}
		return messageNote, ""
	}
	if rest, ok := strings.CutPrefix(text, linkPrefix); ok {
		if peer, ok := strings.CutSuffix(rest, badSuffix); ok && peer != "" {
			return MessageLinkBad, peer
		}
		if peer, ok := strings.CutSuffix(rest, okSuffix); ok && peer != "" {
			return messageLinkRecovered, peer
		}
		if peer, _, ok := strings.Cut(rest, lossInfix); ok && peer != "" {
			return messageLinkLoss, peer
		}
	}
	if rest, ok := strings.CutPrefix(text, desyncPrefix); ok {
		if i := strings.LastIndex(rest, desyncInfix); i > 0 {
			if _, err := strconv.ParseUint(rest[i+len(desyncInfix):], 10, 31); err == nil {
				return messageDesync, rest[:i]
			}
		}
	}
	return messageNote, ""
}
