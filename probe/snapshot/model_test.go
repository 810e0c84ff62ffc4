package snapshot

import (
	"math/rand/v2"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

// A session model for measuring the telemetry's size: players with links
// to every other player, stepped once per update interval (100 ms: the
// telemetry goes out at most 10 times a second). Counters grow as they do on a live peer and
// round trips move through the real estimator (netcore.Estimator, T3, T7,
// T10), fed clean samples with jitter.
type scenario struct {
	name          string
	players       int
	rtt           [2]time.Duration // each link's base round trip, drawn in this range
	jitter        time.Duration    // ± per sample
	samplePerTick float64          // chance a link takes a clean sample between updates
	loss          float64          // inbound datagram loss
}

// Rates per link per 100 ms, from the protocol at 30 fps, send period 2:
// 15 frame packets and 10 snapshot datagrams a second arrive (every one
// numbered, L2); about 1.5 reliable datagrams a second leave (a command a
// second, reports every 128 frames, the odd resend); LinkReports arrive
// once a second (L4); reports every 128 frames ≈ 43 updates (S5).
const (
	inboundPerTick  = 2.5
	reliablePerTick = 0.15
	resendPerTick   = 0.01
	reportTicks     = 10
	playerReport    = 43
	framesPerTick   = 3
)

var scenarios = []scenario{
	// A LAN party: round trips of a few ms, so RTO and the connection
	// timeout sit on their floors (T7, T10) and only SRTT and RTTVAR move.
	{name: "lan", players: 8, rtt: [2]time.Duration{time.Millisecond, 4 * time.Millisecond}, jitter: 500 * time.Microsecond, samplePerTick: reliablePerTick, loss: 0.001},
	// An internet session: RTO follows SRTT, and 1 % loss.
	{name: "internet", players: 8, rtt: [2]time.Duration{30 * time.Millisecond, 150 * time.Millisecond}, jitter: 10 * time.Millisecond, samplePerTick: reliablePerTick, loss: 0.01},
	// The worst case: a clean sample on every link before every update,
	// so SRTT, RTTVAR and RTO change every time.
	{name: "jittery", players: 8, rtt: [2]time.Duration{30 * time.Millisecond, 150 * time.Millisecond}, jitter: 20 * time.Millisecond, samplePerTick: 1, loss: 0.02},
}

type modelLink struct {
	peer     int
	base     time.Duration
	est      netcore.Estimator
	loss     netcore.Loss
	peerLoss netcore.PeerLoss
	caused   time.Duration
}

type modelPlayer struct {
	links   []modelLink
	tel     Telemetry
	waited  time.Duration
	wait    *time.Duration
	process *time.Duration
}

type session struct {
	sc      scenario
	rng     *rand.Rand
	tick    int
	players []modelPlayer
	scratch []Link
}

func newSession(sc scenario, seed uint64) *session {
	s := &session{sc: sc, rng: rand.New(rand.NewPCG(seed, 7)), players: make([]modelPlayer, sc.players)}
	base := make([][]time.Duration, sc.players)
	for i := range base {
		base[i] = make([]time.Duration, sc.players)
	}
	for i := range sc.players {
		for j := i + 1; j < sc.players; j++ {
			d := sc.rtt[0] + time.Duration(s.rng.Int64N(int64(sc.rtt[1]-sc.rtt[0])+1))
			base[i][j], base[j][i] = d, d
		}
	}
	for i := range s.players {
		for j := range sc.players {
			if j != i {
				s.players[i].links = append(s.players[i].links, modelLink{peer: j, base: base[i][j], est: netcore.NewEstimator(time.Second, 5*time.Second)})
			}
		}
	}
	return s
}

func (s *session) chance(p float64) bool { return s.rng.Float64() < p }

// step advances the session by one update interval and refreshes every
// player's telemetry.
func (s *session) step() {
	s.tick++
	for pi := range s.players {
		p := &s.players[pi]
		for li := range p.links {
			l := &p.links[li]
			n := uint64(2)
			if s.chance(inboundPerTick - 2) {
				n++
			}
			l.loss.Expected += n
			for range n {
				if s.chance(s.sc.loss) {
					l.loss.Missing++
				}
			}
			if s.chance(reliablePerTick) {
				l.loss.Sent++
			}
			if s.chance(resendPerTick) {
				l.loss.Sent++
				l.loss.Retransmitted++
			}
			if s.chance(s.sc.samplePerTick) {
				j := time.Duration(s.rng.Int64N(int64(2*s.sc.jitter)+1)) - s.sc.jitter
				l.est.Sample(max(l.base+j, time.Microsecond), true)
			}
			if s.chance(0.02) {
				l.caused += time.Duration(1+s.rng.IntN(30)) * time.Millisecond
			}
		}
	}
	// LinkReports: each end learns the other's inbound totals (L4).
	if s.tick%reportTicks == 0 {
		for pi := range s.players {
			for li := range s.players[pi].links {
				l := &s.players[pi].links[li]
				back := s.players[l.peer].linkTo(pi)
				l.peerLoss = netcore.PeerLoss{Expected: back.loss.Expected, Missing: back.loss.Missing, Known: true}
			}
		}
	}
	for pi := range s.players {
		p := &s.players[pi]
		if s.tick%playerReport == pi%playerReport {
			w := time.Duration(s.rng.IntN(40000)) * time.Microsecond
			pr := time.Duration(1500+s.rng.IntN(3000)) * time.Microsecond
			p.wait, p.process = &w, &pr
			p.waited += w
		}
		s.scratch = s.scratch[:0]
		for li := range p.links {
			l := &p.links[li]
			st := netcore.LinkStats{Peer: netcore.PeerID(l.peer), State: l.est.State(), Estimate: l.est.State(),
				SRTT: l.est.SRTT(), RTTVAR: l.est.RTTVAR(), RTO: l.est.RTO(), ConnTimeout: l.est.ConnTimeout(),
				Loss: l.loss, PeerLoss: l.peerLoss}
			s.scratch = append(s.scratch, LinkFrom(st, Waits{Caused: l.caused}))
		}
		p.tel.SetLinks(s.scratch)
		p.tel.Frame += framesPerTick
		p.tel.SetWaits(p.waited, p.wait, p.process)
	}
}

func (p *modelPlayer) linkTo(peer int) *modelLink {
	for i := range p.links {
		if p.links[i].peer == peer {
			return &p.links[i]
		}
	}
	panic("no link")
}
