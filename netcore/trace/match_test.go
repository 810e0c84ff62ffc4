package trace

import (
	"net/netip"
	"testing"
	"time"
)

// testWait is the tests' probe timeout.
const testWait = 2 * time.Second

// send records a probe sent as the scheduler sends it: untellable when its
// hop's address is not known.
func send(m *matcher, link Link, num uint32, ttl int, at time.Duration) bool {
	untold := true
	if l := m.links[link]; l != nil {
		untold = !l.hops[ttl].addr.IsValid()
	}
	return m.Sent(link, num, ttl, at, testWait, untold)
}

func newMatcher(t *testing.T) *matcher {
	t.Helper()
	m := makeMatcher()
	m.AddLink(linkA, peerA)
	m.AddLink(linkB, peerB)
	return m
}

// fake is an address no router of the tests' paths has.
var fake = netip.MustParseAddr("203.0.113.66")

func TestMatchByNumber(t *testing.T) {
	m := newMatcher(t)
	p := Probe{Num: 10, TTL: 2}
	if !m.Sent(linkA, p.Num, int(p.TTL), msec(100), testWait, false) {
		t.Fatal("Sent refused")
	}
	if send(m, linkA, 11, 2, msec(101)) {
		t.Fatal("a second probe in flight at one hop limit was taken")
	}
	if !m.Sent(linkA, 11, 3, msec(101), testWait, false) {
		t.Fatal("a probe at another hop limit was refused")
	}
	if !m.Sent(linkA, 20, 4, msec(102), testWait, true) || m.Sent(linkA, 21, 5, msec(102), testWait, true) {
		t.Fatal("want one untellable probe in flight per link, not two")
	}
	// An answer quoting another number, or this number at another hop
	// limit, is someone else's.
	if _, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(Probe{Num: 9, TTL: 2})), msec(120)); ok {
		t.Fatal("matched an answer quoting probe 9 to probe 10")
	}
	if _, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(Probe{Num: 10, TTL: 3})), msec(121)); ok {
		t.Fatal("matched an answer quoting hop limit 3 to a probe sent with 2")
	}
	o, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(p)), msec(130))
	want := outcome{Link: linkA, Num: 10, TTL: 2, Sent: msec(100), Wait: testWait, RTT: msec(30), Addr: r2}
	if !ok || o != want {
		t.Fatalf("outcome %+v %v, want %+v", o, ok, want)
	}
	if m.InFlight(linkA) != 2 || m.Unmatched() != 2 {
		t.Fatalf("in flight %v, unmatched %d; want the hop-3 and hop-4 probes, 2", m.InFlight(linkA), m.Unmatched())
	}
	// Numbered answers are not forgeable: a new address at a hop is taken
	// from the first of them.
	send(m, linkA, 12, 2, msec(1200))
	if o, ok := m.Answer(linkA, timeExceeded(r3, quotedBody(Probe{Num: 12, TTL: 2})), msec(1210)); !ok || o.Addr != r3 {
		t.Fatalf("a numbered answer from a new address: %+v %v", o, ok)
	}
}

// Routers that quote only the IP header and 8 bytes leave no number. Their
// answer counts for the probe in flight when it comes from the hop's known
// address; a hop's first address, like a new one, takes header-only
// answers to two probes.
func TestMatchHeaderOnly(t *testing.T) {
	m := newMatcher(t)
	send(m, linkA, 1, 1, 0)
	if _, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(2)); ok {
		t.Fatal("a hop's first header-only answer counted")
	}
	if m.InFlight(linkA) == 0 {
		t.Fatal("a held answer ended the probe: a numbered answer could no longer count")
	}
	// The probe is void at its timeout: neither an answer nor a loss.
	if got := m.Timeout(testWait, nil); len(got) != 1 || !got[0].Void || got[0].Lost {
		t.Fatalf("timeouts %+v, want one void", got)
	}
	send(m, linkA, 2, 1, msec(3000))
	if o, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(3002)); !ok || o.TTL != 1 || o.Addr != r1 || o.RTT != msec(2) {
		t.Fatalf("the second answer from r1: %+v %v", o, ok)
	}
	send(m, linkA, 3, 1, msec(4000))
	if o, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(4003)); !ok || o.Addr != r1 || o.RTT != msec(3) {
		t.Fatalf("the known r1: %+v %v", o, ok)
	}
	// A numbered answer is taken even when a header-only one came first.
	send(m, linkA, 4, 2, msec(5000))
	m.Answer(linkA, timeExceeded(fake, nil), msec(5001))
	if o, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(Probe{Num: 4, TTL: 2})), msec(5010)); !ok || o.Addr != r2 || o.RTT != msec(10) {
		t.Fatalf("the numbered answer after a header-only one: %+v %v", o, ok)
	}
}

