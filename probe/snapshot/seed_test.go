package snapshot

import (
	"fmt"
	"strings"
	"testing"
)

// The worked example of Quake 3's full and partial updates: client 2's state is four fields pos[X], pos[Y], pos[Z], health, each
// 32 bits, sent to client 1.
type seedState struct{ X, Y, Z, Health uint32 }

func seedTable(t testing.TB) *fieldTable[seedState] {
	t.Helper()
	tb, err := newTable(
		field[seedState]{Name: "pos[X]", Bits: 32, Get: func(s *seedState) uint32 { return s.X }, Set: func(s *seedState, v uint32) { s.X = v }},
		field[seedState]{Name: "pos[Y]", Bits: 32, Get: func(s *seedState) uint32 { return s.Y }, Set: func(s *seedState, v uint32) { s.Y = v }},
		field[seedState]{Name: "pos[Z]", Bits: 32, Get: func(s *seedState) uint32 { return s.Z }, Set: func(s *seedState, v uint32) { s.Z = v }},
		field[seedState]{Name: "health", Bits: 32, Get: func(s *seedState) uint32 { return s.Health }, Set: func(s *seedState, v uint32) { s.Health = v }},
	)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// Distinct bit patterns, so a field written in the wrong place shows.
const (
	valA = 0xA1A2A3A4
	valB = 0xB1B2B3B4
	valC = 0xC1C2C3C4
	valD = 0xD1D2D3D4
	valE = 0xE1E2E3E4
	valH = 0x00000064 // health 100
)

// bits renders the expected stream: "1" and "0" stay, a value becomes its
// 32 bits, most significant first.
func bits(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case uint32:
			fmt.Fprintf(&b, "%032b", v)
		case int:
			fmt.Fprintf(&b, "%032b", uint32(v))
		}
	}
	return b.String()
}

// update is one decoded header plus the payload as a string of bits.
type update struct {
	seq, back uint32
	payload   string
}

func parse(t *testing.T, msg []byte) update {
	t.Helper()
	if len(msg) < HeaderLen {
		t.Fatalf("update %x shorter than its header", msg)
	}
	var b strings.Builder
	for _, c := range msg[HeaderLen:] {
		fmt.Fprintf(&b, "%08b", c)
	}
	return update{seq: uint32(msg[0]) | uint32(msg[1])<<8 | uint32(msg[2])<<16 | uint32(msg[3])<<24, back: uint32(msg[4]), payload: b.String()}
}

// checkPayload asserts the stream is exactly want, padded with zeros to a
// whole byte, and that the encoder counted exactly len(want) bits.
func checkPayload(t *testing.T, tb *fieldTable[seedState], base, cur seedState, got update, want string) {
	t.Helper()
	var bv, cv [4]uint32
	tb.load(&base, bv[:])
	tb.load(&cur, cv[:])
	var w bitWriter
	tb.encode(&w, bv[:], cv[:])
	if w.bits != len(want) {
		t.Errorf("encoder wrote %d bits, want %d", w.bits, len(want))
	}
	pad := (8 - len(want)%8) % 8
	if full := want + strings.Repeat("0", pad); got.payload != full {
		t.Errorf("payload\n got %s\nwant %s", got.payload, full)
	}
}

