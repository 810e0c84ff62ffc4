// Package sim runs a whole lockstep session in virtual time: the real probe
// peers, over netcore's real endpoints, on simnet's in-memory network, all in
// one deterministic scheduler (docs/architecture.md, "One engine, two
// worlds"). It reads the scenario file of docs/simulation.md and prints the
// NDJSON events; the same scenario and seed always give byte-identical
// output.
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	playernames "github.com/lagscope/lagscope/names"
)

// Scenario is a `lagscope sim` scenario file (docs/simulation.md).
type Scenario struct {
	FPS               int                   `json:"fps"`
	Frames            int                   `json:"frames"`
	Seed              uint64                `json:"seed"`
	Players           []string              `json:"players"`
	Observers         []string              `json:"observers"`
	CommandsPerMinute *float64              `json:"commands_per_minute"`
	LinkEvery         int                   `json:"link_every"`
	Network           LinkSpec              `json:"network"`
	Links             []PairSpec            `json:"links"`
	ProcessMs         map[string]float64    `json:"process_ms"`
	Access            map[string]AccessSpec `json:"access"`
	Timeline          []Change              `json:"timeline"`
	// DropTimeoutMs removes a silent player after this long (default 60000).
	DropTimeoutMs *float64 `json:"drop_timeout_ms"`
	// Load tests (load.go): the tests to run, the players that refuse
	// them, and the players' caps.
	LoadTests   []loadTestSpec     `json:"load_tests"`
	NoLoadTests []string           `json:"no_load_tests"`
	LoadCapMbit map[string]float64 `json:"load_cap_mbit"`
}

// LinkSpec describes a pair's round trip; it splits evenly over the two
// directions. Loss, Dup and Reorder apply per direction.
type LinkSpec struct {
	RTTMs    *float64 `json:"rtt_ms"`
	JitterMs *float64 `json:"jitter_ms"`
	Loss     *float64 `json:"loss"`
	Dup      *float64 `json:"dup"`
	Reorder  *float64 `json:"reorder"`
}

// PairSpec overrides the default network for one pair of machines.
type PairSpec struct {
	Between []string `json:"between"`
	LinkSpec
}

// Change is one timeline entry: at a frame (of the current master's machine)
// or at a virtual time, change links, remove a player, set the game speed,
// or make a machine vanish without a word.
type Change struct {
	AtFrame *int       `json:"at_frame"`
	AtMs    *float64   `json:"at_ms"`
	Links   []PairSpec `json:"links"`
	Remove  string     `json:"remove"`
	Vanish  string     `json:"vanish"`
	FPS     *int       `json:"fps"`
	// Access replaces the access links of the players it names.
	Access map[string]AccessSpec `json:"access"`
}

// maxFrames bounds a run so that a typo cannot spin the machine for hours.
const maxFrames = 10_000_000

// ParseScenario decodes and checks a scenario. Its errors are one line and
// name the offending key.
func ParseScenario(r io.Reader) (*Scenario, error) {
	data, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, jsonError(err)
	}
	if dec.More() {
		return nil, errors.New("scenario: trailing data after the JSON object")
	}
	// An absent fps means 30, but a written 0 is a bad value (CONTRACTS),
	// and the struct alone cannot tell the two apart.
	var given struct {
		FPS *int `json:"fps"`
	}
	if json.Unmarshal(data, &given) == nil && given.FPS != nil && *given.FPS == 0 {
		return nil, errors.New(`scenario: key "fps": 0 is outside 1..1000 (leave it out for 30)`)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("scenario: key %q: expected %s, got %s", te.Field, te.Type, te.Value)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return fmt.Errorf("scenario: unknown key %s", strings.TrimPrefix(msg, "json: unknown field "))
	}
	return fmt.Errorf("scenario: %s", strings.TrimPrefix(msg, "json: "))
}

