//go:build !linux

package netcore

import (
	"net"
	"net/netip"
)

// Elsewhere a wildcard socket answers from the address the system picks.

func enablePktinfo(*net.UDPConn) bool { return false }

func arrivedTo([]byte) (netip.Addr, bool) { return netip.Addr{}, false }

func appendFrom(b []byte, _ netip.AddrPort, _ netip.Addr) []byte { return b }
