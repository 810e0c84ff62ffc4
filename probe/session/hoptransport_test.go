package session

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/lagscope/lagscope/netcore"
)

// hopSocket is a transport that traces: it records hop-limited sends.
type hopSocket struct {
	sent []int
	why  string
}

func (h *hopSocket) Send(netip.AddrPort, []byte) error { return nil }
func (h *hopSocket) LocalAddr() netip.AddrPort         { return netip.MustParseAddrPort("10.0.0.1:7373") }
func (h *hopSocket) SendHopLimit(_ netip.AddrPort, _ []byte, hops int) error {
	h.sent = append(h.sent, hops)
	return nil
}
func (h *hopSocket) HopAnswers(dst []netcore.HopAnswer) []netcore.HopAnswer {
	return append(dst, netcore.HopAnswer{To: netip.MustParseAddrPort("10.0.0.2:7373")})
}
func (h *hopSocket) TraceUnavailable() string { return h.why }

// The session's transport passes tracing through to a socket that can
// trace, refuses it for a relayed pair (its datagrams go to the host), and
// says why a transport that cannot trace does not.
func TestPathTransportPassesTracingThrough(t *testing.T) {
	sock := &hopSocket{}
	tr := pathTransport{s: &Session{tr: sock}}
	var ht netcore.HopTransport = tr
	if err := ht.SendHopLimit(netip.MustParseAddrPort("10.0.0.2:7373"), []byte{1}, 3); err != nil || len(sock.sent) != 1 || sock.sent[0] != 3 {
		t.Fatalf("direct probe: %v, sent %v", err, sock.sent)
	}
	if err := ht.SendHopLimit(relayAddr(5), []byte{1}, 3); !errors.Is(err, errRelayedTrace) || len(sock.sent) != 1 {
		t.Fatalf("relayed probe: %v, sent %v", err, sock.sent)
	}
	if got := ht.HopAnswers(nil); len(got) != 1 {
		t.Fatalf("answers %v", got)
	}
	if ht.TraceUnavailable() != "" {
		t.Fatalf("a socket that traces says %q", ht.TraceUnavailable())
	}
	plain := pathTransport{s: &Session{tr: &recorderless{}}}
	if plain.TraceUnavailable() == "" || plain.SendHopLimit(netip.MustParseAddrPort("10.0.0.2:7373"), nil, 1) == nil {
		t.Fatal("a transport without hop limits claims to trace")
	}
}

type recorderless struct{}

func (recorderless) Send(netip.AddrPort, []byte) error { return nil }
func (recorderless) LocalAddr() netip.AddrPort         { return netip.AddrPort{} }