// A change of a hop's address takes header-only answers from the new one
// to two probes, with none from the known one between.
func TestMatchHeaderOnlyAddressChange(t *testing.T) {
	m := newMatcher(t)
	knowHop(t, m, linkA, 1, r1, 0)
	at := msec(10_000)
	probe := func(num uint32, from netip.Addr) (outcome, bool) {
		at += time.Second
		send(m, linkA, num, 1, at)
		o, ok := m.Answer(linkA, timeExceeded(from, nil), at+msec(1))
		if !ok {
			m.Timeout(at+testWait, nil)
		}
		return o, ok
	}
	if _, ok := probe(10, r3); ok {
		t.Fatal("one answer from a new address changed the hop")
	}
	if o, ok := probe(11, r1); !ok || o.Addr != r1 {
		t.Fatalf("the known router after one other answer: %+v %v", o, ok)
	}
	if _, ok := probe(12, r3); ok {
		t.Fatal("two answers from r3, the known router answering between them, changed the hop")
	}
	if o, ok := probe(13, r3); !ok || o.Addr != r3 {
		t.Fatalf("r3 answering two probes in a row: %+v %v", o, ok)
	}
	if _, ok := probe(14, r1); ok {
		t.Fatal("r1, replaced, counted at once")
	}
}

// A header-only answer that no probe could have drawn — none in flight,
// one answered already, before its send, after its timeout — is a forger's
// surplus: for quietFor the link's header-only answers count for nothing,
// and its probes that draw only those are void, not lost.
func TestMatchHeaderOnlyNeedsAQuietLink(t *testing.T) {
	for name, junk := range map[string]func(m *matcher, at time.Duration){
		"none in flight": func(m *matcher, at time.Duration) { m.Answer(linkA, timeExceeded(r1, nil), at) },
		"a second answer to one probe": func(m *matcher, at time.Duration) {
			send(m, linkA, 50, 1, at)
			m.Answer(linkA, timeExceeded(r1, nil), at+msec(1))
			m.Answer(linkA, timeExceeded(r1, nil), at+msec(2))
		},
		"stamped before its probe": func(m *matcher, at time.Duration) {
			send(m, linkA, 50, 1, at)
			m.Answer(linkA, timeExceeded(r1, nil), at-msec(1))
			m.Timeout(at+testWait, nil)
		},
		"stamped after the timeout": func(m *matcher, at time.Duration) {
			send(m, linkA, 50, 1, at-testWait)
			m.Answer(linkA, timeExceeded(r1, nil), at)
			m.Timeout(at, nil)
		},
		"from a router that quotes": func(m *matcher, at time.Duration) {
			send(m, linkA, 50, 2, at)
			m.Answer(linkA, timeExceeded(r2, nil), at+msec(1))
			m.Timeout(at+testWait, nil)
		},
	} {
		m := newMatcher(t)
		knowHop(t, m, linkA, 1, r1, 0)
		send(m, linkA, 40, 2, msec(10_000))
		m.Answer(linkA, timeExceeded(r2, quotedBody(Probe{Num: 40, TTL: 2})), msec(10_001)) // r2 quotes
		junk(m, msec(20_000))
		at := msec(25_000)
		send(m, linkA, 60, 1, at)
		if o, ok := m.Answer(linkA, timeExceeded(r1, nil), at+msec(1)); ok {
			t.Errorf("%s: r1's header-only answer counted %v after the surplus: %+v", name, at-msec(20_000), o)
		}
		if got := m.Timeout(at+testWait, nil); len(got) != 1 || !got[0].Void {
			t.Errorf("%s: timeouts %+v, want the probe void", name, got)
		}
		// A numbered answer still counts on that link.
		at = msec(28_000)
		send(m, linkA, 61, 2, at)
		if _, ok := m.Answer(linkA, timeExceeded(r2, quotedBody(Probe{Num: 61, TTL: 2})), at+msec(3)); !ok {
			t.Errorf("%s: a numbered answer refused on a link with surplus", name)
		}
		at = msec(20_000) + quietFor + msec(1)
		send(m, linkA, 62, 1, at)
		if o, ok := m.Answer(linkA, timeExceeded(r1, nil), at+msec(1)); !ok || o.Addr != r1 {
			t.Errorf("%s: quietFor later, r1's answer %+v %v, want counted", name, o, ok)
		}
	}
}

