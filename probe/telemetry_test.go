package probe

import (
	"bytes"
	"testing"

	"github.com/lagscope/lagscope/probe/snapshot"
)

// A telemetry message is its kind, the ack of the other direction's stream
// and a snapshot update, which comes back untouched (Q2).
func TestTelemetryMessageRoundTrip_Q2(t *testing.T) {
	snd := snapshot.NewTelemetrySender()
	var tel snapshot.Telemetry
	tel.Frame = 300
	tel.SetLinks([]snapshot.Link{{Peer: 2, State: 2, Estimate: 2, SRTTUs: 41_000, RTTVARUs: 3000, RTOUs: 100_000, ConnTimeoutUs: 2_000_000, LossKnown: true, Sent: 10, Expected: 12}})
	update := snd.Encode(nil, 2, &tel)
	msg := snd.Encode(appendTelemetryHead(nil, 77), 3, &tel)
	ack, got, err := decodeTelemetry(msg)
	if err != nil || ack != 77 || !bytes.Equal(got, update) {
		t.Fatalf("decode: ack %d err %v\n got %x\nwant %x", ack, err, got, update)
	}
	rcv := snapshot.NewTelemetryReceiver()
	st, fresh, err := rcv.Decode(got)
	if err != nil || !fresh || st.Frame != 300 || st.Links[0].SRTTUs != 41_000 {
		t.Fatalf("snapshot: fresh %v err %v %+v", fresh, err, st)
	}
	a := appendTelemetryAck(nil, 9)
	if v, err := decodeTelemetryAck(a); err != nil || v != 9 || len(a) != telemetryAckLen {
		t.Fatalf("ack: %d %v (%d bytes)", v, err, len(a))
	}
}

// Every truncation, a wrong kind and an ack of nothing are errors, never
// panics.
func TestTelemetryMessageRejectsBadInput(t *testing.T) {
	var tel snapshot.Telemetry
	msg := snapshot.NewTelemetrySender().Encode(appendTelemetryHead(nil, 1), 2, &tel)
	for n := 0; n < telemetryHead+snapshot.HeaderLen; n++ {
		if _, _, err := decodeTelemetry(msg[:n]); err == nil {
			t.Fatalf("telemetry cut at %d decoded", n)
		}
	}
	bad := bytes.Clone(msg)
	bad[0] = kindFrame
	if _, _, err := decodeTelemetry(bad); err == nil {
		t.Fatal("a frame packet's kind decoded as telemetry")
	}
	for _, b := range [][]byte{nil, {kindTelemetryAck}, {kindTelemetryAck, 1, 0, 0}, {kindTelemetryAck, 1, 0, 0, 0, 0},
		{kindTelemetry, 1, 0, 0, 0}, appendTelemetryAck(nil, 0)} {
		if _, err := decodeTelemetryAck(b); err == nil {
			t.Fatalf("ack %x decoded", b)
		}
	}
}

// FuzzTelemetryMessages: whatever arrives as a telemetry message or ack,
// the decoders return an error or a value, never panic; a telemetry
// message that decodes has its head and update back in the same bytes, and
// a receiver either applies its update or refuses it with nothing changed.
func FuzzTelemetryMessages(f *testing.F) {
	snd := snapshot.NewTelemetrySender()
	var tel snapshot.Telemetry
	tel.Frame = 12
	tel.SetLinks([]snapshot.Link{{Peer: 2, State: 2, Estimate: 2, SRTTUs: 41_000, LossKnown: true, Expected: 3}})
	f.Add(snd.Encode(appendTelemetryHead(nil, 0), 2, &tel))
	snd.Acked(2, 1)
	tel.Frame = 14
	f.Add(snd.Encode(appendTelemetryHead(nil, 5), 2, &tel))
	f.Add(appendTelemetryAck(nil, 3))
	f.Add([]byte{kindTelemetry, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{kindFrame})
	f.Fuzz(func(t *testing.T, b []byte) {
		if ack, err := decodeTelemetryAck(b); err == nil && (ack == 0 || !bytes.Equal(appendTelemetryAck(nil, ack), b)) {
			t.Fatalf("ack %d from %x", ack, b)
		}
		ack, update, err := decodeTelemetry(b)
		if err != nil {
			return
		}
		if !bytes.Equal(append(appendTelemetryHead(nil, ack), update...), b) {
			t.Fatalf("telemetry %x does not re-encode", b)
		}
		rcv := snapshot.NewTelemetryReceiver()
		if _, _, err := rcv.Decode(update); err != nil {
			if _, ok := rcv.State(); ok || rcv.Ack() != 0 {
				t.Fatal("a refused update changed the receiver")
			}
		}
	})
}
