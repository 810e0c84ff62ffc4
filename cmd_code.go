package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/lagscope/lagscope/probe/feed"
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
// When the system lists no addresses, it is the bound one.
func shareAddr(bound netip.AddrPort) netip.AddrPort {
	if as := hostAddrs(bound); len(as) > 0 {
		return as[0].Addr
	}
	return bound
}

// cgnat is the shared address space (RFC 6598) carriers and VPNs number
// machines from: no one on the internet reaches it.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// hostAddrs are the addresses others may join this host at, with who can
// reach each: the bound one when it is specific; else every interface
// address at the bound port but loopback and link-local ones (which need
// a zone), IPv4 first, IPv6 only for a socket on every IPv6 address
// (which takes both); else, on a machine with nothing else, loopback.
// nil when the system cannot list its addresses.
func hostAddrs(bound netip.AddrPort) []feed.GuideAddr {
	if a := bound.Addr(); a.IsValid() && !a.IsUnspecified() {
		a = a.Unmap()
		return []feed.GuideAddr{{Addr: netip.AddrPortFrom(a, bound.Port()), Kind: addrKind(a)}}
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []feed.GuideAddr
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
		ga := feed.GuideAddr{Addr: netip.AddrPortFrom(ip, bound.Port()), Kind: addrKind(ip)}
		switch {
		case ip.Is4():
			v4 = append(v4, ga)
		case !bound.Addr().Is4():
			v6 = append(v6, ga)
		}
	}
	if out := append(v4, v6...); len(out) > 0 {
		return out
	}
	// Only loopback: this machine is the only one that can join.
	return []feed.GuideAddr{{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), bound.Port()), Kind: feed.AddrLoopback}}
}

// addrKind says who can reach a: this machine, its network, or anyone.
func addrKind(a netip.Addr) feed.AddrKind {
	switch {
	case a.IsLoopback():
		return feed.AddrLoopback
	case a.IsPrivate(), a.IsLinkLocalUnicast(), cgnat.Contains(a):
		return feed.AddrLAN
	}
	return feed.AddrPublic
}

// joinGuide is what the host's lobby shows others to join it: the join
// line, this machine's addresses, the port a router forwards, and
// whether the session is open.
func joinGuide(bound netip.AddrPort, code string, keyed bool) *feed.JoinGuide {
	return &feed.JoinGuide{Line: joinLines(bound, code, keyed)[0], Addrs: hostAddrs(bound), Port: bound.Port(), Open: !keyed}
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
