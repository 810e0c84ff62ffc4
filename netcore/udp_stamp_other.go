//go:build !linux

package netcore

import (
	"net"
	"net/netip"
	"time"
)

// Elsewhere the reader's own clock, read right after each datagram, is its
// arrival time (udp_stamp_linux.go has the kernel's).

const oobSize = 0

func enableTimestamps(*net.UDPConn) bool { return false }

func readStamped(conn *net.UDPConn, b, _ []byte) (n, oobn int, from netip.AddrPort, err error) {
	n, from, err = conn.ReadFromUDPAddrPort(b)
	return n, 0, from, err
}

func kernelStamp([]byte) (time.Time, bool) { return time.Time{}, false }
