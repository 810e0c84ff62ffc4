package rungs

import "time"

// Constants of the reports (S5, S7, S8).
const (
	// reportLifetime is how long a report stays fresh: it expires this many
	// frames after it executes (S7).
	reportLifetime = 512
	// forcedAfter is how long after the record started a player may go
	// without ever reporting a round trip before it forces 10/250 (S8).
	forcedAfter = 512
	// reportEvery is the report interval after the first two reports (S5).
	reportEvery = 128
)

// IsReportFrame reports whether a player sends a report on the frame that is
// sinceStart frames after the game started (S5): 32, 64, then every multiple
// of 128 (128, 256, 384, …).
func IsReportFrame(sinceStart int) bool {
	return sinceStart == 32 || sinceStart == 64 || (sinceStart > 0 && sinceStart%reportEvery == 0)
}

// Report is one player's report as it executed (S5, S6).
type Report struct {
	Player int
	// Frame is the frame the report event executed on; expiry counts from it.
	Frame int
	// RTT is the player's worst round trip to any other player. It is
	// meaningful only when HasRTT is set: a player leaves it out while any of
	// its links lacks a clean sample (S6).
	RTT    time.Duration
	HasRTT bool
	// Wait is the longest the player waited for the others during its last
	// two report intervals.
	Wait time.Duration
	// Process is the player's average processing time per frame.
	Process time.Duration
}

// Record is the shared record of reports that every machine keeps (S7, S8):
// the latest report of each player seated at game start, until an executed
// removal drops the player. Because reports and removals are network events,
// every machine that feeds its Record in execution order holds the same one.
type Record struct {
	start   int
	players []seat
}

type seat struct {
	player   int
	latest   Report
	reported bool // latest holds a report
	everRTT  bool // some report since the start carried a round trip (S8)
}

// NewRecord starts a record on frame startFrame with the players seated at
// game start (S7). Duplicates in seated count once.
func NewRecord(startFrame int, seated []int) *Record {
	r := &Record{start: startFrame, players: make([]seat, 0, len(seated))}
	for _, p := range seated {
		if r.find(p) < 0 {
			r.players = append(r.players, seat{player: p})
		}
	}
	return r
}

func (r *Record) find(player int) int {
	for i := range r.players {
		if r.players[i].player == player {
			return i
		}
	}
	return -1
}

// Start is the frame the record started on.
func (r *Record) Start() int { return r.start }

// Seated is the number of players the record still holds.
func (r *Record) Seated() int { return len(r.players) }

// IsSeated reports whether the record holds player.
func (r *Record) IsSeated(player int) bool { return r.find(player) >= 0 }

// Add records rep as its player's latest report. It returns false, and
// changes nothing, when the player is not seated (never was, or has been
// removed) or rep executed before the report already held.
func (r *Record) Add(rep Report) bool {
	i := r.find(rep.Player)
	if i < 0 {
		return false
	}
	s := &r.players[i]
	if s.reported && rep.Frame < s.latest.Frame {
		return false
	}
	s.latest, s.reported = rep, true
	if rep.HasRTT {
		s.everRTT = true
	}
	return true
}

// Remove drops player and its report; an executed removal event calls it
// (S7). Removing a player the record does not hold does nothing.
func (r *Record) Remove(player int) {
	if i := r.find(player); i >= 0 {
		r.players = append(r.players[:i], r.players[i+1:]...)
	}
}

// Latest is player's latest report, if it has one.
func (r *Record) Latest(player int) (Report, bool) {
	i := r.find(player)
	if i < 0 || !r.players[i].reported {
		return Report{}, false
	}
	return r.players[i].latest, true
}

// Fresh reports whether player has a report that has not expired on frame:
// one that executed fewer than 512 frames before it (S7).
func (r *Record) Fresh(player, frame int) bool {
	i := r.find(player)
	return i >= 0 && r.players[i].fresh(frame)
}

func (s *seat) fresh(frame int) bool {
	return s.reported && frame-s.latest.Frame < reportLifetime
}

// Summary is what the master reads from the record on one frame.
type Summary struct {
	Seated  int // players in the record
	Fresh   int // players whose latest report is fresh
	WithRTT int // players whose latest report is fresh and carries a round trip
	// Worst is the worst round trip among fresh reports that carry one; it is
	// meaningful only when WithRTT > 0.
	Worst time.Duration
	// MaxWait and MaxProcess are the largest wait and processing time among
	// fresh reports.
	MaxWait    time.Duration
	MaxProcess time.Duration
	// Forced is set when, 512 frames or more after the record started, some
	// seated player has never reported a round trip (S8).
	Forced bool
}

// Complete reports whether every seated player has a fresh report with a
// round trip (S8, S10): only then may the timing improve.
func (s Summary) Complete() bool { return s.Seated > 0 && s.WithRTT == s.Seated }

// allFresh reports whether every seated player has a fresh report, which the
// frame rate needs (S15).
func (s Summary) allFresh() bool { return s.Seated > 0 && s.Fresh == s.Seated }

// Summary reads the record as of frame. It does not allocate.
func (r *Record) Summary(frame int) Summary {
	sum := Summary{Seated: len(r.players)}
	late := frame-r.start >= forcedAfter
	for i := range r.players {
		s := &r.players[i]
		if late && !s.everRTT {
			sum.Forced = true
		}
		if !s.fresh(frame) {
			continue
		}
		sum.Fresh++
		sum.MaxWait = max(sum.MaxWait, s.latest.Wait)
		sum.MaxProcess = max(sum.MaxProcess, s.latest.Process)
		if s.latest.HasRTT {
			if sum.WithRTT == 0 || s.latest.RTT > sum.Worst {
				sum.Worst = s.latest.RTT
			}
			sum.WithRTT++
		}
	}
	return sum
}
