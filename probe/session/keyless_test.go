package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// A keyed host answers a joiner without the key with one plain refusal
// per Hello, no larger than that Hello, which the joiner turns into the
// line to type; with the key the same joiner is seated; without a key on
// either side (an open session) nothing changes.
func TestKeyedHostRefusesAStrangerWithOneSmallAnswer(t *testing.T) {
	key := []byte("7K3M-QX9P-4RTA-WZ2H")
	w := newWorld(t, 7, lan30)
	host := w.host("ada", Config{Players: 3, Key: key})
	host.tr.Keep = true

	stranger := w.attach("eve")
	stranger.tr.Keep = true
	s, err := NewJoiner(w.config(stranger, Config{}), RolePlayer, stranger.tr, host.addr)
	if err != nil {
		t.Fatal(err)
	}
	w.start(stranger, s)
	if !w.runUntil(10*time.Second, func() bool { return stranger.s.Done() }) {
		t.Fatal("the stranger is still joining")
	}
	var re refusedError
	if !errors.As(stranger.s.Err(), &re) || re.Reason != netcore.RefuseNeedKey {
		t.Fatalf("stranger's error %v, want the need-key refusal", stranger.s.Err())
	}
	if want := "this session needs its code: lagscope join " + host.addr.String() + " --key CODE"; stranger.s.Err().Error() != want {
		t.Errorf("stranger's error %q, want %q", stranger.s.Err(), want)
	}
	hellos, largest := 0, 0
	for _, d := range stranger.tr.Sent {
		if d.To == host.addr {
			hellos++
			largest = max(largest, len(d.Data))
		}
	}
	answers, welcomes := 0, 0
	for _, d := range host.tr.Sent {
		if d.To != stranger.addr {
			continue
		}
		answers++
		if len(d.Data) > largest {
			t.Errorf("an answer of %d bytes to a Hello of at most %d", len(d.Data), largest)
		}
		h, err := netcore.DecodeHeader(d.Data)
		if err != nil || h.Flags != 0 {
			t.Errorf("the answer is not a plain datagram: %+v %v", h, err)
		}
		if strings.Contains(string(d.Data), "ada") {
			welcomes++
		}
	}
	if hellos == 0 || answers != 1 || welcomes != 0 {
		t.Errorf("%d Hellos, %d answers (%d naming a member), want one answer and no welcome", hellos, answers, welcomes)
	}

	// With the code: seated.
	friend := w.join("bob", RolePlayer, host, Config{Key: key})
	if !w.runUntil(10*time.Second, func() bool { return host.s.seated() == 2 }) {
		t.Fatalf("the joiner with the code was not seated: %v", friend.s.Err())
	}

	// An open session, as before: no key anywhere, seated.
	w2 := newWorld(t, 8, lan30)
	open := w2.host("ada", Config{Players: 3})
	w2.join("bob", RolePlayer, open, Config{})
	if !w2.runUntil(10*time.Second, func() bool { return open.s.seated() == 2 }) {
		t.Fatal("an open session did not seat a joiner without a key")
	}
}
