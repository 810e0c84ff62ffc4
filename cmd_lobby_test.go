package main

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/internal/systool"
	"github.com/lagscope/lagscope/probe/feed"
)

// injectInterfaces makes interfaceAddrs list cidrs for the test.
func injectInterfaces(t *testing.T, cidrs ...string) {
	t.Helper()
	was := interfaceAddrs
	t.Cleanup(func() { interfaceAddrs = was })
	interfaceAddrs = func() ([]net.Addr, error) {
		var out []net.Addr
		for _, c := range cidrs {
			ip, n, err := net.ParseCIDR(c)
			if err != nil {
				t.Fatal(err)
			}
			n.IP = ip
			out = append(out, n)
		}
		return out, nil
	}
}

// seededCode is the code newCode draws from bytes that spell want.
func seededCode(t *testing.T, want string) string {
	t.Helper()
	var seed []byte
	for _, r := range strings.ReplaceAll(want, "-", "") {
		seed = append(seed, byte(strings.IndexRune(codeAlphabet, r)))
	}
	code, err := newCode(bytes.NewReader(seed))
	if err != nil || code != want {
		t.Fatalf("seeded code %q (%v), want %q", code, err, want)
	}
	return code
}

// The host's lobby guide lists every address others may join at, with
// who reaches it, and the join line names the first; the UI's goldens
// (ui/testdata/TestGoldenLobbyGuide) draw this very guide.
func TestJoinGuideFromInterfaces(t *testing.T) {
	injectInterfaces(t, "127.0.0.1/8", "192.168.1.20/24", "fe80::1/64", "100.101.7.3/10", "2001:db8::20/64", "::1/128")
	code := seededCode(t, "7K3M-QX9P-4RTA-WZ2H")
	ap := netip.MustParseAddrPort
	got := joinGuide(ap("[::]:7373"), code, true)
	want := &feed.JoinGuide{
		Line: "lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H",
		Addrs: []feed.GuideAddr{
			{Addr: ap("192.168.1.20:7373"), Kind: feed.AddrLAN},
			{Addr: ap("100.101.7.3:7373"), Kind: feed.AddrLAN},
			{Addr: ap("[2001:db8::20]:7373"), Kind: feed.AddrPublic},
		},
		Port: 7373,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("guide\n %+v\nwant\n %+v", got, want)
	}

	// A socket on IPv4's wildcard takes no IPv6 joiner; a specific
	// --listen address is the only one; an open session says so; a
	// machine with only loopback offers only itself.
	if g := joinGuide(ap("0.0.0.0:7373"), "", false); len(g.Addrs) != 2 || !g.Open || g.Line != "lagscope join 192.168.1.20:7373" {
		t.Errorf("0.0.0.0, open: %+v", g)
	}
	if g := joinGuide(ap("203.0.113.9:4000"), code, true); !reflect.DeepEqual(g.Addrs, []feed.GuideAddr{{Addr: ap("203.0.113.9:4000"), Kind: feed.AddrPublic}}) ||
		g.Line != "lagscope join 203.0.113.9:4000 --key "+code {
		t.Errorf("--listen 203.0.113.9:4000: %+v", g)
	}
	injectInterfaces(t, "127.0.0.1/8", "::1/128")
	if g := joinGuide(ap("[::]:7373"), "", true); !reflect.DeepEqual(g.Addrs, []feed.GuideAddr{{Addr: ap("127.0.0.1:7373"), Kind: feed.AddrLoopback}}) ||
		g.Line != "lagscope join 127.0.0.1:7373 --key KEY (the key you gave)" {
		t.Errorf("loopback only: %+v", g)
	}
}

// The host's `s` in the real TUI: `lagscope host --players 3` in tmux
// with one joiner seated shows the lobby's guide and seats; `s` starts
// the game at once with the two seated.
func TestHostStartKeyInTmux(t *testing.T) {
	t.Parallel()
	systool.Need(t, "tmux", "the host's lobby is driven in it; .ci/run installs it")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := freeUDP(t)
	joinChild(t, exe, addr, "bob")
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { s.run("kill-server") })
	env := "LAGSCOPE_TEST_CHILD=" + strings.Join([]string{"host", "--open", "--listen", addr, "--players", "3", "--name", "alice", "--duration", "60s"}, "\x1f")
	cmd := fmt.Sprintf("%s; echo EXIT=$?; sleep 60", strconv.Quote(exe))
	if out, err := s.run("-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", "-e", env, cmd); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	flat := func(scr string) string { return strings.Join(strings.Fields(scr), " ") }
	s.waitScreen(15*time.Second, "the lobby with bob seated, the join line and s", func(scr string) bool {
		f := flat(scr)
		return strings.Contains(f, "waiting for 1 more player (2 of 3 seated)") &&
			strings.Contains(f, "press s to start now with the 2 seated") &&
			strings.Contains(f, "Others join with:") && strings.Contains(f, "lagscope join "+addr) &&
			strings.Contains(f, "s start now")
	})
	s.keys("s")
	scr := s.waitScreen(10*time.Second, "the game started with alice and bob", func(scr string) bool {
		return strings.Contains(scr, "The game starts: alice, bob") && !strings.Contains(scr, "── Lobby")
	})
	if strings.Contains(flat(scr), "carol") {
		t.Errorf("a third player on screen:\n%s", scr)
	}
	s.keys("q")
	if scr := s.waitScreen(10*time.Second, "EXIT= after q", func(scr string) bool { return strings.Contains(scr, "EXIT=") }); !strings.Contains(scr, "EXIT=0") {
		t.Fatalf("the host did not exit 0:\n%s", scr)
	}
}

// A player who comes after the start is told, with the address it tried,
// the command that shows the game instead — with the --key it gave.
func TestJoinRefusedStartedSaysWatch(t *testing.T) {
	t.Parallel()
	bin := buildLagscope(t)
	host := startProc(t, bin, "alice", "host", "--name", "alice", "--listen", "127.0.0.1:0", "--players", "2",
		"--json", "--duration", "20s")
	addr := hostAddr(t, host)
	code := joinCode(t, host)
	startProc(t, bin, "bob", "join", addr, "--name", "bob", "--key", code, "--json", "--duration", "15s")
	host.waitFor("the game's start", 10*time.Second, func(es []ndjson) bool {
		for _, e := range es {
			if e.str("type") == "message" && strings.HasPrefix(e.str("text"), "The game starts") {
				return true
			}
		}
		return false
	})
	var out, errb bytes.Buffer
	if got := run([]string{"join", addr, "--name", "carol", "--key", code, "--json", "--duration", "10s"}, &out, &errb); got != 1 {
		t.Fatalf("a player after the start exited %d, want 1: %s", got, errb.String())
	}
	want := "lagscope join: the game at " + addr + " has started — `lagscope watch " + addr + " --key " + code + "` shows it\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}
