package main

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The path test's tools on the wire: a capture of one interface in a
// namespace, a bounded UDP flood, a sink that swallows it, and the binary
// built where an unprivileged user can run it.

// inNetnsDo runs fn on a thread switched into namespace ns: a socket
// belongs to the namespace it was made in, whichever thread uses it later.
// The thread goes back to the scheduler only once it is back home.
func inNetnsDo(ns string, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer home.Close()
		there, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer there.Close()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		err = fn()
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the goroutine ends locked, and its thread with it
		ch <- err
	}()
	return <-ch
}

// wirePacket is one UDP datagram a tap saw: the kernel's stamp, whether
// it was leaving the interface, its addresses, the IP TTL it had there and
// the first bytes of its payload.
type wirePacket struct {
	at       time.Time
	out      bool
	src, dst netip.AddrPort
	ttl      int
	size     int // payload length
	payload  []byte
}

// probeTTL is the hop limit a lagscope probe record says it was sent
// with, and whether p is one (an unsealed control datagram holding one
// probe record, the answer flag clear): docs/path.md's record.
func (p wirePacket) probeTTL() (int, bool) {
	b := p.payload
	if p.size != 33 || len(b) < 33 || b[24] != 0x25 || b[25] != 6 || b[26] != 0 || b[32]&1 != 0 {
		return 0, false
	}
	return int(b[31]), true
}

// wireTap captures, on one interface of a namespace (AF_PACKET), the UDP
// datagrams to or from one port and every probe-sized one (33 bytes of
// payload) whatever its ports, with the kernel's stamps, until stopped.
type wireTap struct {
	fd   int
	port uint16
	mu   sync.Mutex
	pkts []wirePacket
	stop chan struct{}
	done chan struct{}
}

func tapInterface(t *testing.T, ns, ifname string, port uint16) *wireTap {
	t.Helper()
	w := &wireTap{port: port, stop: make(chan struct{}), done: make(chan struct{})}
	err := inNetnsDo(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		// ETH_P_ALL: only such a tap sees what leaves the interface.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		w.fd = fd
		tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
		for _, err := range []error{
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20),
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
			unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}),
		} {
			if err != nil {
				unix.Close(fd)
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("capture on %s in %s: %v", ifname, ns, err)
	}
	go w.read()
	t.Cleanup(w.close)
	return w
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (w *wireTap) read() {
	defer close(w.done)
	buf := make([]byte, 2048)
	oob := make([]byte, 128)
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		n, oobn, _, from, err := unix.Recvmsg(w.fd, buf, oob, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		ll, _ := from.(*unix.SockaddrLinklayer)
		if ll == nil || ll.Protocol != htons(unix.ETH_P_IP) {
			continue
		}
		p, ok := parseUDPv4(buf[:n], w.port)
		if !ok {
			continue
		}
		p.out = ll.Pkttype == unix.PACKET_OUTGOING
		p.at, _ = stampOf(oob[:oobn])
		w.mu.Lock()
		w.pkts = append(w.pkts, p)
		w.mu.Unlock()
	}
}

// parseUDPv4 reads an IPv4 UDP datagram to or from port, or of a probe's
// size.
func parseUDPv4(b []byte, port uint16) (wirePacket, bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != unix.IPPROTO_UDP {
		return wirePacket{}, false
	}
	ihl := int(b[0]&0xf) * 4
	if len(b) < ihl+8 {
		return wirePacket{}, false
	}
	u := b[ihl:]
	sp, dp := binary.BigEndian.Uint16(u), binary.BigEndian.Uint16(u[2:])
	pay := u[8:]
	if sp != port && dp != port && len(pay) != 33 {
		return wirePacket{}, false
	}
	return wirePacket{
		src:     netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), sp),
		dst:     netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[16:20])), dp),
		ttl:     int(b[8]),
		size:    len(pay),
		payload: slices.Clone(pay[:min(len(pay), 64)]),
	}, true
}

// packets stops the capture and returns what it saw.
func (w *wireTap) packets() []wirePacket {
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.pkts)
}

func (w *wireTap) close() {
	select {
	case <-w.stop:
		return
	default:
	}
	close(w.stop)
	<-w.done
	unix.Close(w.fd)
}

// flood sends 1200-byte datagrams from ns to to every 3 ms (about
// 3.2 Mbit/s, above the 2 Mbit/s of the queues it fills) until stopped or
// for at most limit. The returned func stops it and waits.
func flood(t *testing.T, ns string, from netip.Addr, to netip.AddrPort, limit time.Duration) func() {
	t.Helper()
	c, err := listenUDPIn(ns, netip.AddrPortFrom(from, 0))
	if err != nil {
		t.Fatalf("flood from %s: %v", ns, err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer c.Close()
		p := make([]byte, 1200)
		start, sent := time.Now(), 0
		for i := int64(0); i < int64(limit/(3*time.Millisecond)); i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Paced by the clock, not by the sleeps: a sleep that
			// overruns on a busy machine is made up (at most 20
			// datagrams at once), so the queue stays full.
			due := int(time.Since(start) / (3 * time.Millisecond))
			for n := 0; sent <= due && n < 20; n++ {
				_, _ = c.WriteToUDPAddrPort(p, to) // a full local queue refuses some: that is the point
				sent++
			}
			sent = max(sent, due-20)
			time.Sleep(3 * time.Millisecond)
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-done }) }
	t.Cleanup(end)
	return end
}

// sink opens a socket at at in ns that never reads: a flood to it ends
// there without an ICMP answer once its buffer is full.
func sink(t *testing.T, ns string, at netip.AddrPort) {
	t.Helper()
	c, err := listenUDPIn(ns, at)
	if err != nil {
		t.Fatalf("sink in %s: %v", ns, err)
	}
	t.Cleanup(func() { c.Close() })
}

// startUnpriv runs bin (built by buildLagscopeShared, with its config
// directory cfg) in namespace ns as nobody, without capabilities.
func startUnpriv(t *testing.T, ns, bin, cfg, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, "ip", name, unprivArgs(ns, bin, cfg, args...)[1:]...)
}

// unprivArgs is the command line that runs bin with args in namespace ns
// as nobody, without capabilities, its config directory cfg: "ip" first.
func unprivArgs(ns, bin, cfg string, args ...string) []string {
	return append([]string{"ip", "netns", "exec", ns, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		"env", "XDG_CONFIG_HOME=" + cfg, bin}, args...)
}

// buildLagscopeShared builds the command into a directory anyone may
// enter (t.TempDir is the test user's alone), with an empty config
// directory beside it, for a process that drops to nobody.
func buildLagscopeShared(t *testing.T) (bin, cfg string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "lagscope-path-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg = filepath.Join(dir, "config")
	for _, d := range []string{dir, cfg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "lagscope")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, cfg
}