// knowHop makes addr the confirmed header-only router at ttl of link, by
// two answers to two probes from at on.
func knowHop(t *testing.T, m *matcher, link Link, ttl int, addr netip.Addr, at time.Duration) {
	t.Helper()
	for i := range 2 {
		sent := at + time.Duration(i)*testWait
		send(m, link, uint32(1000+i), ttl, sent)
		if _, ok := m.Answer(link, timeExceeded(addr, nil), sent+msec(1)); ok != (i == 1) {
			t.Fatalf("answer %d from %v counted %v", i+1, addr, ok)
		}
		m.Timeout(sent+testWait, nil)
		m.Released(sent+testWait, nil)
	}
}

// A hop the link knows at another hop limit answering the probe in flight
// is a late answer to an earlier probe, not this probe's.
func TestMatchHeaderOnlyStale(t *testing.T) {
	m := newMatcher(t)
	knowHop(t, m, linkA, 1, r1, 0)
	send(m, linkA, 3, 3, msec(10_000))
	if _, ok := m.Answer(linkA, timeExceeded(r1, nil), msec(10_001)); ok {
		t.Fatal("matched a known hop-1 router to the hop-3 probe")
	}
	// The other link's probe is not this link's.
	m2 := newMatcher(t)
	send(m2, linkB, 4, 1, 0)
	if _, ok := m2.Answer(linkA, timeExceeded(r1, nil), msec(1)); ok || m2.InFlight(linkB) == 0 {
		t.Fatal("matched across links")
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
		"a local error":            {local, msec(10)},
		"game traffic's answer":    {timeExceeded(r1, game), msec(10)},
		"a numbered answer before": {timeExceeded(r1, quotedBody(Probe{Num: 1, TTL: 1})), msec(4)},
		"a numbered answer late":   {timeExceeded(r1, quotedBody(Probe{Num: 1, TTL: 1})), msec(5) + testWait},
		"the peer's own answer":    {timeExceeded(r1, quotedBody(Probe{Num: 1, TTL: 1}.Reply())), msec(10)},
		"unknown link (no link)":   {timeExceeded(r1, quotedBody(Probe{Num: 1, TTL: 1})), msec(10)},
	} {
		m := newMatcher(t)
		link := linkA
		if name == "unknown link (no link)" {
			link = 99
		}
		send(m, linkA, 1, 1, msec(5))
		if o, ok := m.Answer(link, c.a, c.at); ok || m.Unmatched() != 1 || m.InFlight(linkA) == 0 {
			t.Errorf("%s: matched %+v %v, unmatched %d", name, o, ok, m.Unmatched())
		}
	}
}