func (s *Scenario) check() error {
	if s.FPS == 0 {
		s.FPS = 30
	}
	if s.FPS < 1 || s.FPS > 1000 {
		return fmt.Errorf("scenario: key \"fps\": %d is outside 1..1000", s.FPS)
	}
	if s.Frames < 1 || s.Frames > maxFrames {
		return fmt.Errorf("scenario: key \"frames\": %d is outside 1..%d", s.Frames, maxFrames)
	}
	if len(s.Players) < 1 || len(s.Players) > 64 {
		return fmt.Errorf("scenario: key \"players\": need 1 to 64 players, got %d", len(s.Players))
	}
	if len(s.Observers) > 16 {
		return fmt.Errorf("scenario: key \"observers\": at most 16, got %d", len(s.Observers))
	}
	names := map[string]bool{}
	keys := map[string]string{} // names.Key → the name: look-alikes are one name
	for _, n := range append(append([]string{}, s.Players...), s.Observers...) {
		c, err := playernames.Validate(n)
		if err != nil {
			return fmt.Errorf("scenario: key \"players\": %v", err)
		}
		if c != n {
			return fmt.Errorf("scenario: key \"players\": name %q is written %q", n, c)
		}
		if names[n] {
			return fmt.Errorf("scenario: key \"players\": name %q appears twice", n)
		}
		k := playernames.Key(n)
		if other, ok := keys[k]; ok {
			return fmt.Errorf("scenario: key \"players\": name %q looks the same as %q", n, other)
		}
		names[n], keys[k] = true, n
	}
	if s.CommandsPerMinute != nil && (*s.CommandsPerMinute < 0 || *s.CommandsPerMinute > 6000) {
		return fmt.Errorf("scenario: key \"commands_per_minute\": %v is outside 0..6000", *s.CommandsPerMinute)
	}
	if s.LinkEvery < 0 {
		return fmt.Errorf("scenario: key \"link_every\": %d is negative", s.LinkEvery)
	}
	if err := s.Network.check("network"); err != nil {
		return err
	}
	if err := checkPairs("links", s.Links, names); err != nil {
		return err
	}
	for name, ms := range s.ProcessMs {
		if !names[name] {
			return fmt.Errorf("scenario: key \"process_ms\": unknown player %q", name)
		}
		if ms < 0 || ms > 10000 {
			return fmt.Errorf("scenario: key \"process_ms\": %v ms for %q is outside 0..10000", ms, name)
		}
	}
	if err := checkAccess("access", s.Access, s.Players); err != nil {
		return err
	}
	if s.DropTimeoutMs != nil && (*s.DropTimeoutMs < 100 || *s.DropTimeoutMs > 3_600_000) {
		return fmt.Errorf("scenario: key \"drop_timeout_ms\": %v is outside 100..3600000", *s.DropTimeoutMs)
	}
	if err := s.checkLoad(); err != nil {
		return err
	}
	for i, c := range s.Timeline {
		key := fmt.Sprintf("timeline[%d]", i)
		if (c.AtFrame == nil) == (c.AtMs == nil) {
			return fmt.Errorf("scenario: key %q: give exactly one of at_frame and at_ms", key)
		}
		if c.AtFrame != nil && (*c.AtFrame < 0 || *c.AtFrame > maxFrames) {
			return fmt.Errorf("scenario: key %q: at_frame %d is out of range", key+".at_frame", *c.AtFrame)
		}
		if c.AtMs != nil && (*c.AtMs < 0 || *c.AtMs > 1e10) {
			return fmt.Errorf("scenario: key %q: at_ms %v is out of range", key+".at_ms", *c.AtMs)
		}
		if err := checkPairs(key+".links", c.Links, names); err != nil {
			return err
		}
		for _, who := range []struct{ key, name string }{{"remove", c.Remove}, {"vanish", c.Vanish}} {
			if who.name != "" && !slices.Contains(s.Players, who.name) {
				return fmt.Errorf("scenario: key %q: %q is not a player", key+"."+who.key, who.name)
			}
		}
		if c.FPS != nil && (*c.FPS < 1 || *c.FPS > 1000) {
			return fmt.Errorf("scenario: key %q: %d is outside 1..1000", key+".fps", *c.FPS)
		}
		if err := checkAccess(key+".access", c.Access, s.Players); err != nil {
			return err
		}
		if len(c.Links) == 0 && c.Remove == "" && c.Vanish == "" && c.FPS == nil && len(c.Access) == 0 {
			return fmt.Errorf("scenario: key %q: changes nothing", key)
		}
	}
	return nil
}

func checkPairs(key string, pairs []PairSpec, names map[string]bool) error {
	for i, p := range pairs {
		k := fmt.Sprintf("%s[%d]", key, i)
		if len(p.Between) != 2 || p.Between[0] == p.Between[1] {
			return fmt.Errorf("scenario: key %q: \"between\" needs two different names", k+".between")
		}
		for _, n := range p.Between {
			if !names[n] {
				return fmt.Errorf("scenario: key %q: unknown name %q", k+".between", n)
			}
		}
		if err := p.LinkSpec.check(k); err != nil {
			return err
		}
	}
	return nil
}

func (l LinkSpec) check(key string) error {
	return checkLine(key, l.RTTMs, l.JitterMs, share{"loss", l.Loss}, share{"dup", l.Dup}, share{"reorder", l.Reorder})
}

// share is a field of a scenario key that holds a share (0–1), by its
// JSON name.
type share struct {
	name string
	v    *float64
}

// checkLine checks what a pair's link and a player's access have alike,
// each where set: the round trip within 0..60000 ms, the jitter within
// 0..10000 ms and every share within [0, 1).
func checkLine(key string, rtt, jitter *float64, shares ...share) error {
	if rtt != nil && (*rtt < 0 || *rtt > 60000) {
		return fmt.Errorf("scenario: key %q: %v is outside 0..60000", key+".rtt_ms", *rtt)
	}
	if jitter != nil && (*jitter < 0 || *jitter > 10000) {
		return fmt.Errorf("scenario: key %q: %v is outside 0..10000", key+".jitter_ms", *jitter)
	}
	for _, c := range shares {
		if c.v != nil && (*c.v < 0 || *c.v >= 1) {
			return fmt.Errorf("scenario: key %q: %v is outside [0, 1)", key+"."+c.name, *c.v)
		}
	}
	return nil
}
