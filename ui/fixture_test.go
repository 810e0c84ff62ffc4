package ui

import (
	"math"
	"time"

	"github.com/lagscope/lagscope/vocab"

	"github.com/lagscope/lagscope/probe/diagnosis"
	"github.com/lagscope/lagscope/probe/feed"
	"github.com/lagscope/lagscope/rungs"
	"github.com/lagscope/lagscope/units"
)

// The fixture is a scripted session seen from alice, built by hand so the
// goldens depend on the UI alone and not on the engine's arithmetic: 100
// seconds, one picture a second, four links.
//
//   - bob: a 600 ms round trip that recovers to 110 ms at 60 s, resends and
//     a bad spell at 30–33 s, a little loss both ways;
//   - carol: a clean 60 ms;
//   - dave: a measured 90 ms link resending a fifth of its datagrams with no
//     loss observed either way (the L8 case);
//   - erin: never measured (no round trip, no report from the peer: L3).
const fixtureSeconds = 100

func ptr[T any](v T) *T { return &v }

// msd is a fixture's milliseconds as the View's duration.
func msd(v float64) time.Duration { return units.FromMillis(v) }

func fixtureLink(peer string, t int) feed.LinkView {
	ts := float64(t)
	lv := feed.LinkView{Peer: peer}
	lv.From, lv.To = "alice", peer
	sent := uint64(t * 20)
	exp := uint64(t * 20)
	switch peer {
	case "bob":
		srtt := 600.0 + 40*math.Sin(ts/3)
		if t >= 60 {
			srtt = 110 + 5*math.Sin(ts/2)
		}
		v := 30.0
		if t >= 30 && t < 34 {
			v = 400
		}
		lv.State = feed.LinkMeasured
		if t >= 30 && t < 34 {
			lv.State, lv.Bad = feed.LinkBad, true
		}
		rto := math.Min(4000, math.Max(100, srtt+4*v))
		lv.RTTKnown, lv.SRTT, lv.RTTVAR = true, msd(srtt), msd(v)
		lv.RTO = msd(rto)
		lv.ConnTimeout = msd(math.Min(30000, math.Max(2000, math.Max(8*srtt+250, 4*rto))))
		retx := uint64(t/3) + uint64(max(0, min(t, 34)-30)*6)
		lv.LossKnown, lv.Sent, lv.Retransmitted = true, sent, retx
		lv.Expected, lv.Missing = exp, uint64(t/5)
		lv.PeerKnown, lv.PeerExpected, lv.PeerMissing = true, max(exp, 20)-20, uint64(t*2/5)
		lv.Caused = time.Duration(t) * 37 * time.Millisecond
		lv.Through = t*30 + 9
	case "carol":
		lv.State = feed.LinkMeasured
		lv.RTTKnown, lv.SRTT, lv.RTTVAR, lv.RTO, lv.ConnTimeout = true, msd(60+2*math.Sin(ts)), msd(3.0), msd(100.0), msd(2000.0)
		lv.LossKnown, lv.Sent, lv.Retransmitted = true, sent, 0
		lv.Expected, lv.Missing = exp, 0
		lv.PeerKnown, lv.PeerExpected, lv.PeerMissing = true, max(exp, 20)-20, 0
		lv.Caused = time.Duration(t) * 2 * time.Millisecond
		lv.Through = t*30 + 12
	case "dave":
		lv.State = feed.LinkMeasured
		lv.RTTKnown, lv.SRTT, lv.RTTVAR, lv.RTO, lv.ConnTimeout = true, msd(90.0), msd(4.0), msd(106.0), msd(2000.0)
		lv.LossKnown, lv.Sent, lv.Retransmitted = true, sent, uint64(t*4)
		lv.Expected, lv.Missing = exp, 0
		lv.PeerKnown, lv.PeerExpected, lv.PeerMissing = true, max(exp, 20)-20, 0
		lv.Caused = time.Duration(t) * 5 * time.Millisecond
		lv.Through = t*30 + 10
	case "erin":
		lv.State = feed.LinkUnmeasured
		lv.RTO, lv.ConnTimeout = msd(1000.0), msd(8000.0)
		lv.LossKnown, lv.Sent, lv.Retransmitted = true, uint64(t), uint64(t/2)
		lv.Expected, lv.Missing = 0, 0
		lv.Through = 5
	}
	return lv
}

