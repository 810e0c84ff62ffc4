package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/session"
)

// Load-test attacks on a live session with real processes on network
// namespaces, measured with the kernel's own counters (docs/security.md,
// "Load tests"; the forger is cmd_netns_loadforge_linux_test.go).

// laAlice is the victim of the forged requests: a player whose address
// the forger spoofs and whose load the forger asks the host for.
var laAlice = netip.MustParseAddrPort("198.51.100.12:7373")

// Forged datagrams of each kind in the forged-request test.
const forgeEach = 20

// TestNetnsForgedLoadRequests_Q7: no one can make a member send load that
// its tester did not ask for, with real processes (the host ada and the
// player alice run `lagscope`) and the kernel's counters. mallory is a
// real watcher of the session (keyed: a holder of the code; open: a
// stranger, who needs none to watch) and holds every key it has as a
// member (forgeSocket). It asks ada to load alice, 20 times each way:
//
//   - as alice, from alice's address, with alice's sealing instance and a
//     fresh counter: sealed under the key mallory shares with ada; sealed
//     under the handshake key every code holder derives for alice (keyed);
//     plain, as an open session sent it before every link had keys;
//   - as itself, from alice's address (sealed under its own key);
//   - as itself, over its own link: a watcher's request, and claims of the
//     host's turn, for itself and for alice.
//
// Before that, over its own link, 600 load datagrams of 14 bytes and 470
// pace commands asking for 14-byte load datagrams.
//
// The kernel's counters in ada's namespace see no load-sized datagram
// (1064 bytes or more on the path) toward alice or mallory, nor does
// alice's namespace see one arrive; ada answers none of the 14-byte ones
// (its datagrams to mallory while they arrive are within 10 % of them of
// its rate before); and ada's summary counts every forgery: as alice
// under rejected.auth, from alice's address as mallory under
// rejected.sender, the rest under rejected.load, with one message line
// for the watcher's refusals, none about alice.
func TestNetnsForgedLoadRequests_Q7(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		t.Skip("network-namespace test: set " + netnsEnv + "=1 (needs root, iproute2 and nftables)")
	}
	bin := buildLagscope(t)
	t.Run("keyed", func(t *testing.T) {
		t.Parallel()
		runForgedLoad(t, bin, true)
	})
	t.Run("open", func(t *testing.T) {
		t.Parallel()
		runForgedLoad(t, bin, false)
	})
}

// startForger attaches mallory as a watcher over f, with an identity the
// test drew, and returns its keys once it follows the game.
func startForger(t *testing.T, f *forgeSocket, psk []byte) (*malRun, malKeys) {
	t.Helper()
	seed := make([]byte, 40) // the instance (8) and the X25519 private key (32) its endpoint draws first
	rand.Read(seed)
	cfg := session.Config{Key: psk}
	cfg.Net.Rand = io.MultiReader(bytes.NewReader(seed), rand.Reader)
	mal := startMalloryWith(t, f, cfg)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if slices.ContainsFunc(mal.of("message"), func(m ndjson) bool {
			return strings.HasPrefix(m.str("text"), "Watching a game in progress from frame")
		}) && f.rate() > 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("mallory did not follow the game within 30 s: %v", mal.of("message"))
		}
	}
	return mal, f.keys(t, seed, psk)
}

