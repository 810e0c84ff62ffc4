package loadtest

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// examples are one message of each kind and its bytes as docs/load-test.md
// shows them.
var examples = []struct {
	m   message
	hex string
}{
	{message{kind: kindRequest, id: 0x04030201, version: 1, rate: 50_000_000}, "30 01020304 01 80f0fa0200000000"},
	{message{kind: kindAnswer, id: 0x04030201, rate: 20_000_000}, "31 01020304 00 002d310100000000"},
	{message{kind: kindAnswer, id: 0x04030201, reason: stopBusy}, "31 01020304 02 0000000000000000"},
	{message{kind: kindReport, id: 0x04030201, phase: phaseUpHold, elapsed: 1_000_000, bytes: 1_336_000, count: 1000, highest: 1002},
		"33 01020304 03 40420f00 c0621400 00000000 e8030000 ea030000"},
	{message{kind: kindPace, id: 0x04030201, phase: phaseDownRamp, rate: 1_000_000, size: 1336, nonce: 0x12345678},
		"34 01020304 04 40420f0000000000 3805 78563412"},
	{message{kind: kindProbe, id: 0x04030201, seq: 7, stamp: 2_000_000}, "35 01020304 07000000 80841e00 00000000"},
	{message{kind: kindEcho, id: 0x04030201, seq: 7, stamp: 2_000_000, nonce: 0x12345678}, "36 01020304 07000000 80841e00 78563412"},
	{message{kind: kindStop, id: 0x04030201, reason: stopCancelled}, "37 01020304 04"},
	// Load: the hex is the head; zeros pad the datagram to its size.
	{message{kind: kindLoad, id: 0x04030201, phase: phaseUpRamp, seq: 1, stamp: 2_250_000, size: minLoad}, "32 01020304 02 01000000 10552200 00000000"},
	{message{kind: kindLoad, id: 0x04030201, phase: phaseDownHold, seq: 9, stamp: 12_000_000, nonce: 0x12345678, size: maxMessage},
		"32 01020304 05 09000000 001bb700 78563412"},
}

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleBytes is an example's whole message: its hex, padded with zeros
// to its size for a load datagram.
func exampleBytes(t *testing.T, m message, hex string) []byte {
	b := unhex(t, hex)
	if m.kind == kindLoad {
		b = append(b, make([]byte, int(m.size)-len(b))...)
	}
	return b
}

func TestMessageBytes(t *testing.T) {
	for _, ex := range examples {
		want := exampleBytes(t, ex.m, ex.hex)
		got := appendMessage(nil, ex.m)
		if !bytes.Equal(got, want) {
			t.Errorf("kind %#x encodes to % x, want % x", ex.m.kind, got, want)
		}
		if n := fixedLen(ex.m.kind); n != 0 && len(got) != n {
			t.Errorf("kind %#x is %d bytes, its length is %d", ex.m.kind, len(got), n)
		}
		m, err := decode(want)
		if err != nil {
			t.Errorf("kind %#x: %v", ex.m.kind, err)
			continue
		}
		if m != ex.m {
			t.Errorf("kind %#x decodes to %+v, want %+v", ex.m.kind, m, ex.m)
		}
	}
}

// Every message fits a 1400-byte datagram with its carrier (Q5), and a
// load datagram is padded to the size asked for.
func TestMessageSizes_Q5(t *testing.T) {
	if maxMessage+carrierOverhead != 1400 {
		t.Fatalf("the largest load datagram is %d bytes on the path, want 1400", maxMessage+carrierOverhead)
	}
	for _, size := range []uint16{0, loadHead, 600, minLoad, 1200, maxMessage, maxMessage + 100} {
		b := appendMessage(nil, message{kind: kindLoad, phase: phaseBoth, size: size})
		want := min(max(int(size), minLoad), maxMessage)
		if len(b) != want {
			t.Errorf("load of size %d is %d bytes, want %d", size, len(b), want)
		}
		if m, err := decode(b); err != nil || int(m.size) != want {
			t.Errorf("load of size %d decodes to %+v, %v", size, m, err)
		}
	}
	// A reply is never larger than what asked for it.
	if answerLen > requestLen || probeLen != len(appendMessage(nil, message{kind: kindEcho})) {
		t.Error("an answer or an echo is larger than what drew it")
	}
}