func TestSeedWorkedExample_Q2_Q3_Q4(t *testing.T) {
	tb := seedTable(t)
	const client1 = 1
	server := newSender(tb)
	client := newReceiver(tb)
	var zero seedState

	// First server frame: nothing acked, so the delta is against the
	// all-zero dummy snapshot: a full update of 4×(1+32) = 132 bits.
	master := seedState{X: valA, Y: valB, Z: valC, Health: valD}
	snap1 := master
	m1 := server.encode(nil, client1, &master)
	u1 := parse(t, m1)
	if u1.seq != 1 || u1.back != 0 {
		t.Fatalf("first update seq %d back %d, want 1 against the baseline (0)", u1.seq, u1.back)
	}
	checkPayload(t, tb, zero, master, u1, bits("1", valA, "1", valB, "1", valC, "1", valD))
	if len(m1) != HeaderLen+17 {
		t.Errorf("full update is %d bytes, want %d header + 17 (132 bits)", len(m1), HeaderLen)
	}
	st, fresh, err := client.Decode(m1)
	if err != nil || !fresh || *st != master {
		t.Fatalf("client decodes %+v fresh=%v err=%v, want %+v", st, fresh, err, master)
	}
	server.Acked(client1, client.Ack()) // snapshot 1 acked

	// Second frame: client 2 moves along Y; pos[1] = E. Snapshot 1 is
	// acked, so only pos[1] travels: [0 1 E 0 0] = 36 bits.
	master.Y = valE
	m2 := server.encode(nil, client1, &master)
	u2 := parse(t, m2)
	if u2.seq != 2 || u2.back != 1 {
		t.Fatalf("second update seq %d back %d, want 2 against 1", u2.seq, u2.back)
	}
	checkPayload(t, tb, snap1, master, u2, bits("0", "1", valE, "0", "0"))
	// The update (or its ack) is lost: client 1 never applies it.

	// Third frame: client 2 loses health; health = H. No ack for 2, so
	// the server compares snapshot 3 with snapshot 1 and sends both the
	// earlier change and the new one: [0 1 E 0 1 H] = 68 bits.
	master.Health = valH
	m3 := server.encode(nil, client1, &master)
	u3 := parse(t, m3)
	if u3.seq != 3 || u3.back != 2 {
		t.Fatalf("third update seq %d back %d, want 3 against 1 (2 back)", u3.seq, u3.back)
	}
	checkPayload(t, tb, snap1, master, u3, bits("0", "1", valE, "0", "1", valH))
	st, fresh, err = client.Decode(m3)
	if err != nil || !fresh || *st != master {
		t.Fatalf("client decodes %+v fresh=%v err=%v, want %+v: the delta must carry the lost change", st, fresh, err, master)
	}
	// The lost update arriving late changes nothing.
	if st, fresh, err = client.Decode(m2); err != nil || fresh || *st != master {
		t.Errorf("late update 2: state %+v fresh=%v err=%v, want %+v unchanged", st, fresh, err, master)
	}
	// Client 1's ack for 3 is lost too; acks for 1 may still be repeated.
	server.Acked(client1, 1)

	// Snapshot 1 too old: the ring holds 32 snapshots, the one being sent
	// among them, so a base can be at most 31 updates back. Update 33
	// would overwrite snapshot 1's slot: the server falls back to the
	// dummy snapshot and sends a full update again.
	var m []byte
	for seq := uint32(4); seq <= ringLen; seq++ {
		m = server.encode(m[:0], client1, &master)
		if u := parse(t, m); u.back != seq-1 {
			t.Fatalf("update %d: back %d, want %d (still against snapshot 1)", seq, u.back, seq-1)
		}
	}
	m = server.encode(m[:0], client1, &master)
	u := parse(t, m)
	if u.seq != 1+ringLen || u.back != 0 {
		t.Fatalf("update %d back %d, want %d as a full update (back 0)", u.seq, u.back, 1+ringLen)
	}
	checkPayload(t, tb, zero, master, u, bits("1", valA, "1", valE, "1", valC, "1", valH))
	if st, fresh, err = client.Decode(m); err != nil || !fresh || *st != master {
		t.Errorf("client decodes the full update to %+v fresh=%v err=%v", st, fresh, err)
	}
}

// A delta against a base the receiver does not hold is dropped, not
// misapplied (Q2: the update names its base).
func TestDeltaWithoutItsBaseIsDropped_Q2(t *testing.T) {
	tb := seedTable(t)
	s, r := newSender(tb), newReceiver(tb)
	st := seedState{X: 1, Y: 2, Z: 3, Health: 4}
	s.encode(nil, 0, &st) // lost
	s.Acked(0, 1)         // a forged or mistaken ack
	st.Y = 9
	m := s.encode(nil, 0, &st)
	if _, _, err := r.Decode(m); err != ErrNoBase {
		t.Fatalf("delta against an unheld base: err %v, want ErrNoBase", err)
	}
	if _, ok := r.State(); ok || r.Ack() != 0 {
		t.Errorf("receiver changed after a dropped update: ack %d", r.Ack())
	}
}

// Acks arrive late, twice and out of order; only the newest counts, and an
// ack for a snapshot never sent is ignored (Q2).
func TestAckedKeepsNewest_Q2(t *testing.T) {
	tb := seedTable(t)
	s := newSender(tb)
	st := seedState{X: 1}
	for range 5 {
		s.encode(nil, 7, &st)
	}
	s.Acked(7, 4)
	s.Acked(7, 2)  // late
	s.Acked(7, 99) // never sent
	s.Acked(3, 1)  // unknown receiver
	if u := parse(t, s.encode(nil, 7, &st)); u.seq != 6 || u.back != 2 {
		t.Errorf("update seq %d back %d, want 6 against 4", u.seq, u.back)
	}
	s.Forget(7)
	if u := parse(t, s.encode(nil, 7, &st)); u.seq != 1 || u.back != 0 {
		t.Errorf("after Forget: seq %d back %d, want a fresh stream", u.seq, u.back)
	}
}
