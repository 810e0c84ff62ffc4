package trace

import (
	"net/netip"
	"testing"
	"time"
)

func newMatcher(t *testing.T) *matcher {
	t.Helper()
	m := makeMatcher(0)
	m.AddLink(linkA, peerA)
	m.AddLink(linkB, peerB)
	return m
}

func TestMatchByNumber(t *testing.T) {
	m := newMatcher(t)
	p := Probe{Num: 10, TTL: 2}
	if !m.Sent(linkA, p.Num, int(p.TTL), msec(100)) {
		t.Fatal("Sent refused")
	}
	if m.Sent(linkA, 11, 3, msec(101)) {
		t.Fatal("a second probe in flight on one link was taken")
	}
	// An answer quoting another number is someone else's.
	if _, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(Probe{Num: 9, TTL: 2})), msec(120)); ok {
		t.Fatal("matched an answer quoting probe 9 to probe 10")
	}
	o, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(p)), msec(130))
	want := outcome{Link: linkA, Num: 10, TTL: 2, Sent: msec(100), RTT: msec(30), Addr: r2}
	if !ok || o != want {
		t.Fatalf("outcome %+v %v, want %+v", o, ok, want)
	}
	if m.InFlight(linkA) || m.Unmatched() != 1 {
		t.Fatalf("in flight %v, unmatched %d; want false, 1", m.InFlight(linkA), m.Unmatched())
	}
}

// Routers that quote only the IP header and 8 bytes leave no number: the
// one probe in flight on the link is the match, unless the offender is a
// hop the link knows at another hop limit (a late answer).
func TestMatchByOrderAndOffender(t *testing.T) {
	m := newMatcher(t)
	m.Sent(linkA, 1, 1, 0)
	if o, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(2)); !ok || o.TTL != 1 || o.Addr != r1 || o.RTT != msec(2) {
		t.Fatalf("hop 1: %+v %v", o, ok)
	}
	m.Sent(linkA, 2, 2, msec(10))
	if got := m.Timeout(msec(10)+defaultTimeout, nil); len(got) != 1 || !got[0].Lost || got[0].TTL != 2 {
		t.Fatalf("timeouts %+v, want hop 2 lost", got)
	}
	m.Sent(linkA, 3, 3, msec(3000))
	// hop 1's late answer arrives while hop 3's probe is in flight.
	if _, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(3001)); ok {
		t.Fatal("matched a known hop-1 router to the hop-3 probe")
	}
	if o, ok := m.Answer(linkA, timeExceeded(r3, nil), msec(3020)); !ok || o.TTL != 3 || o.Addr != r3 {
		t.Fatalf("hop 3: %+v %v", o, ok)
	}
	// Nothing in flight: nothing to match.
	if _, ok := m.Answer(linkA, timeExceeded(r3, nil), msec(3030)); ok {
		t.Fatal("matched with nothing in flight")
	}
	// The other link's probe is not this link's.
	m.Sent(linkB, 4, 1, msec(4000))
	if _, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(4001)); ok {
		t.Fatal("matched across links")
	}
	if m.Unmatched() != 3 {
		t.Fatalf("unmatched %d, want 3", m.Unmatched())
	}
}

func TestMatchRejects(t *testing.T) {
	local, err := parseQuoted(recvErr(105, originLocal, 0, 0, netip.Addr{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	game := quotedBody(Probe{Num: 1, TTL: 1})
	game[0] = 0x22 // a keep-alive record, not a probe: other traffic
	for name, c := range map[string]struct {
		a  Answer
		at time.Duration
	}{
		"a local error":          {local, msec(10)},
		"game traffic's answer":  {timeExceeded(r1, game), msec(10)},
		"an answer before it":    {timeExceeded(r1, nil), msec(4)},
		"the peer's own answer":  {timeExceeded(r1, quotedBody(Probe{Num: 1, TTL: 1}.Reply())), msec(10)},
		"unknown link (no link)": {timeExceeded(r1, nil), msec(10)},
	} {
		m := newMatcher(t)
		link := linkA
		if name == "unknown link (no link)" {
			link = 99
		}
		m.Sent(linkA, 1, 1, msec(5))
		if o, ok := m.Answer(link, c.a, c.at); ok || m.Unmatched() != 1 || !m.InFlight(linkA) {
			t.Errorf("%s: matched %+v %v, unmatched %d", name, o, ok, m.Unmatched())
		}
	}
}

func TestPeerAnswers(t *testing.T) {
	m := newMatcher(t)
	p := Probe{Num: 8, TTL: 5}
	m.Sent(linkA, p.Num, 5, msec(100))
	if _, ok := m.Reply(linkA, p, msec(150)); ok {
		t.Fatal("matched a probe (not an answer) as the peer's reply")
	}
	if _, ok := m.Reply(linkA, Probe{Num: 8, TTL: 4, Answer: true}, msec(150)); ok {
		t.Fatal("matched a reply echoing another ttl")
	}
	o, ok := m.Reply(linkA, p.Reply(), msec(160))
	if !ok || !o.Reached || o.Addr != peerA || o.RTT != msec(60) || o.TTL != 5 {
		t.Fatalf("reply: %+v %v", o, ok)
	}
	// The peer's host saying its port is closed also ends the path.
	m.Sent(linkA, 9, 4, msec(200))
	pu, _ := parseQuoted(recvErr(111, originICMP, 3, 3, peerA), nil)
	if o, ok := m.Answer(linkA, pu, msec(230)); !ok || !o.Reached || o.TTL != 4 {
		t.Fatalf("port unreachable from the peer: %+v %v", o, ok)
	}
	// A router's unreachable does not.
	m.Sent(linkA, 10, 3, msec(300))
	nu, _ := parseQuoted(recvErr(113, originICMP, 3, 1, r3), nil)
	if o, ok := m.Answer(linkA, nu, msec(310)); !ok || o.Reached {
		t.Fatalf("host unreachable from a router: %+v %v", o, ok)
	}
}

func TestTimeoutAndNextTimeout(t *testing.T) {
	m := makeMatcher(time.Second)
	m.AddLink(linkA, peerA)
	m.AddLink(linkB, peerB)
	if _, ok := m.NextTimeout(); ok {
		t.Fatal("a timeout with nothing in flight")
	}
	m.Sent(linkA, 1, 1, msec(100))
	m.Sent(linkB, 2, 1, msec(300))
	if at, ok := m.NextTimeout(); !ok || at != msec(1100) {
		t.Fatalf("next timeout %v %v, want 1.1s", at, ok)
	}
	if got := m.Timeout(msec(1099), nil); len(got) != 0 {
		t.Fatalf("timed out early: %+v", got)
	}
	got := m.Timeout(msec(1100), nil)
	if len(got) != 1 || got[0].Link != linkA || !got[0].Lost {
		t.Fatalf("timeouts %+v", got)
	}
	// A late answer to a probe already lost matches nothing.
	if _, ok := m.Answer(linkA, timeExceeded(r1, quotedBody(Probe{Num: 1, TTL: 1})), msec(1200)); ok {
		t.Fatal("matched a late answer")
	}
	m.RemoveLink(linkB)
	if got := m.Timeout(time.Hour, nil); len(got) != 0 {
		t.Fatalf("a removed link's probe timed out: %+v", got)
	}
}
