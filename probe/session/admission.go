package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/lagscope/lagscope/names"
	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe"
)

// challengeLen is the size of the host's Challenge datagram; a Hello must be
// at least this large to be answered, so an unverified (possibly spoofed)
// source never gets a reply larger than its request.
func (s *Session) challengeLen() int {
	n := netcore.HeaderLen + 3 + 8 + netcore.CookieLen
	if len(s.cfg.Key) > 0 {
		n += netcore.SealOverhead
	}
	return n
}

// paddedHello is the Hello's name field: the session layer takes the name
// from the Response (sent by a source that proved it receives), so the
// Hello's name only needs to make the Hello as large as the Challenge. It
// is the name followed by NUL bytes up to MaxNameLen.
func paddedHello(name string) string {
	if len(name) >= netcore.MaxNameLen {
		return name
	}
	return name + strings.Repeat("\x00", netcore.MaxNameLen-len(name))
}

func (s *Session) tickJoin(now time.Duration) {
	if now >= s.joinUntil {
		s.fail(errNoAnswer)
		return
	}
	if now < s.nextHello {
		return
	}
	s.nextHello = now + helloEvery
	role := netcore.RolePlayer
	if s.role == RoleObserver {
		role = netcore.RoleObserver
	}
	var err error
	if s.join == joinHello {
		s.nat.helloAt = now
		err = s.ep.SendHandshake(s.hostAddr, netcore.Hello{Nonce: s.nonce, Role: role, Name: paddedHello(s.cfg.Name)})
	} else {
		err = s.ep.SendHandshake(s.hostAddr, netcore.Response{Nonce: s.nonce, Cookie: s.cookie, Role: role, Key: s.ep.PublicKey(), Name: s.cfg.Name})
	}
	if err != nil {
		s.log.Debug("handshake not sent", "to", s.hostAddr, "err", err)
	}
}

// handshake is the endpoint's hook for handshake records (token 0).
func (s *Session) handshake(now time.Duration, from netip.AddrPort, sender netcore.PeerID, m netcore.HandshakeMsg) {
	if s.done {
		return
	}
	switch m := m.(type) {
	case netcore.Hello:
		s.onHello(now, from, m)
	case netcore.KeylessHello:
		s.onKeylessHello(now, from, m)
	case netcore.Response:
		s.onResponse(now, from, m)
	case netcore.Challenge:
		if s.join != joinHello || from != s.hostAddr || m.Nonce != s.nonce {
			s.rejected.Handshake++
			return
		}
		s.cookie = m.Cookie
		s.join = joinResponse
		s.nat.hostRTT = now - s.nat.helloAt // paces hole punching (punch.go)
		s.nextHello = now                   // answer at once (in tickJoin, after this datagram)
	case netcore.Welcome:
		if (s.join != joinHello && s.join != joinResponse) || from != s.hostAddr || m.Nonce != s.nonce {
			s.rejected.Handshake++
			return
		}
		s.welcomed(now, m)
	case netcore.Refuse:
		if (s.join != joinHello && s.join != joinResponse) || from != s.hostAddr || m.Nonce != s.nonce {
			s.rejected.Handshake++
			return
		}
		cmd := "join"
		if s.role == RoleObserver {
			cmd = "watch"
		}
		s.fail(refusedError{Reason: m.Reason, Host: s.hostAddr, Cmd: cmd})
	default:
		s.rejected.Handshake++
	}
}

func (s *Session) onHello(now time.Duration, from netip.AddrPort, m netcore.Hello) {
	if s.role != roleHost || s.quitting {
		s.rejected.Handshake++
		return
	}
	if !s.budget.fits(s.challengeLen()) {
		// Too small to answer without amplifying a spoofed request.
		s.rejected.Handshake++
		return
	}
	if !s.budget.admit(now, from, false) {
		// Past the reply budget, or this datagram was answered already:
		// silence, before the HMAC (budget.go).
		s.rejected.Handshake++
		return
	}
	c := s.cookieFor(from, m.Nonce, s.epoch(now))
	if err := s.ep.SendHandshake(from, netcore.Challenge{Nonce: m.Nonce, Cookie: c}); err != nil {
		s.log.Debug("challenge not sent", "to", from, "err", err)
		return
	}
	s.budget.Sent++
}

