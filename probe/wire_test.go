package probe

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lagscope/lagscope/probe/feed"
)

func TestFramePacketRoundTrip(t *testing.T) {
	in := framePacket{Kind: kindFrame, Frame: 120, Through: 126, RelCount: 7, CkFrame: 119, Ck: 0xdeadbeef,
		Commands: []feed.Command{
			{Tag: 126, Seq: 3, Type: feed.CmdGame, Payload: []byte{1, 2, 3}},
			{Tag: 126, Seq: 4, Type: feed.CmdNetworkReport, Payload: reportPayload{RTTMicros: noRTT, WaitMicros: 5, ProcessMicros: 6}.bytes()},
		}}
	b := in.appendTo(nil)
	out, err := decodeFramePacket(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}
	st := framePacket{Kind: kindStatus, Frame: 9, Through: 14, Holds: []hold{{Player: 2, Through: 11}, {Player: 3, Through: 12}}}
	out, err = decodeFramePacket(st.appendTo(nil))
	if err != nil || !reflect.DeepEqual(st, out) {
		t.Fatalf("status round trip: %v %+v", err, out)
	}
}

// Every truncation of a valid packet is an error, never a panic.
func TestFramePacketTruncated(t *testing.T) {
	in := framePacket{Kind: kindFrame, Frame: 1, Through: 7, Commands: []feed.Command{{Tag: 7, Type: feed.CmdGame, Payload: []byte("xyz")}}}
	b := in.appendTo(nil)
	for n := 0; n < len(b); n++ {
		if _, err := decodeFramePacket(b[:n]); err == nil {
			t.Fatalf("truncated at %d decoded", n)
		}
	}
}

// The event payload decoders (S19) reject every wrong size and range.
func TestEventPayloadsRejectBadInput_S19(t *testing.T) {
	if _, err := decodeTiming(timingPayload{SendPeriod: 11, LookAhead: 6, FPS: 30}.bytes()); err == nil {
		t.Fatal("send period 11 accepted")
	}
	if _, err := decodeTiming(timingPayload{SendPeriod: 2, LookAhead: 6, FPS: 0}.bytes()); err == nil {
		t.Fatal("fps 0 accepted")
	}
	tp := timingPayload{Decided: 64, SendPeriod: 6, LookAhead: 18, FPS: 30, Reason: 1}
	if got, err := decodeTiming(tp.bytes()); err != nil || got != tp {
		t.Fatalf("timing round trip %v %+v", err, got)
	}
	if _, err := decodeReport(make([]byte, 11)); err == nil {
		t.Fatal("short report accepted")
	}
	if _, err := decodeRemove(make([]byte, 5)); err == nil {
		t.Fatal("short removal accepted")
	}
	if _, err := decodeSpeed([]byte{0, 0}); err == nil {
		t.Fatal("speed 0 accepted")
	}
}

func FuzzDecodeFramePacket(f *testing.F) {
	a := framePacket{Kind: kindFrame, Frame: 4, Through: 10, Commands: []feed.Command{{Tag: 10, Type: feed.CmdGame, Payload: []byte{9}}}}
	s := framePacket{Kind: kindStatus, Frame: 4, Through: 10, Holds: []hold{{1, 5}}}
	f.Add(a.appendTo(nil))
	f.Add(s.appendTo(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeFramePacket(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := p.appendTo(nil); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, again)
		}
		for _, c := range p.Commands {
			switch c.Type {
			case feed.CmdNetworkReport:
				_, _ = decodeReport(c.Payload)
			case cmdTiming:
				_, _ = decodeTiming(c.Payload)
			case cmdRemove:
				_, _ = decodeRemove(c.Payload)
			case cmdGameSpeed:
				_, _ = decodeSpeed(c.Payload)
			}
		}
	})
}
