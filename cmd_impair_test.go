package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every flag error is one line on stderr, exit 2, nothing on stdout.
func TestImpairFlagErrors(t *testing.T) {
	base := []string{"impair", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"}
	for name, args := range map[string][]string{
		"no listen":          {"impair", "--to", "127.0.0.1:9"},
		"no to":              {"impair", "--listen", "127.0.0.1:0"},
		"to without port":    {"impair", "--listen", "127.0.0.1:0", "--to", "127.0.0.1"},
		"to port 0":          {"impair", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:0"},
		"bad listen":         {"impair", "--listen", "nowhere", "--to", "127.0.0.1:9"},
		"loss above 1":       append(base, "--loss", "1.5"),
		"loss above 100%":    append(base, "--loss", "150%"),
		"loss not a number":  append(base, "--loss", "lots"),
		"negative dup":       append(base, "--dup", "-0.1"),
		"negative delay":     append(base, "--delay", "-40ms"),
		"bad jitter":         append(base, "--jitter", "5"),
		"burst one value":    append(base, "--burst", "0.1"),
		"burst not numbers":  append(base, "--burst", "a,b"),
		"burst five values":  append(base, "--burst", "0.1,0.2,0.3,0.4,0.5"),
		"reorder no hold":    append(base, "--reorder", "5%", "--reorder-delay", "0s"),
		"unknown profile":    append(base, "--profile", "dial-up"),
		"unknown flag":       append(base, "--latency", "40ms"),
		"stray argument":     append(base, "extra"),
		"negative duration":  append(base, "--duration", "-1s"),
		"seed not a number":  append(base, "--seed", "x"),
		"reorder not chance": append(base, "--reorder", "2"),
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 2 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.HasPrefix(errb.String(), "lagscope impair: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr, nothing on stdout", name, code, out.String(), errb.String())
		}
	}
}

var relayingLine = regexp.MustCompile(`^lagscope impair: relaying (\S+) -> (\S+), each way: (.*) \(seed (\d+)\)$`)

// runImpair starts `lagscope impair` with args, returns the address it
// listens on and a function that waits for it to exit and returns its exit
// code, the rest of its stdout and its stderr.
func runImpair(t *testing.T, args ...string) (netip.AddrPort, string, func() (int, string, string)) {
	t.Helper()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(append([]string{"impair"}, args...), pw, &errb)
		pw.Close()
	}()
	lines := bufio.NewReader(pr)
	first, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v (stderr %q)", err, errb.String())
	}
	m := relayingLine.FindStringSubmatch(strings.TrimSpace(first))
	if m == nil {
		t.Fatalf("first line %q", first)
	}
	wait := func() (int, string, string) {
		rest, _ := io.ReadAll(lines)
		return <-code, string(rest), errb.String()
	}
	return netip.MustParseAddrPort(m[1]), m[3], wait
}

func echoOnLoopback(t *testing.T) (*net.UDPConn, func() int) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1024)
	go func() {
		buf := make([]byte, 2048)
		n := 0
		defer func() { got <- n }()
		for {
			m, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			n++
			conn.WriteToUDPAddrPort(buf[:m], from)
		}
	}()
	return conn, func() int { conn.Close(); return <-got }
}

// The relay duplicates every datagram each way and says so on exit.
func TestImpairRelaysAndReportsPerDirection(t *testing.T) {
	echo, stopEcho := echoOnLoopback(t)
	addr, desc, wait := runImpair(t, "--listen", "127.0.0.1:0", "--to", echo.LocalAddr().String(),
		"--delay", "2ms", "--dup", "100%", "--seed", "5", "--duration", "2s")
	if desc != "delay 2ms, dup 100%" {
		t.Errorf("profile described as %q", desc)
	}
	client, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	const sent = 20
	for i := range sent {
		client.WriteToUDPAddrPort(binary.LittleEndian.AppendUint32(nil, uint32(i)), addr)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second)) // a bound, not a measurement
	buf := make([]byte, 64)
	for i := range 4 * sent {
		if _, _, err := client.ReadFromUDPAddrPort(buf); err != nil {
			t.Fatalf("received %d of %d copies: %v", i, 4*sent, err)
		}
	}
	code, out, errs := wait()
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"\nclient -> target: offered 20, forwarded 40, dropped 0, duplicated 20, reordered 0, at most ",
		"\ntarget -> client: offered 40, forwarded 80, dropped 0, duplicated 40, reordered 0, at most ",
		"not loss anyone measured",
		// --delay is each way: the start says what it does to a round trip.
		"the delay is added each way, so every round trip through this relay grows by 4ms (2 × 2ms)",
	} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := stopEcho(); n != 2*sent {
		t.Errorf("target received %d datagrams, want %d", n, 2*sent)
	}
}

// Asked-for loss is reported as dropped, and the target really sees nothing.
func TestImpairReportsWhatItDropped_L7(t *testing.T) {
	echo, stopEcho := echoOnLoopback(t)
	addr, _, wait := runImpair(t, "--listen", "127.0.0.1:0", "--to", echo.LocalAddr().String(),
		"--profile", "dsl", "--loss", "1", "--duration", "500ms")
	client, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for range 10 {
		client.WriteToUDPAddrPort([]byte("lost"), addr)
	}
	code, out, _ := wait()
	if code != 0 || !strings.Contains(out, "client -> target: offered 10, forwarded 0, dropped 10,") {
		t.Fatalf("exit %d, summary:\n%s", code, out)
	}
	if n := stopEcho(); n != 0 {
		t.Fatalf("target received %d datagrams through 100 %% loss", n)
	}
}

func TestImpairProfileWithOverrides(t *testing.T) {
	echo, stopEcho := echoOnLoopback(t)
	defer stopEcho()
	_, desc, wait := runImpair(t, "--listen", "127.0.0.1:0", "--to", echo.LocalAddr().String(),
		"--profile", "wifi", "--delay", "30ms", "--reorder", "1%", "--duration", "10ms")
	wait()
	if !strings.HasPrefix(desc, "delay 30ms ± 15ms, reorder 1% (held 20ms), burst loss") {
		t.Fatalf("wifi with overrides described as %q", desc)
	}
}

func TestImpairHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"impair", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--listen", "--to", "--burst", "lan, cable, dsl, wifi",
		// What it impairs, when it goes in, and the three machines of the
		// worked example: the relay beside the host, a join through it, a
		// join direct (the lines themselves parse: cmd_examples_test.go).
		"impairs only the datagrams that pass through it",
		"Start it before the game",
		"\n  lagscope impair --listen :9000 --to 127.0.0.1:7373 ",
		"\n  lagscope join 192.168.1.20:9000 ",
		"\n  lagscope join 192.168.1.20:7373 ",
		"ada-bob is impaired",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