func fixtureView(t int) feed.View {
	v := feed.View{
		At: time.Duration(t) * time.Second, Session: "7c3a91", Self: "alice", Master: "alice",
		Frame: t * 30, Started: true, FPS: 30, Speed: 30,
		InForce: rungs.RungTiming(5), Target: rungs.RungTiming(5),
	}
	switch {
	case t < 10:
		v.InForce, v.Target = rungs.StartTiming(), rungs.StartTiming()
	case t >= 95:
		v.InForce, v.Target, v.Staged = rungs.RungTiming(5), rungs.RungTiming(2), true
	}
	for _, p := range []string{"bob", "carol", "dave", "erin"} {
		v.Links = append(v.Links, fixtureLink(p, t))
	}
	rtt := func(ms float64) *time.Duration { d := time.Duration(ms * float64(time.Millisecond)); return &d }
	v.Players = []feed.PlayerView{
		{Name: "alice", Master: true, Self: true, Report: &feed.ReportView{Frame: t*30 - 20, RTT: rtt(612), Wait: 80 * time.Millisecond, Process: 3 * time.Millisecond, Fresh: true}},
		{Name: "bob", Report: &feed.ReportView{Frame: t*30 - 20, RTT: rtt(598), Wait: 12 * time.Millisecond, Process: 4 * time.Millisecond, Fresh: true}},
		{Name: "carol", Report: &feed.ReportView{Frame: t*30 - 20, RTT: rtt(64), Wait: 410 * time.Millisecond, Process: 2 * time.Millisecond, Fresh: true}},
		{Name: "dave", Report: &feed.ReportView{Frame: t*30 - 600, RTT: nil, Wait: 0, Process: 6 * time.Millisecond, Fresh: false}},
		{Name: "erin", Observer: true},
	}
	return v
}

func fixtureEvents(t int) []feed.Event {
	f := t * 30
	h := func(typ vocab.EventType) feed.Header { return feed.Header{Type: typ, Frame: f} }
	switch t {
	case 0:
		return []feed.Event{&feed.MasterEvent{Header: h("master"), Player: "alice"}}
	case 10:
		return []feed.Event{&feed.MessageEvent{Header: h("message"), Text: "Connection quality target: Normal", Kind: feed.MessageTier, Subject: "Normal"}}
	case 31:
		return []feed.Event{&feed.MessageEvent{Header: h("message"), Text: "Connection to bob has gone bad", Player: "alice", Kind: feed.MessageLinkBad, Subject: "bob"}}
	case 34:
		return []feed.Event{&feed.MessageEvent{Header: h("message"), Text: "Connection to bob is good again", Player: "alice"}}
	case 70:
		return []feed.Event{&feed.RemovedEvent{Header: h("removed"), Player: "frank"}}
	case 95:
		return []feed.Event{&feed.MessageEvent{Header: h("message"), Text: "Connection quality target: Fast", Kind: feed.MessageTier, Subject: "Fast"}}
	}
	return nil
}

// fixtureUpdates is the whole scripted session, without a Done update.
func fixtureUpdates() []feed.Update {
	out := make([]feed.Update, 0, fixtureSeconds+1)
	for t := 0; t <= fixtureSeconds; t++ {
		out = append(out, feed.Update{View: fixtureView(t), Events: fixtureEvents(t)})
	}
	return out
}

// manyLinks is a picture with n links, for the benchmarks and the scroll
// tests: the fixture's four links repeated under other names.
func manyLinks(n int) []feed.Update {
	base := []string{"bob", "carol", "dave", "erin"}
	var out []feed.Update
	for t := 0; t <= fixtureSeconds; t++ {
		v := fixtureView(t)
		v.Links = v.Links[:0]
		for i := 0; i < n; i++ {
			lv := fixtureLink(base[i%len(base)], t)
			lv.Peer = base[i%len(base)] + itoa(i)
			lv.To = lv.Peer
			v.Links = append(v.Links, lv)
		}
		out = append(out, feed.Update{View: v, Events: fixtureEvents(t)})
	}
	return out
}

