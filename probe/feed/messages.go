package feed

import (
	"encoding/json"
	"fmt"
	"github.com/lagscope/lagscope/vocab"
	"math"
	"strconv"
	"strings"
	"time"

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
	// MessageNote is every other line: lobby news, demo notes.
	MessageNote MessageKind = iota
	// MessageLinkBad: a packet to Subject outlived the connection
	// timeout (T11). An alarm.
	MessageLinkBad
	// MessageLinkRecovered: the link to Subject is no longer bad.
	MessageLinkRecovered
	// MessageDesync: Subject's checksum differs from ours. An alarm.
	MessageDesync
	// MessageTier: the connection quality target changed (S18); Subject
	// is the new tier's name.
	MessageTier
	// MessageLinkLoss: the link to Subject lost more than the alert
	// threshold over the alert window, one way or both (alerts.go). An
	// alarm.
	MessageLinkLoss
)

// Alarm reports whether the line is one a user must not miss.
func (k MessageKind) Alarm() bool {
	return k == MessageLinkBad || k == MessageDesync || k == MessageLinkLoss
}

const (
	linkPrefix = "Connection to "
	badSuffix  = " has gone bad"
	okSuffix   = " recovered"
	lossInfix  = " is losing packets: "
	// oldLossInfix is the loss line's wording in recordings made before
	// it said packets: read back as the same kind.
	oldLossInfix = " is losing datagrams: "
	desyncPrefix = "Desync with "
	desyncInfix  = " at frame "
	tierPrefix   = "Connection quality target: "
)

// LinkMessage: the link from self to peer went bad or recovered (T11).
func LinkMessage(frame int, self, peer string, bad bool) *MessageEvent {
	e := &MessageEvent{Header: Header{Type: vocab.EventMessage, Frame: frame}, Text: linkPrefix + peer + okSuffix, Player: self,
		Kind: MessageLinkRecovered, Subject: peer}
	if bad {
		e.Text, e.Kind = linkPrefix+peer+badSuffix, MessageLinkBad
	}
	return e
}

// DesyncMessage: self found peer's checksum of frame f different.
func DesyncMessage(frame int, self, peer string, f int) *MessageEvent {
	return &MessageEvent{Header: Header{Type: vocab.EventMessage, Frame: frame}, Text: fmt.Sprintf("%s%s%s%d", desyncPrefix, peer, desyncInfix, f),
		Player: self, Kind: MessageDesync, Subject: peer}
}

// TierMessage: the master's timing moved the quality target to another
// tier (S18); nil when the tier stays.
func TierMessage(prev, next rungs.Timing) *MessageEvent {
	msg, ok := rungs.TierMessage(prev, next)
	if !ok {
		return nil
	}
	return &MessageEvent{Header: Header{Type: vocab.EventMessage}, Text: msg, Kind: MessageTier, Subject: next.Tier().String()}
}

// LinkBadText is the alert's words for a link to peer gone bad (T11).
func LinkBadText(peer string) string { return linkPrefix + peer + badSuffix }

// LossMessage: the link from self to peer lost more than the alert
// threshold; text is LossText's.
func LossMessage(frame int, self, peer, text string) *MessageEvent {
	return &MessageEvent{Header: Header{Type: vocab.EventMessage, Frame: frame}, Text: text, Player: self,
		Kind: MessageLinkLoss, Subject: peer}
}

// LossText words a loss alert; in or out is -1 when that way was not
// judged. kindOf reads it back (lossInfix).
func LossText(peer string, in, out float64, window time.Duration) string {
	var b strings.Builder
	b.WriteString(linkPrefix + peer + lossInfix)
	sep := ""
	for _, d := range []struct {
		v   float64
		dir string
	}{{in, " from "}, {out, " to "}} {
		if d.v < 0 {
			continue
		}
		b.WriteString(sep)
		// Rounded up: a loss just past 5 % must not read "5.0%".
		b.WriteString(strconv.FormatFloat(math.Ceil(1000*d.v)/10, 'f', 1, 64))
		b.WriteString("%" + d.dir + peer)
		sep = ", "
	}
	b.WriteString(" in the last " + window.String())
	return b.String()
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
		return MessageNote, ""
	}
	if rest, ok := strings.CutPrefix(text, linkPrefix); ok {
		if peer, ok := strings.CutSuffix(rest, badSuffix); ok && peer != "" {
			return MessageLinkBad, peer
		}
		if peer, ok := strings.CutSuffix(rest, okSuffix); ok && peer != "" {
			return MessageLinkRecovered, peer
		}
		for _, infix := range [...]string{lossInfix, oldLossInfix} {
			if peer, _, ok := strings.Cut(rest, infix); ok && peer != "" {
				return MessageLinkLoss, peer
			}
		}
	}
	if rest, ok := strings.CutPrefix(text, desyncPrefix); ok {
		if i := strings.LastIndex(rest, desyncInfix); i > 0 {
			if _, err := strconv.ParseUint(rest[i+len(desyncInfix):], 10, 31); err == nil {
				return MessageDesync, rest[:i]
			}
		}
	}
	return MessageNote, ""
}
