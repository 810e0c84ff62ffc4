package session

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/probe/feed"
)

// Every way a join ends badly names the host's address; a player refused
// because the game has started is told the command that shows it, with
// the --key its command line gave, quoted for the shell.
func TestJoinErrorsNameTheHost(t *testing.T) {
	w := newWorld(t, 11, lan30)
	host := w.host("alice", Config{Players: 2})
	bob := w.join("bob", RolePlayer, host, Config{})
	if !w.runUntil(5*time.Second, started(host, bob)) {
		t.Fatal("did not start")
	}
	carol := w.join("carol", RolePlayer, host, Config{})
	dave := w.join("dave", RolePlayer, host, Config{KeyArg: "it's"})
	w.runUntil(5*time.Second, func() bool { return carol.s.Done() && dave.s.Done() })
	a := host.addr.String()
	for _, c := range []struct {
		m    *machine
		want string
	}{
		{carol, "the game at " + a + " has started — `lagscope watch " + a + "` shows it"},
		{dave, "the game at " + a + " has started — `lagscope watch " + a + " --key 'it'\\''s'` shows it"},
	} {
		var re refusedError
		if err := c.m.s.Err(); err == nil || err.Error() != c.want || !errors.As(err, &re) {
			t.Errorf("%s: err %v, want %q (still a refusal)", c.m.name, err, c.want)
		}
	}

	nobody := w.attach("nobody")
	nobody.h.Stop()
	eve := w.join("eve", RolePlayer, nobody, Config{})
	if !w.runUntil(joinTimeout+time.Second, eve.s.Done) {
		t.Fatal("still trying")
	}
	want := nobody.addr.String() + ": " + errNoAnswer.Error()
	if err := eve.s.Err(); err == nil || err.Error() != want || !errors.Is(err, errNoAnswer) {
		t.Errorf("no answer: err %v, want %q", err, want)
	}
	if err := host.s.Err(); err != nil {
		t.Errorf("the host's session ended: %v", err)
	}
}

// A joiner's lobby says whom it contacts and which attempt it is at; a
// watcher's says it is one; the host's carries its guide and may start.
func TestLobbyViewGuides(t *testing.T) {
	w := newWorld(t, 12, lan30)
	nobody := w.attach("nobody")
	nobody.h.Stop()
	bob := w.join("bob", RolePlayer, nobody, Config{})
	eve := w.join("eve", RoleObserver, nobody, Config{})
	w.runFor(1200 * time.Millisecond)
	for _, c := range []struct {
		m       *machine
		watcher bool
	}{{bob, false}, {eve, true}} {
		l := c.m.s.View(w.now()).Lobby
		if l == nil || !l.Joining || l.HostAddr != nobody.addr || l.Attempt != 3 || l.Watcher != c.watcher || l.CanStart || l.Guide != nil {
			t.Errorf("%s at %v: lobby %+v, want joining %s at attempt 3, watcher %v", c.m.name, w.now(), l, nobody.addr, c.watcher)
		}
	}

	g := &feed.JoinGuide{Line: "lagscope join 10.0.0.1:7373 --key K", Port: 7373,
		Addrs: []feed.GuideAddr{{Addr: netip.MustParseAddrPort("10.0.0.1:7373"), Kind: feed.AddrLAN}}}
	host := w.host("alice", Config{Players: 3, Guide: g})
	carol := w.join("carol", RolePlayer, host, Config{})
	if !w.runUntil(5*time.Second, func() bool { return host.s.seated() == 2 }) {
		t.Fatal("carol not seated")
	}
	l := host.s.View(w.now()).Lobby
	if l == nil || !l.CanStart || l.Guide != g || l.Seated != 2 || l.Need != 3 || l.HostAddr.IsValid() {
		t.Fatalf("host lobby %+v, want the guide, 2 of 3 seated, startable", l)
	}
	// What the host's `s` does: the game starts with the two seated.
	host.s.StartNow(w.now())
	w.after(host)
	if !w.runUntil(5*time.Second, started(host, carol)) {
		t.Fatal("StartNow did not start the game")
	}
	if v := host.s.View(w.now()); v.Lobby != nil || len(v.Players) != 2 {
		t.Errorf("after the start: lobby %+v, %d players, want none and 2", v.Lobby, len(v.Players))
	}
}