// fixtureDiagnosis is a hand-made diagnosis of the fixture session:
// bob's connection holds the match back (latency and loss), dave's
// machine is slow, erin is not measured (NaN everywhere: unknown), and the
// path between bob and carol is slower than the two explain.
func fixtureDiagnosis() *diagnosis.Diagnosis {
	nan := math.NaN()
	return &diagnosis.Diagnosis{
		Verdict:     "bob's connection adds 250 ms to every round trip with bob and loses 4.0% of its packets; it holds the match at Normal (rung 5) — without it: Fast (rung 2).",
		Culprit:     "bob",
		CulpritLink: &[2]string{"bob", "carol"},
		Measured:    4,
		Reason:      "rung",
		Players: []diagnosis.PlayerDiagnosis{
			{Player: "alice", AccessRTTMs: 20, AccessLoss: 0.001, JitterMs: 1.5, ProcessMs: 3, CausedWaitMs: 1300, RungWithout: 5, FPSWithout: 30, Causes: []vocab.Cause{}},
			{Player: "bob", AccessRTTMs: 250, AccessLoss: 0.04, JitterMs: 12, ProcessMs: 4, CausedWaitMs: 3700, RungWithout: 2, FPSWithout: 30, Causes: []vocab.Cause{diagnosis.CauseLatency, diagnosis.CauseLoss}},
			{Player: "carol", AccessRTTMs: 25, AccessLoss: 0, JitterMs: 1.2, ProcessMs: 2, CausedWaitMs: 200, RungWithout: 5, FPSWithout: 30, Causes: []vocab.Cause{}},
			{Player: "dave", AccessRTTMs: 30, AccessLoss: 0, JitterMs: 2, ProcessMs: 45, CausedWaitMs: 500, RungWithout: 5, FPSWithout: 20, Causes: []vocab.Cause{diagnosis.CauseProcessing}},
			{Player: "erin", AccessRTTMs: nan, AccessLoss: nan, JitterMs: nan, ProcessMs: nan, CausedWaitMs: nan, Causes: []vocab.Cause{diagnosis.CauseUnmeasured}},
		},
		Links: []diagnosis.LinkDiagnosis{
			{Between: [2]string{"alice", "bob"}, RTTMs: 272, ExpectedRTTMs: 270, ExcessRTTMs: 2, Loss: 0.04, Causes: []vocab.Cause{}},
			{Between: [2]string{"alice", "carol"}, RTTMs: 46, ExpectedRTTMs: 45, ExcessRTTMs: 1, Loss: 0, Causes: []vocab.Cause{}},
			{Between: [2]string{"bob", "carol"}, RTTMs: 600, ExpectedRTTMs: 275, ExcessRTTMs: 325, Loss: 0.05, Causes: []vocab.Cause{diagnosis.CauseLatency}},
			{Between: [2]string{"alice", "erin"}, RTTMs: nan, ExpectedRTTMs: nan, ExcessRTTMs: nan, Loss: nan, Causes: []vocab.Cause{}},
		},
	}
}

// diagnosisUpdates is the fixture session with the diagnosis from 20 s on.
func diagnosisUpdates() []feed.Update {
	us := fixtureUpdates()
	for i := 20; i < len(us); i++ {
		us[i].View.Diagnosis = fixtureDiagnosis()
	}
	return us
}

// bufferbloatUpdates is the diagnosis fixture with carol's latest load test
// finding that her upload adds 380 ms when her line is busy: bufferbloat
// among her causes, with its evidence.
func bufferbloatUpdates() []feed.Update {
	us := diagnosisUpdates()
	for i := 20; i < len(us); i++ {
		d := us[i].View.Diagnosis
		c := &d.Players[2]
		c.Causes = []vocab.Cause{diagnosis.CauseBufferbloat}
		c.Bufferbloat = &diagnosis.Bufferbloat{UploadMs: 380, DownloadMs: math.NaN()}
	}
	return us
}
