//go:build !linux

package netcore

import (
	"errors"
	"net"
	"runtime"
)

// Elsewhere there is no error queue: macOS and Windows hand a UDP socket
// no ICMP answer with the router's address and the quote, so nothing is
// traced and no probe is sent.

var noTraceWhy = "no error queue (MSG_ERRQUEUE) on " + runtime.GOOS + ": routers' ICMP answers cannot be read"

var errNoTrace = errors.New("netcore: " + noTraceWhy)

func enableRecvErr(*net.UDPConn) *errDrain { return nil }

func isICMPErr(error) bool { return false }

func isDropped(error) bool { return false }
