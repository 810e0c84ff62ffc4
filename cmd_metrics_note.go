package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
)

// metricsNote is what the live commands say on stderr about a --metrics
// address that listens on every interface — an empty host (":9373") or an
// unspecified address ("0.0.0.0:9373", "[::]:9373") — where anyone on the
// network can scrape the session's numbers; it names the loopback address
// that keeps them on this machine. It is "" for an address bound to one
// interface (a loopback or other IP address, or a host name, which the
// user chose) and for one that cannot be listened on (no port or service
// of that name; the listen reports it).
func metricsNote(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return ""
	}
	local := "127.0.0.1"
	if host != "" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.WithZone("").Unmap().IsUnspecified() {
			return ""
		}
		if ip.Is6() && !ip.Is4In6() {
			local = "::1"
		}
	}
	return fmt.Sprintf("--metrics %s listens on every interface, so the metrics are reachable from the network; use --metrics %s to keep them on this machine",
		addr, net.JoinHostPort(local, port))
}

// noteMetrics prints metricsNote's line for the --metrics flag, if any.
func (lf *liveFlags) noteMetrics(stderr io.Writer) {
	if lf.metrics == "" {
		return
	}
	if note := metricsNote(lf.metrics); note != "" {
		fmt.Fprintf(stderr, "lagscope %s: note: %s\n", lf.cmd, note)
	}
}
