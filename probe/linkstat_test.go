package probe

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/units"
)

// The View's link and the NDJSON link object say the same: unknown values
// are null there and flagged here, never 0 (L3, L4), and reading the
// object back gives the link that was written, to the nanosecond — what a
// recording's View needs to replay as it was.
func TestLinkStatRoundTrip_L3(t *testing.T) {
	unmeasured := netcore.LinkStats{State: netcore.Unmeasured, Estimate: netcore.Unmeasured, RTO: time.Second, ConnTimeout: 10 * time.Second,
		Loss: netcore.Loss{Sent: 3}}
	measured := netcore.LinkStats{State: netcore.Bad, Estimate: netcore.Measured, SRTT: 61_234_567, RTTVAR: 3_333_333,
		RTO: 123_456_789, ConnTimeout: 2_739_876_543, Loss: netcore.Loss{Sent: 9, Retransmitted: 2, Expected: 40, Missing: 1},
		PeerLoss: netcore.PeerLoss{Known: true, Expected: 38, Missing: 4}}
	for _, st := range []netcore.LinkStats{unmeasured, measured} {
		l := LinkOf("a", "b", st)
		ls := l.Stat()
		if (ls.SRTTMs == nil) == l.RTTKnown || (ls.PeerExpected == nil) == l.PeerKnown || ls.Sent == nil {
			t.Fatalf("%+v: object %+v", l, ls)
		}
		b, err := json.Marshal(ls)
		if err != nil {
			t.Fatal(err)
		}
		var back feed.LinkStat
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, err := back.Link()
		if err != nil || got != l {
			t.Fatalf("%s read back as %+v (%v), want %+v", b, got, err, l)
		}
	}
	if l := LinkOf("a", "b", unmeasured); l.RTTKnown || l.PeerKnown || l.State.String() != "unmeasured" {
		t.Fatalf("unmeasured link %+v", l)
	}
}

// Every duration a link can hold survives milliseconds (a day and more).
func TestMsDurationInvertsMs(t *testing.T) {
	for d := time.Duration(1); d < 48*time.Hour; d = d*3 + 7 {
		if got := units.FromMillis(units.Millis(d)); got != d {
			t.Fatalf("%d ns came back as %d", d, got)
		}
	}
}

// Objects no peer writes are errors, not Views.
func TestLinkStatRejectsMalformed(t *testing.T) {
	for _, s := range []string{
		`{"state":"great","rto_ms":1,"conn_timeout_ms":1}`,
		`{"state":"measured","conn_timeout_ms":1}`,
		`{"state":"measured","rto_ms":1,"conn_timeout_ms":1,"srtt_ms":5}`,
		`{"state":"measured","rto_ms":1,"conn_timeout_ms":1,"sent":5}`,
		`{"state":"measured","rto_ms":1,"conn_timeout_ms":1,"peer_missing":5}`,
		`{"state":"measured","rto_ms":1e300,"conn_timeout_ms":1}`,
	} {
		var ls feed.LinkStat
		if err := json.Unmarshal([]byte(s), &ls); err != nil {
			t.Fatal(err)
		}
		if _, err := ls.Link(); !errors.Is(err, feed.ErrLinkStat) {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// FuzzLinkStat: a link object from outside bytes becomes a Link or an
// error, never a panic; a Link that comes out writes the same object back.
func FuzzLinkStat(f *testing.F) {
	f.Add([]byte(`{"from":"a","to":"b","state":"measured","srtt_ms":61.2,"rttvar_ms":3,"rto_ms":100,"conn_timeout_ms":2000,"sent":1,"retransmitted":0,"expected":0,"missing":0,"peer_expected":null,"peer_missing":null}`))
	f.Add([]byte(`{"state":"bad","rto_ms":-1,"conn_timeout_ms":NaN}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ls feed.LinkStat
		if json.Unmarshal(b, &ls) != nil {
			return
		}
		l, err := ls.Link()
		if err != nil {
			return
		}
		again, err := l.Stat().Link()
		if err != nil || again != l {
			t.Fatalf("%s: %+v then %+v (%v)", b, l, again, err)
		}
	})
}

// The View's link states are netcore's, value for value: LinkOf converts
// one to the other.
func TestLinkStatesAreNetcores(t *testing.T) {
	for _, c := range []struct {
		n netcore.LinkState
		f feed.LinkState
	}{{netcore.Unmeasured, feed.LinkUnmeasured}, {netcore.Provisional, feed.LinkProvisional}, {netcore.Measured, feed.LinkMeasured}, {netcore.Bad, feed.LinkBad}} {
		if feed.LinkState(c.n) != c.f || c.n.String() != c.f.String() {
			t.Errorf("netcore %v (%d) is the View's %v (%d)", c.n, c.n, c.f, c.f)
		}
	}
}