func TestDecodeRejects(t *testing.T) {
	good := func(kind byte) []byte {
		for _, ex := range examples {
			if ex.m.kind == kind {
				return exampleBytes(t, ex.m, ex.hex)
			}
		}
		t.Fatalf("no example of kind %#x", kind)
		return nil
	}
	with := func(b []byte, at int, v byte) []byte {
		b = append([]byte(nil), b...)
		b[at] = v
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, errShort},
		{"head only", []byte{kindStop, 1, 2, 3}, errShort},
		{"unknown kind", []byte{0x38, 1, 2, 3, 4, 0}, errKind},
		{"trace probe kind", []byte{0x25, 6, 0, 1, 2, 3, 4, 0, 0}, errKind},
		{"stop too long", append(good(kindStop), 0), errLength},
		{"request cut", good(kindRequest)[:requestLen-1], errLength},
		{"request version 0", with(good(kindRequest), 5, 0), errVersion},
		{"request cap 0", append(good(kindRequest)[:6], 0, 0, 0, 0, 0, 0, 0, 0), errRate},
		{"accept without a cap", append(good(kindAnswer)[:6], 0, 0, 0, 0, 0, 0, 0, 0), errRate},
		{"refusal with a cap", with(good(kindAnswer), 5, byte(stopRefused)), errRate},
		{"answer cancelled", with(good(kindAnswer), 5, byte(stopCancelled)), errReason},
		{"stop reason 6", with(good(kindStop), 5, byte(numReasons)), errReason},
		{"load cut", good(kindLoad)[:4], errShort},
		{"load of 14 bytes", good(kindLoad)[:14], errSize},
		{"load of the head alone", good(kindLoad)[:loadHead], errSize},
		{"load a byte under the minimum", good(kindLoad)[:minLoad-1], errSize},
		{"probe with a nonce", with(good(kindProbe), 13, 1), errNonce},
		{"load in idle", with(good(kindLoad), 5, byte(phaseIdle)), errPhase},
		{"load in phase 7", with(good(kindLoad), 5, byte(phaseDone)), errPhase},
		{"report of a download phase", with(good(kindReport), 5, byte(phaseDownHold)), errPhase},
		{"pace of an upload phase", with(good(kindPace), 5, byte(phaseUpHold)), errPhase},
		{"pace size 14", with(with(good(kindPace), 14, 14), 15, 0), errSize},
		{"pace size under the minimum", with(with(good(kindPace), 14, 0xe7), 15, 3), errSize},
		{"pace of the old length", good(kindPace)[:16], errLength},
		{"pace size too large", with(with(good(kindPace), 14, 0x39), 15, 5), errSize},
	} {
		if _, err := decode(tc.b); err != tc.want {
			t.Errorf("%s (% x): error %v, want %v", tc.name, tc.b, err, tc.want)
		}
	}
	long := append(appendMessage(nil, message{kind: kindLoad, phase: phaseUpRamp, size: maxMessage}), 0)
	if _, err := decode(long); err != errLength {
		t.Errorf("a load datagram of %d bytes: %v, want %v", len(long), err, errLength)
	}
}

func TestDecodeAllocatesNothing(t *testing.T) {
	bad := []byte{0x38, 1, 2, 3, 4, 0}
	load := appendMessage(nil, message{kind: kindLoad, phase: phaseUpHold, size: maxMessage})
	if n := testing.AllocsPerRun(100, func() {
		_, _ = decode(bad)
		_, _ = decode(load)
		_, _ = Check(load)
	}); n != 0 {
		t.Errorf("decode allocates %v times", n)
	}
}