func TestPeerAnswers(t *testing.T) {
	m := newMatcher(t)
	p := Probe{Num: 8, TTL: 5}
	send(m, linkA, p.Num, 5, msec(100))
	if _, ok := m.Reply(linkA, p, msec(150)); ok {
		t.Fatal("matched a probe (not an answer) as the peer's reply")
	}
	if _, ok := m.Reply(linkA, Probe{Num: 8, TTL: 4, Answer: true}, msec(150)); ok {
		t.Fatal("matched a reply echoing another ttl")
	}
	if _, ok := m.Reply(linkA, Probe{Num: 7, TTL: 5, Answer: true}, msec(150)); ok {
		t.Fatal("matched a reply echoing another number")
	}
	o, ok := m.Reply(linkA, p.Reply(), msec(160))
	if !ok || !o.Reached || o.Addr != peerA || o.RTT != msec(60) || o.TTL != 5 {
		t.Fatalf("reply: %+v %v", o, ok)
	}
	// The peer's host saying its port is closed, quoting the probe, also
	// ends the path.
	send(m, linkA, 9, 4, msec(200))
	if o, ok := m.Answer(linkA, portUnreachable(peerA, quotedBody(Probe{Num: 9, TTL: 4})), msec(230)); !ok || !o.Reached || o.TTL != 4 {
		t.Fatalf("port unreachable from the peer: %+v %v", o, ok)
	}
	// Without the quote it does not: anyone could have sent it.
	send(m, linkA, 10, 3, msec(300))
	if o, ok := m.Answer(linkA, portUnreachable(peerA, nil), msec(310)); ok {
		t.Fatalf("a header-only port unreachable from the peer ended the path: %+v", o)
	}
	if got := m.Timeout(msec(300)+testWait, nil); len(got) != 1 || !got[0].Void {
		t.Fatalf("timeouts %+v, want the probe void", got)
	}
	// A router's unreachable does not end it either.
	send(m, linkA, 11, 3, msec(3000))
	nu, _ := parseQuoted(recvErr(113, originICMP, 3, 1, r3), quotedBody(Probe{Num: 11, TTL: 3}))
	if o, ok := m.Answer(linkA, nu, msec(3010)); !ok || o.Reached {
		t.Fatalf("host unreachable from a router: %+v %v", o, ok)
	}
}

func TestTimeoutAndNextTimeout(t *testing.T) {
	m := makeMatcher()
	m.AddLink(linkA, peerA)
	m.AddLink(linkB, peerB)
	if _, ok := m.NextTimeout(); ok {
		t.Fatal("a timeout with nothing in flight")
	}
	m.Sent(linkA, 1, 1, msec(100), time.Second, false)
	m.Sent(linkB, 2, 1, msec(300), time.Second, false)
	if at, ok := m.NextTimeout(); !ok || at != msec(1100) {
		t.Fatalf("next timeout %v %v, want 1.1s", at, ok)
	}
	if got := m.Timeout(msec(1099), nil); len(got) != 0 {
		t.Fatalf("timed out early: %+v", got)
	}
	got := m.Timeout(msec(1100), nil)
	if len(got) != 1 || got[0].Link != linkA || !got[0].Lost || got[0].Void {
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

// A counted header-only answer frees the link at once but joins the
// figures only when its probe's time has passed with no surplus on the
// link: the forger's first answer of a flood, landing on a probe in flight
// from the hop's own address, is dropped by the second.
func TestMatchHeaderOnlyHeldUntilItsTimePasses(t *testing.T) {
	for _, surplus := range []bool{false, true} {
		m := newMatcher(t)
		knowHop(t, m, linkA, 1, r1, 0)
		at := msec(20_000)
		send(m, linkA, 7, 1, at)
		o, ok := m.Answer(linkA, timeExceeded(r1, nil), at+msec(1))
		if !ok || !o.Held || m.InFlight(linkA) != 0 {
			t.Fatalf("the known router's answer: %+v %v, in flight %v; want counted, held, the link free", o, ok, m.InFlight(linkA))
		}
		if surplus {
			m.Answer(linkA, timeExceeded(r1, nil), at+msec(2))
		}
		if next, ok := m.NextTimeout(); ok == surplus || (ok && next != at+testWait) {
			t.Fatalf("surplus %v: next %v %v, want the held answer's release at %v unless dropped", surplus, next, ok, at+testWait)
		}
		if got := m.Released(at+testWait-1, nil); len(got) != 0 {
			t.Fatalf("released before its probe's time passed: %+v", got)
		}
		got := m.Released(at+testWait, nil)
		if surplus && (len(got) != 0 || m.Voided() != 1) {
			t.Errorf("with a surplus after it: released %+v, voided %d; want none, 1", got, m.Voided())
		}
		if !surplus && (len(got) != 1 || got[0].Addr != r1 || got[0].RTT != msec(1)) {
			t.Errorf("released %+v, want r1's answer at 1 ms", got)
		}
	}
}