// onKeylessHello answers a joiner that has no key with one plain Refuse
// that says the session needs its code — within the same reply budget as
// a Challenge, and never larger than the Hello it answers.
func (s *Session) onKeylessHello(now time.Duration, from netip.AddrPort, m netcore.KeylessHello) {
	s.rejected.Handshake++ // never a step toward a seat
	if s.role != roleHost || s.quitting {
		return
	}
	r := netcore.Refuse{Nonce: m.Nonce, Reason: netcore.RefuseNeedKey}
	if !s.budget.fits(netcore.HeaderLen+len(netcore.AppendRefuse(s.buf[:0], r))) || !s.budget.admit(now, from, false) {
		return
	}
	if err := s.ep.SendKeylessRefuse(from, r); err != nil {
		s.log.Debug("refusal not sent", "to", from, "err", err)
		return
	}
	s.budget.Sent++
}

func (s *Session) epoch(now time.Duration) uint64 { return uint64(now / cookieEpoch) }

// cookieFor binds a challenge to the joiner's address and nonce and to a
// time epoch, under a secret only the host knows: a Response that carries
// it proves its sender receives at that address.
func (s *Session) cookieFor(from netip.AddrPort, nonce, epoch uint64) [netcore.CookieLen]byte {
	mac := hmac.New(sha256.New, s.secret[:])
	a := from.Addr().As16()
	var b [16 + 2 + 8 + 8]byte
	copy(b[:], a[:])
	le.PutUint16(b[16:], from.Port())
	le.PutUint64(b[18:], nonce)
	le.PutUint64(b[26:], epoch)
	mac.Write(b[:])
	var c [netcore.CookieLen]byte
	copy(c[:], mac.Sum(nil))
	return c
}

func (s *Session) cookieOK(now time.Duration, from netip.AddrPort, nonce uint64, c [netcore.CookieLen]byte) bool {
	e := s.epoch(now)
	for _, ep := range []uint64{e, e - 1} {
		want := s.cookieFor(from, nonce, ep)
		if hmac.Equal(want[:], c[:]) {
			return true
		}
	}
	return false
}

func (s *Session) refuse(to netip.AddrPort, nonce uint64, why netcore.RefuseReason) {
	if err := s.ep.SendHandshake(to, netcore.Refuse{Nonce: nonce, Reason: why}); err != nil {
		s.log.Debug("refusal not sent", "to", to, "err", err)
	}
}

func (s *Session) onResponse(now time.Duration, from netip.AddrPort, m netcore.Response) {
	if s.role != roleHost || s.quitting {
		s.rejected.Handshake++
		return
	}
	if !s.budget.admit(now, from, true) {
		s.rejected.Handshake++ // past the budget: silence, before the HMAC
		return
	}
	if !s.cookieOK(now, from, m.Nonce, m.Cookie) {
		// A Refuse is smaller than any Response, so answering an
		// unverified source cannot amplify; fits holds that rule even so.
		s.rejected.Handshake++
		r := netcore.Refuse{Nonce: m.Nonce, Reason: netcore.RefuseBadCookie}
		if s.budget.fits(s.replySize(netcore.AppendRefuse(s.buf[:0], r))) {
			s.refuse(from, m.Nonce, netcore.RefuseBadCookie)
			s.budget.Sent++
		}
		return
	}
	// From here on the source is verified: it received our Challenge.
	for _, o := range s.members {
		if o.ID == s.self || o.removed || o.Addr != from {
			continue
		}
		if o.nonce == m.Nonce {
			s.welcome(from, o) // our Welcome was lost: the same answer again
			return
		}
		if s.started && !o.Observer {
			s.refuse(from, m.Nonce, netcore.RefuseStarted)
			return
		}
		if s.started {
			s.forgetObserver(o, "restarted")
			continue
		}
		// The same address with a new attempt: the old process is gone.
		s.log.Info("machine restarted at the same address", "player", o.Name, "addr", from)
		s.dropMember(now, o, "restarted")
	}
	observer := m.Role == netcore.RoleObserver
	switch {
	case s.started && !observer:
		// A lockstep game cannot take a player without its state; a
		// watcher follows from a snapshot (watch.go).
		s.refuse(from, m.Nonce, netcore.RefuseStarted)
		return
	case checkName(m.Name) != nil:
		s.refuse(from, m.Nonce, refuseBadName)
		return
	case s.nameTaken(m.Name):
		s.refuse(from, m.Nonce, refuseNameTaken)
		return
	case !observer && s.seated() >= s.need, observer && s.observers() >= maxObservers,
		s.nextID == netcore.PeerUnassigned:
		s.refuse(from, m.Nonce, netcore.RefuseFull)
		return
	}
	id := s.nextID
	if err := s.ep.AddLink(now, id, from, m.Key); err != nil {
		// A sealing host needs the joiner's identity to open its link.
		s.rejected.Handshake++
		s.log.Warn("cannot open link", "addr", from, "err", err)
		return
	}
	s.nextID++
	nm := &member{Member: probe.Member{ID: id, Name: m.Name, Addr: from, Observer: observer, Key: m.Key},
		linked: true, lastHeard: now, nonce: m.Nonce, late: s.started}
	s.addMember(nm)
	s.welcome(from, nm)
	what := "joined"
	if observer {
		what = "is watching"
	}
	if nm.late {
		s.message(fmt.Sprintf("%s is watching from frame %d", m.Name, s.Frame()))
		s.log.Info("late watcher", "watcher", m.Name, "id", id, "addr", from, "frame", s.Frame())
		s.rosterChanged(now)
		s.sendRoster(now, nm)
		s.admitLate(now, nm)
		return
	}
	s.message(fmt.Sprintf("%s %s (%d of %d players seated)", m.Name, what, s.seated(), s.need))
	s.log.Info("joined", "player", m.Name, "id", id, "addr", from, "observer", observer)
	s.rosterChanged(now)
}

