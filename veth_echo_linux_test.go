//go:build linux

package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenUDPIn opens a UDP socket inside the named network namespace
// (/var/run/netns/NAME, as `ip netns add` makes it): a socket belongs to
// the namespace of the thread that created it, and keeps it when any
// thread uses it afterwards. The thread is switched on a goroutine of its
// own, and given back to the scheduler only once it is back home.
func listenUDPIn(ns string, at netip.AddrPort) (*net.UDPConn, error) {
	type result struct {
		c   *net.UDPConn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer home.Close()
		there, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer there.Close()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(at))
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the goroutine ends locked, and its thread with it
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// bareEcho measures a bare UDP echo between two network namespaces: a
// server in srvNS, a process of its own (this test binary as
// serveEcho) answering each datagram from a plain blocking read, and a
// client in cliNS sending count 32-byte datagrams interval apart, as ping
// does. Each round trip is timed as a lagscope link times its samples
// (T2): from just before the write to the kernel's receive stamp of the
// echo, so the client's own wake-up is not in it and the server's is. It
// returns the round trips sorted, in milliseconds.
//
// The server must be another process: in this one, the client's thread,
// about to wait for the echo, would find the server's datagram itself and
// answer it with no wake-up at all, which no two machines can do.
func bareEcho(t *testing.T, srvNS string, srvAt netip.AddrPort, cliNS string, cliAt netip.Addr, count int, interval time.Duration) []float64 {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", srvNS, os.Args[0])
	cmd.Env = append(os.Environ(), echoChildEnv+"="+srvAt.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("echo server: %v", err)
	}
	defer func() {
		stdin.Close() // the server ends when its stdin does
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("echo server printed no address: %v", err)
	}
	to, err := netip.ParseAddrPort(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("echo server address %q: %v", line, err)
	}
	cli, err := listenUDPIn(cliNS, netip.AddrPortFrom(cliAt, 0))
	if err != nil {
		t.Fatalf("echo client in %s: %v", cliNS, err)
	}
	defer cli.Close()
	rc, err := cli.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		t.Fatalf("SO_TIMESTAMPNS: %v %v", err, serr)
	}
	msg := make([]byte, 32)
	var buf [2048]byte
	oob := make([]byte, 128)
	var rtts []float64
	for range count {
		t0 := time.Now()
		if _, err := cli.WriteToUDPAddrPort(msg, to); err != nil {
			t.Fatalf("echo: %v", err)
		}
		cli.SetReadDeadline(time.Now().Add(time.Second))
		_, oobn, _, _, err := cli.ReadMsgUDPAddrPort(buf[:], oob)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // lost: not a sample
			}
			t.Fatalf("echo: %v", err)
		}
		if at, ok := stampOf(oob[:oobn]); ok {
			rtts = append(rtts, float64(at.Sub(t0.Round(0)))/float64(time.Millisecond))
		}
		time.Sleep(interval)
	}
	if len(rtts) < count/2 {
		t.Fatalf("bare echo: %d of %d echoes came back stamped", len(rtts), count)
	}
	slices.Sort(rtts)
	return rtts
}

// stampOf finds the kernel's SCM_TIMESTAMPNS stamp among control messages.
func stampOf(oob []byte) (time.Time, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_TIMESTAMPNS {
			continue
		}
		switch d := m.Data; len(d) {
		case 16: // 64-bit time_t and long
			return time.Unix(int64(binary.NativeEndian.Uint64(d)), int64(binary.NativeEndian.Uint64(d[8:]))), true
		case 8:
			return time.Unix(int64(int32(binary.NativeEndian.Uint32(d))), int64(int32(binary.NativeEndian.Uint32(d[4:])))), true
		}
	}
	return time.Time{}, false
}