func runForgedLoad(t *testing.T, bin string, keyed bool) {
	began := time.Now()
	prefix := "fo"
	if keyed {
		prefix = "fk"
	}
	n := newNetns(t, prefix, false, "ip", "nft")
	ns := n.flatLAN(map[string]netip.Addr{"h": atkHost.Addr(), "a": laAlice.Addr(), "m": atkMal.Addr()})
	a, m := laAlice.Addr().String(), atkMal.Addr().String()
	// Load-sized: a UDP payload of loadOnPath bytes or more.
	big := fmt.Sprint(loadOnPath + 8)
	n.nft(ns["h"], "count", `table ip lf {
	counter toalice { }
	counter toaliceload { }
	counter tomal { }
	counter tomalload { }
	chain out {
		type filter hook output priority 0;
		ip daddr `+a+` counter name toalice;
		ip daddr `+a+` udp length >= `+big+` counter name toaliceload;
		ip daddr `+m+` counter name tomal;
		ip daddr `+m+` udp length >= `+big+` counter name tomalload;
	}
}
`)
	n.nft(ns["a"], "count", `table ip lf {
	counter rx { }
	counter rxload { }
	chain pre {
		type filter hook prerouting priority -300;
		ip daddr `+a+` counter name rx;
		ip daddr `+a+` udp length >= `+big+` counter name rxload;
	}
}
`)
	n.nft(ns["m"], "count", `table ip lf {
	counter spoofed { }
	counter rxload { }
	chain out { type filter hook output priority 0; ip saddr `+a+` counter name spoofed; }
	chain pre { type filter hook prerouting priority -300; udp length >= `+big+` counter name rxload; }
}
`)
	hostCount := newNftReader(t, ns["h"], "lf")
	aliceCount := newNftReader(t, ns["a"], "lf")
	malCount := newNftReader(t, ns["m"], "lf")

	cfg := t.TempDir()
	hostArgs := []string{"host", "--name", "ada", "--listen", atkHost.String(), "--players", "2", "--json", "--duration", "150s"}
	if !keyed {
		hostArgs = append(hostArgs, "--open")
	}
	host := nsProc(t, bin, cfg, ns["h"], "ada", hostArgs...)
	hostAddr(t, host)
	var psk []byte
	var keyArgs []string
	if keyed {
		code := joinCode(t, host)
		psk, keyArgs = []byte(code), []string{"--key", code}
	}
	alice := nsProc(t, bin, cfg, ns["a"], "alice", append([]string{"join", atkHost.String(), "--bind", laAlice.String(),
		"--name", "alice", "--json", "--duration", "150s"}, keyArgs...)...)
	alice.waitFor("frame 60", 30*time.Second, func([]ndjson) bool { return lastFrame(alice).frame >= 60 })

	f := newForgeSocket(t, ns["m"], atkHost, laAlice)
	mal, k := startForger(t, f, psk)
	aliceID, aliceInst, aliceCtr := senderOnWire(t, ns["a"], laAlice, atkHost)
	t.Logf("mallory is PeerID %d, alice %d (instance %#x, counter %d on the wire); mallory's session seals %.1f datagrams a second for ada",
		k.self, aliceID, aliceInst, aliceCtr, f.rate())
	start := map[string]map[string]nftCount{}
	read := func(into map[string]map[string]nftCount) {
		for name, r := range map[string]*nftReader{"h": hostCount, "a": aliceCount, "m": malCount} {
			c, err := r.read()
			if err != nil {
				t.Fatal(err)
			}
			into[name] = c
		}
	}
	read(start)

	// What ada sends mallory while nothing is forged: the rate the
	// 14-byte forgeries are judged against.
	q0 := time.Now()
	time.Sleep(3 * time.Second)
	quiet := map[string]map[string]nftCount{}
	read(quiet)
	qAt := time.Now()
	quietRate := float64(quiet["h"]["tomal"].packets-start["h"]["tomal"].packets) / qAt.Sub(q0).Seconds()

	// 1. 14-byte load datagrams and paces asking for them, over mallory's
	// own link, many to a datagram.
	own := netcore.Header{Token: k.token, Sender: k.self, Channel: netcore.ChannelControl}
	var tiny, paces [][]byte
	for i := range 60 {
		tiny = append(tiny, tinyLoad(randomID(), uint32(i+1)))
	}
	for range 47 {
		paces = append(paces, loadPace(randomID(), randomID(), 14))
	}
	tinyBody, paceBody := keepAlives(tiny...), keepAlives(paces...)
	f.queue("tiny load", false, 10, func(inst, ctr uint64) []byte { return sealDatagram(k.hostKey, own, inst, ctr, tinyBody) })
	f.queue("tiny pace", false, 10, func(inst, ctr uint64) []byte { return sealDatagram(k.hostKey, own, inst, ctr, paceBody) })
	f.drained(t, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // ada's answers, were there any, are on the wire
	tinyEnd := map[string]map[string]nftCount{}
	read(tinyEnd)
	span := time.Since(qAt)
	_, t0, _ := f.count("tiny load")
	_, _, t1 := f.count("tiny pace")
	nTiny := 10*len(tiny) + 10*len(paces)
	during := float64(tinyEnd["h"]["tomal"].packets - quiet["h"]["tomal"].packets)
	excess := during - quietRate*span.Seconds()
	t.Logf("%d 14-byte load-test messages in 20 datagrams over %v: ada sent mallory %.0f datagrams in the %v since its quiet reading (%.1f a second before them), %.0f beyond its rate",
		nTiny, t1.Sub(t0).Round(time.Millisecond), during, span.Round(time.Millisecond), quietRate, excess)
	if excess > float64(nTiny)/10 {
		t.Errorf("ada sent mallory %.0f datagrams beyond its rate while %d 14-byte load messages arrived: it answers them", excess, nTiny)
	}

	// 2. Requests for load toward alice, and claims of the turn.
	// Each request comes with pace commands for its test, as a tester's
	// would: the download hold at the cap, with a guessed nonce.
	reqAs := func() []byte {
		id := randomID()
		return keepAlives(loadRequest(id), loadPace(id, randomID(), 1336), loadPace(id, randomID(), 1336))
	}
	asAlice := netcore.Header{Token: k.token, Sender: aliceID, Channel: netcore.ChannelControl}
	var hsKey []byte
	if keyed {
		hsKey = handshakeKey(t, psk, aliceID, aliceInst)
	}
	f.queue("mallory from alice's address", true, forgeEach, func(inst, ctr uint64) []byte {
		return sealDatagram(k.hostKey, own, inst, ctr, reqAs())
	})
	f.queue("watcher's request", false, forgeEach, func(inst, ctr uint64) []byte {
		return sealDatagram(k.hostKey, own, inst, ctr, reqAs())
	})
	f.queue("claims", false, forgeEach, func(inst, ctr uint64) []byte {
		return sealDatagram(k.hostKey, own, inst, ctr, keepAlives(turnClaim(randomID(), k.self, wireHostID), turnClaim(randomID(), aliceID, wireHostID)))
	})
	ctr := aliceCtr + 1_000_000 // ahead of anything alice sends in the test
	for range forgeEach {
		ctr++
		f.fromSpoofed("alice, mallory's key", sealDatagram(k.hostKey, asAlice, aliceInst, ctr, reqAs()))
		if keyed {
			ctr++
			f.fromSpoofed("alice, the handshake key", sealDatagram(hsKey, asAlice, aliceInst, ctr, reqAs()))
		}
		f.fromSpoofed("alice, plain", plainDatagram(asAlice, reqAs()))
		time.Sleep(100 * time.Millisecond)
	}
	f.drained(t, 30*time.Second)
	time.Sleep(3 * time.Second) // anything the forgeries drew has come
	end := map[string]map[string]nftCount{}
	read(end)
	mal.stop(t)
	f.close()
	for _, p := range []*proc{host, alice} {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range []*proc{host, alice} {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after Ctrl-C: %s", p.name, code, p.stderr.String())
		}
	}

	sent := map[string]int{}
	for _, kind := range []string{"alice, mallory's key", "alice, the handshake key", "alice, plain", "mallory from alice's address", "watcher's request", "claims"} {
		sent[kind], _, _ = f.count(kind)
	}
	t.Logf("forged datagrams sent: %v; %d left mallory's namespace from alice's address",
		sent, end["m"]["spoofed"].packets-start["m"]["spoofed"].packets)
	if got := int(end["m"]["spoofed"].packets - start["m"]["spoofed"].packets); got != sent["alice, mallory's key"]+sent["alice, the handshake key"]+sent["alice, plain"]+sent["mallory from alice's address"] {
		t.Errorf("%d datagrams left from alice's address, the forger sent %v", got, sent)
	}
	delta := func(ns, name string) nftCount {
		return nftCount{end[ns][name].packets - start[ns][name].packets, end[ns][name].bytes - start[ns][name].bytes}
	}
	t.Logf("from mallory's attach on, %v: ada sent alice %d datagrams (%d bytes), %d of them load-sized; alice received %d, %d load-sized; ada sent mallory %d datagrams (%d bytes), %d load-sized; mallory received %d load-sized",
		time.Since(began).Round(time.Second), delta("h", "toalice").packets, delta("h", "toalice").bytes, delta("h", "toaliceload").packets,
		delta("a", "rx").packets, delta("a", "rxload").packets, delta("h", "tomal").packets, delta("h", "tomal").bytes,
		delta("h", "tomalload").packets, delta("m", "rxload").packets)
	for _, c := range []struct{ ns, name, what string }{
		{"h", "toaliceload", "ada sent alice"}, {"a", "rxload", "alice received"},
		{"h", "tomalload", "ada sent mallory"}, {"m", "rxload", "mallory received"},
	} {
		if got := delta(c.ns, c.name); got.packets != 0 {
			t.Errorf("%s %d load-sized datagrams (%d bytes)", c.what, got.packets, got.bytes)
		}
	}

	// What ada sent mallory from the quiet reading on, opened: no answer,
	// echo, report or load of a test, only a busy grant for some claims
	// of mallory's own (a grant is no larger than its claim).
	kinds, grants, heardN := f.hostMessages(t, k, q0)
	t.Logf("ada's %d datagrams to mallory from the quiet reading on carry load-test and turn messages by kind %v, grants by flag %v",
		heardN, kinds, grants)
	for kind, c := range kinds {
		if kind != kindTurnGrant {
			t.Errorf("ada sent mallory %d load-test messages of kind %#x", c, kind)
		}
	}
	if grants[0] != kinds[kindTurnGrant] || grants[0] > sent["claims"] {
		t.Errorf("ada sent mallory grants %v for %d claims of its own: want only busy ones, at most one a claim", grants, sent["claims"])
	}

	// ada counted every forgery, and said so once.
	sums := host.of("summary")
	if len(sums) != 1 {
		t.Fatalf("ada printed %d summaries", len(sums))
	}
	rej, _ := sums[0]["rejected"].(map[string]any)
	num := func(k string) int { v, _ := rej[k].(float64); return int(v) }
	t.Logf("ada rejected: %v", rej)
	asAliceSent := sent["alice, mallory's key"] + sent["alice, the handshake key"] + sent["alice, plain"]
	if num("auth") < asAliceSent {
		t.Errorf("ada's rejected.auth is %d, want at least the %d datagrams forged as alice's", num("auth"), asAliceSent)
	}
	if num("sender") < sent["mallory from alice's address"] {
		t.Errorf("ada's rejected.sender is %d, want at least the %d of mallory's from alice's address", num("sender"), sent["mallory from alice's address"])
	}
	if want := nTiny + sent["watcher's request"] + 2*sent["claims"]; num("load") < want {
		t.Errorf("ada's rejected.load is %d, want at least %d (%d 14-byte messages, %d requests and %d claims of a watcher's)",
			num("load"), want, nTiny, sent["watcher's request"], 2*sent["claims"])
	}
	refusals := 0
	for _, msg := range host.of("message") {
		text := msg.str("text")
		switch {
		case strings.HasPrefix(text, "Load test from mallory refused"):
			refusals++
			t.Logf("ada: %s", text)
		case strings.Contains(text, "alice refused"), strings.Contains(strings.ToLower(text), "load test to alice"):
			t.Errorf("ada: %q", text)
		}
	}
	// The watcher's requests and claims come within 10 s of each other:
	// one episode.
	if refusals != 1 {
		t.Errorf("ada showed %d refusal lines for mallory's requests, want 1", refusals)
	}
	for _, p := range []*proc{host, alice} {
		if l := p.of("load"); len(l) != 0 {
			t.Errorf("%s printed load events: %v", p.name, l)
		}
	}
	t.Logf("run took %v", time.Since(began).Round(time.Second))
}

// laWatch is the watcher that runs `lagscope watch --load-test`.
var laWatch = netip.MustParseAddrPort("198.51.100.40:7373")

// loadBound is the most one end of a test sends at the default cap, UDP
// payload bytes (docs/load-test.md, "Consent and bounds": its cap for
// 13 s of load, on the path): 81.25 MB.
const loadBound = loadCap50 / 8 * 13

// TestNetnsLoadTestTurnAndBound_Q7: a watcher neither runs a load test nor
// keeps a player's from running, and a complete test sends each way at
// most what docs/load-test.md bounds it to, with real processes (keyed:
// the host ada, the player bob with --load-test ada, and w, a `lagscope
// watch --load-test bob`) and the kernel's counters. mallory, a real
// watcher holding the code (forgeSocket), claims the host's turn four
// times a second from its attach until bob's test is over: for itself
// toward ada and toward bob, and as ada.
//
// w's machine says it runs no test and asks for nothing: nothing
// load-sized enters or leaves w's namespace, and ada shows no refusal of
// w's. ada refuses every claim of mallory's, counts each under
// rejected.load, answers only busy, one grant a datagram of three claims
// at most (opened with mallory's key), and shows one line an episode;
// nothing load-sized reaches mallory. bob's test runs once the game has
// run 15 s, as with nobody claiming, and completes; the counters in bob's
// namespace, read every 100 ms, see its load flow for at most 25 s and
// at most 81.25 MB (UDP payload) each way.
func TestNetnsLoadTestTurnAndBound_Q7(t *testing.T) {
	began := time.Now()
	n := newNetns(t, "lt", false, "ip", "nft")
	ns := n.flatLAN(map[string]netip.Addr{"h": atkHost.Addr(), "b": atkBob.Addr(), "w": laWatch.Addr(), "m": atkMal.Addr()})
	h, b := atkHost.Addr().String(), atkBob.Addr().String()
	big := fmt.Sprint(loadOnPath + 8)
	n.nft(ns["b"], "count", `table ip lb {
	counter up { }
	counter down { }
	chain out { type filter hook output priority 0; ip daddr `+h+` udp length >= `+big+` counter name up; }
	chain pre { type filter hook prerouting priority -300; ip daddr `+b+` ip saddr `+h+` udp length >= `+big+` counter name down; }
}
`)
	for _, x := range []string{"w", "m"} {
		n.nft(ns[x], "count", `table ip lb {
	counter rxload { }
	counter txload { }
	chain out { type filter hook output priority 0; udp length >= `+big+` counter name txload; }
	chain pre { type filter hook prerouting priority -300; udp length >= `+big+` counter name rxload; }
}
`)
	}
	bobCount := newNftReader(t, ns["b"], "lb")
	wCount := newNftReader(t, ns["w"], "lb")
	malCount := newNftReader(t, ns["m"], "lb")

	bin := buildLagscope(t)
	cfg := t.TempDir()
	host := nsProc(t, bin, cfg, ns["h"], "ada", "host", "--name", "ada", "--listen", atkHost.String(), "--players", "2", "--json", "--duration", "150s")
	hostAddr(t, host)
	code := joinCode(t, host)
	// w waits in the lobby and sees the game start; its --load-test would
	// start 15 s later.
	w := nsProc(t, bin, cfg, ns["w"], "w", "watch", atkHost.String(), "--key", code, "--bind", laWatch.String(), "--name", "w",
		"--json", "--duration", "150s", "--load-test", "bob")
	w.waitFor("its lobby", 15*time.Second, hasType("roster"))
	bob := nsProc(t, bin, cfg, ns["b"], "bob", "join", atkHost.String(), "--key", code, "--bind", atkBob.String(), "--name", "bob",
		"--json", "--duration", "150s", "--load-test", "ada")
	bob.waitFor("frame 60", 30*time.Second, func([]ndjson) bool { return lastFrame(bob).frame >= 60 })
	counts := startNftSampler(t, 100*time.Millisecond, 100*time.Second, bobCount, wCount, malCount)

	f := newForgeSocket(t, ns["m"], atkHost, netip.AddrPort{})
	mal, k := startForger(t, f, []byte(code))
	bobID, _, _ := senderOnWire(t, ns["b"], atkBob, atkHost)
	claimsFrom := time.Now()
	own := netcore.Header{Token: k.token, Sender: k.self, Channel: netcore.ChannelControl}
	claims := func(inst, ctr uint64) []byte {
		return sealDatagram(k.hostKey, own, inst, ctr, keepAlives(turnClaim(randomID(), k.self, wireHostID),
			turnClaim(randomID(), k.self, bobID), turnClaim(randomID(), wireHostID, k.self)))
	}
	loaded := func(es []ndjson) bool {
		return slices.ContainsFunc(es, func(e ndjson) bool { return e.str("type") == "load" })
	}
	for end := time.Now().Add(90 * time.Second); !loaded(bob.events()); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("bob printed no load event within 90 s of mallory's attach: %v", bob.of("message"))
		}
		f.queue("claims", false, 1, claims)
	}
	// Two seconds more: claims after the test, when the turn is free.
	for range 8 {
		f.queue("claims", false, 1, claims)
		time.Sleep(250 * time.Millisecond)
	}
	f.drained(t, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	samples, late, err := counts.taken()
	if err != nil {
		t.Fatal(err)
	}
	mal.stop(t)
	f.close()
	for _, p := range []*proc{host, bob, w} {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range []*proc{host, bob, w} {
		if code := p.exit(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after Ctrl-C: %s", p.name, code, p.stderr.String())
		}
	}
	nClaims, _, _ := f.count("claims")

	// bob's test ran to its end.
	loads := bob.of("load")
	if len(loads) != 1 {
		t.Fatalf("bob printed %d load events: %v", len(loads), loads)
	}
	l := loads[0]
	up, _ := l["upload"].(map[string]any)
	down, _ := l["download"].(map[string]any)
	t.Logf("bob's test: %v", l)
	if l.str("from") != "bob" || l.str("to") != "ada" || l["stopped"] != nil || up["mbps"] == nil || down["mbps"] == nil {
		t.Fatalf("bob's test did not complete: %v", l)
	}
	var startMs float64 = -1
	for _, m := range bob.of("message") {
		if strings.HasPrefix(m.str("text"), "The game starts") {
			startMs = m.num("t_ms")
		}
	}
	// The test asks 15 s into the game and takes at most 25 s: had the
	// turn been held, a --load-test test would wait for up to a minute.
	took := (l.num("t_ms") - startMs) / 1000
	t.Logf("bob's test ended %.1f s after the game started", took)
	if startMs < 0 || took > 15+25+5 {
		t.Errorf("bob's test ended %.1f s after the game's start, want by 15 s + 25 s (+5 s)", took)
	}

	// Each way within the bound, and the load flowed 25 s at most.
	first, last := samples[0].counts[ns["b"]], samples[len(samples)-1].counts[ns["b"]]
	var flowFrom, flowTo time.Time
	for i := 1; i < len(samples); i++ {
		a, z := samples[i-1].counts[ns["b"]], samples[i].counts[ns["b"]]
		if a["up"].packets != z["up"].packets || a["down"].packets != z["down"].packets {
			if flowFrom.IsZero() {
				flowFrom = samples[i-1].at
			}
			flowTo = samples[i].at
		}
	}
	upB := nftCount{last["up"].packets - first["up"].packets, last["up"].bytes - first["up"].bytes}
	downB := nftCount{last["down"].packets - first["down"].packets, last["down"].bytes - first["down"].bytes}
	t.Logf("load-sized datagrams in bob's namespace: up %d (%.2f MB of UDP payload), down %d (%.2f MB), the bound %.2f MB each way; flowing for at most %v (readings every 100 ms, the latest %v late)",
		upB.packets, float64(upB.payload())/1e6, downB.packets, float64(downB.payload())/1e6, float64(loadBound)/1e6,
		flowTo.Sub(flowFrom).Round(time.Millisecond), late.Round(time.Millisecond))
	if upB.payload() > loadBound || downB.payload() > loadBound {
		t.Errorf("bob's test sent %d bytes up and %d down, over the bound of %d each way", upB.payload(), downB.payload(), loadBound)
	}
	if upB.packets == 0 || downB.packets == 0 {
		t.Errorf("the counters saw no load one way: up %d, down %d datagrams", upB.packets, downB.packets)
	}
	if d := flowTo.Sub(flowFrom); d > 25*time.Second+200*time.Millisecond {
		t.Errorf("bob's test's load flowed for %v, over the 25 s a test lasts", d)
	}

	// The watchers: nothing load-sized, w asked for nothing, mallory was
	// refused and counted.
	for _, x := range []string{"w", "m"} {
		a, z := samples[0].counts[ns[x]], samples[len(samples)-1].counts[ns[x]]
		if rx, tx := z["rxload"].packets-a["rxload"].packets, z["txload"].packets-a["txload"].packets; rx != 0 || tx != 0 {
			t.Errorf("%s's namespace: %d load-sized datagrams in, %d out", x, rx, tx)
		}
	}
	said := false
	for _, m := range w.of("message") {
		if strings.HasPrefix(m.str("text"), "No load test from a watcher") {
			said = true
			t.Logf("w: %s", m.str("text"))
		}
	}
	if !said {
		t.Errorf("w did not say it runs no load test: %v", w.of("message"))
	}
	// A watcher runs no test of its own; it is told of the players' tests
	// as every machine is, so the load lines it prints are bob's.
	for _, l := range w.of("load") {
		if l.str("from") != "bob" {
			t.Errorf("w printed a load event of a test not bob's: %v", l)
		}
	}
	kinds, grants, heardN := f.hostMessages(t, k, claimsFrom)
	t.Logf("mallory sent %d datagrams of 3 claims each; ada's %d datagrams to it since carry load-test and turn messages by kind %v, grants by flag %v",
		nClaims, heardN, kinds, grants)
	for kind, c := range kinds {
		if kind != kindTurnGrant {
			t.Errorf("ada sent mallory %d load-test messages of kind %#x", c, kind)
		}
	}
	// Three claims to a datagram draw one answer at most: never more
	// datagrams, nor more bytes, than came in.
	if grants[0] != kinds[kindTurnGrant] || grants[0] > nClaims {
		t.Errorf("ada sent mallory grants %v for %d datagrams of claims: want only busy ones, at most one a datagram", grants, nClaims)
	}
	sums := host.of("summary")
	if len(sums) != 1 {
		t.Fatalf("ada printed %d summaries", len(sums))
	}
	rej, _ := sums[0]["rejected"].(map[string]any)
	t.Logf("ada rejected: %v", rej)
	if got, _ := rej["load"].(float64); int(got) < 3*nClaims {
		t.Errorf("ada's rejected.load is %v, want at least the %d claims mallory sent", got, 3*nClaims)
	}
	lines := 0
	for _, m := range host.of("message") {
		text := m.str("text")
		switch {
		case strings.HasPrefix(text, "Load test from mallory refused"):
			lines++
		case strings.HasPrefix(text, "Load test from w"), strings.HasPrefix(text, "Load test from bob"):
			t.Errorf("ada: %q", text)
		}
	}
	// One line an episode: the claims come every 250 ms, so a new episode
	// only once the last is 10 s old.
	span := time.Since(claimsFrom)
	t.Logf("ada showed %d refusal lines for mallory's claims over %v", lines, span.Round(time.Second))
	if lines == 0 || float64(lines) > span.Seconds()/10+1 {
		t.Errorf("ada showed %d refusal lines for %d claims in %v: want one an episode of 10 s", lines, 3*nClaims, span.Round(time.Second))
	}
	t.Logf("run took %v", time.Since(began).Round(time.Second))
}
