package session

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

func sampleRoster() roster {
	return roster{Version: 3, Need: 3, Speed: 30, DropTimeout: 60 * time.Second, Members: []rosterEntry{
		{ID: 1, Name: "alice"},
		{ID: 2, Name: "eve", Observer: true, Addr: netip.MustParseAddrPort("192.168.1.20:40000")},
		{ID: 3, Name: "bob", Addr: netip.MustParseAddrPort("[2001:db8::7]:7373")},
	}}
}

func TestRosterRoundTrip(t *testing.T) {
	in := sampleRoster()
	out, err := decodeRoster(appendRoster(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}
}

// Every truncation of a valid lobby message is an error, never a panic.
func TestLobbyMessagesTruncated(t *testing.T) {
	for _, b := range [][]byte{
		appendRoster(nil, sampleRoster()),
		appendPing(nil, ping{Version: 4, Ready: true}),
		appendStart(nil, 9),
	} {
		for n := 0; n < len(b); n++ {
			var err error
			switch b[0] {
			case kindRoster:
				_, err = decodeRoster(b[:n])
			case kindPing:
				_, err = decodePing(b[:n])
			case kindStart:
				_, err = decodeStart(b[:n])
			}
			if err == nil {
				t.Fatalf("kind %#x truncated at %d decoded", b[0], n)
			}
		}
	}
}

func TestRosterRejectsBadFields(t *testing.T) {
	cases := map[string]func(r *roster){
		"version 0":      func(r *roster) { r.Version = 0 },
		"need 0":         func(r *roster) { r.Need = 0 },
		"speed 0":        func(r *roster) { r.Speed = 0 },
		"speed 1001":     func(r *roster) { r.Speed = 1001 },
		"no drop":        func(r *roster) { r.DropTimeout = 0 },
		"no members":     func(r *roster) { r.Members = nil },
		"duplicate id":   func(r *roster) { r.Members[2].ID = 2 },
		"unassigned id":  func(r *roster) { r.Members[1].ID = netcore.PeerUnassigned },
		"empty name":     func(r *roster) { r.Members[1].Name = "" },
		"control char":   func(r *roster) { r.Members[1].Name = "e\x00ve" },
		"padded name":    func(r *roster) { r.Members[1].Name = " eve" },
		"invalid utf8":   func(r *roster) { r.Members[1].Name = "\xff" },
		"zero port":      func(r *roster) { r.Members[1].Addr = netip.MustParseAddrPort("10.0.0.1:0") },
		"unspecified ip": func(r *roster) { r.Members[1].Addr = netip.MustParseAddrPort("0.0.0.0:9") },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleRoster()
			mut(&r)
			if _, err := decodeRoster(appendRoster(nil, r)); err == nil {
				t.Fatal("decoded")
			}
		})
	}
	b := appendRoster(nil, sampleRoster())
	if _, err := decodeRoster(append(b, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	b[len(b)-24-32] = 9 // bob's role: before his name, address, port and key
	if _, err := decodeRoster(b); err == nil {
		t.Fatal("bad role accepted")
	}
}

func TestPingAndStart(t *testing.T) {
	for _, pg := range []ping{{}, {Version: 1, Ready: true}, {Version: 77, Started: true, Ready: true}} {
		got, err := decodePing(appendPing(nil, pg))
		if err != nil || got != pg {
			t.Fatalf("ping %+v → %+v, %v", pg, got, err)
		}
	}
	if _, err := decodePing([]byte{kindPing, 1, 0, 0, 0, 0x80}); err == nil {
		t.Fatal("reserved ping flag accepted")
	}
	if v, err := decodeStart(appendStart(nil, 12)); err != nil || v != 12 {
		t.Fatalf("start: %d %v", v, err)
	}
	if _, err := decodeStart(appendStart(nil, 0)); err == nil {
		t.Fatal("start of version 0 accepted")
	}
	if decodeBare([]byte{kindLeave}, kindLeave) != nil || decodeBare([]byte{kindLeave, 0}, kindLeave) == nil ||
		decodeBare([]byte{kindAlive}, kindLeave) == nil {
		t.Fatal("bare messages")
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "alice", "Zoë", "player 2", "abcdefghijklmnopqrstuvwxyz012345"} {
		if err := checkName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", " a", "a ", "a\tb", "a\nb", "abcdefghijklmnopqrstuvwxyz0123456", "\xfe", "\x00"} {
		if checkName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzLobbyMessages: no input panics a decoder, and whatever decodes
// encodes back to the same bytes.
func FuzzLobbyMessages(f *testing.F) {
	f.Add(appendRoster(nil, sampleRoster()))
	f.Add(appendPing(nil, ping{Version: 2, Ready: true}))
	f.Add(appendStart(nil, 5))
	f.Add([]byte{kindLeave})
	f.Add([]byte{kindRoster, 1, 0, 0, 0, 1, 0, 30, 0, 0x60, 0xea, 0, 0, 1, 0, 1, 0, 1, 1, 'a', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		switch b[0] {
		case kindRoster:
			r, err := decodeRoster(b)
			if err == nil {
				if again := appendRoster(nil, r); string(again) != string(b) {
					t.Fatalf("re-encoded differently:\n%x\n%x", b, again)
				}
			}
		case kindPing:
			if pg, err := decodePing(b); err == nil && string(appendPing(nil, pg)) != string(b) {
				t.Fatal("ping re-encoded differently")
			}
		case kindStart:
			if v, err := decodeStart(b); err == nil && string(appendStart(nil, v)) != string(b) {
				t.Fatal("start re-encoded differently")
			}
		default:
			_ = decodeBare(b, b[0])
		}
	})
}
