package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/netip"
)

// A session code is what a host without --key seals its session with and
// shares in its join line: 16 characters from a 32-letter alphabet, 80
// bits from the system's random source, shown in groups of four
// (7K3M-QX9P-4RTA-WZ2H). The alphabet leaves out 0, 1, I and O, which
// read alike. docs/security.md says what guessing it costs.
const (
	codeAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
	codeLetters  = 16
)

// codeRand is where codes come from; tests seed it.
var codeRand io.Reader = rand.Reader

// newCode draws a session code. Each letter takes 5 bits of one random
// byte, so every letter is equally likely.
func newCode(r io.Reader) (string, error) {
	var b [codeLetters]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("making a session code: %w", err)
	}
	out := make([]byte, 0, codeLetters+codeLetters/4-1)
	for i, v := range b {
		if i > 0 && i%4 == 0 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[v&31])
	}
	return string(out), nil
}

// interfaceAddrs lists this machine's addresses; tests inject a list.
var interfaceAddrs = net.InterfaceAddrs

// shareAddr is the address the join line names: the one the host listens
// on when it is a specific one, else this machine's first non-loopback
// IPv4 address (then IPv6), else loopback; always with the bound port.
func shareAddr(bound netip.AddrPort) netip.AddrPort {
	if a := bound.Addr(); a.IsValid() && !a.IsUnspecified() {
		return bound
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		return bound
	}
	var v6 netip.Addr
	for _, a := range addrs {
		p, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(p.IP)
		if !ok || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		ip = ip.Unmap()
		if ip.Is4() {
			return netip.AddrPortFrom(ip, bound.Port())
		}
		if !v6.IsValid() {
			v6 = ip
		}
	}
	if v6.IsValid() {
		return netip.AddrPortFrom(v6, bound.Port())
	}
	// Only loopback: this machine is the only one that can join.
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), bound.Port())
}

// joinLines are what a host says about joining it, once its socket is
// bound: the line to share and, for an open session, what that allows.
// code is the session code ("" when the user chose the key or the session
// is open).
func joinLines(bound netip.AddrPort, code string, keyed bool) []string {
	line := "lagscope join " + shareAddr(bound).String()
	switch {
	case code != "":
		return []string{line + " --key " + code}
	case keyed:
		return []string{line + " --key KEY (the key you gave)"}
	}
	return []string{line, "open session (--open): anyone who reaches this address can join or watch, and learns every player's address"}
}