func (s *Session) welcome(to netip.AddrPort, m *member) {
	if err := s.ep.SendHandshake(to, netcore.Welcome{Nonce: m.nonce, Peer: m.ID, Token: s.token, Key: s.ep.PublicKey()}); err != nil {
		s.log.Debug("welcome not sent", "to", to, "err", err)
	}
}

// nameTaken compares by names.Key, so a look-alike (fullwidth `Ｂｏｂ` beside
// `bob`, Cyrillic `аlice` beside `alice`) is refused as taken, so no one
// can pass for another player.
func (s *Session) nameTaken(name string) bool {
	k := names.Key(name)
	for _, m := range s.members {
		if !m.removed && names.Key(m.Name) == k {
			return true
		}
	}
	return false
}

func (s *Session) seated() int {
	n := 0
	for _, m := range s.members {
		if !m.Observer && !m.removed {
			n++
		}
	}
	return n
}

func (s *Session) observers() int {
	n := 0
	for _, m := range s.members {
		if m.Observer && !m.removed {
			n++
		}
	}
	return n
}

// welcomed: the joiner has its place in the session.
func (s *Session) welcomed(now time.Duration, w netcore.Welcome) {
	if err := s.ep.Rebind(w.Peer, w.Token); err != nil {
		s.fail(fmt.Errorf("live: cannot take the session's identity: %w", err))
		return
	}
	s.join = joinWelcomed
	s.self, s.token = w.Peer, w.Token
	host := &member{Member: probe.Member{ID: hostID, Addr: s.hostAddr, Key: w.Key}, lastHeard: now}
	s.addMember(host)
	if err := s.ep.AddLink(now, hostID, s.hostAddr, w.Key); err != nil {
		s.fail(err)
		return
	}
	host.linked = true
	s.membersChanged()
	s.nextPing = now
	s.log.Info("welcomed", "id", w.Peer, "session", s.SessionName())
	s.message(fmt.Sprintf("Joined session %s as %s", s.SessionName(), s.cfg.Name))
}

// isJoinError: err is one of the ways a join or the lobby ends badly for
// a joiner, all of them about the host (Session.Err names it).
func isJoinError(err error) bool {
	var re refusedError
	for _, e := range []error{errNoAnswer, errNotJoined, errHostLeft, errLostHost, errDropped} {
		if errors.Is(err, e) {
			return true
		}
	}
	return errors.As(err, &re)
}

// joinError is a joiner's error with the host's address, so every line a
// failed join prints says where it tried. A refusal because the game has
// started says how to see the game instead: watchers are let in at any
// time (with the --key the command line gave, if any; a key file is
// read by watch too).
type joinError struct {
	err    error
	host   netip.AddrPort
	keyArg string
}

func (e joinError) Error() string {
	var re refusedError
	if errors.As(e.err, &re) {
		switch re.Reason {
		case netcore.RefuseNeedKey:
			return re.Error() // names the address in the line to type
		case netcore.RefuseStarted:
			watch := "lagscope watch " + e.host.String()
			if e.keyArg != "" {
				watch += " --key " + shellWord(e.keyArg)
			}
			return "the game at " + e.host.String() + " has started — `" + watch + "` shows it"
		}
	}
	return e.host.String() + ": " + e.err.Error()
}

func (e joinError) Unwrap() error { return e.err }

// shellWord is s as one word a shell reads back as s: as it is when it
// holds nothing a shell treats specially, else in single quotes.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/=+@%", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
