// Package vocab holds the words the engine and its readers share, each
// defined once with its JSON spelling and its words for people: the causes
// a diagnosis or an incident names, the links of a hop trace, the phases of
// a load test and of an incident, and the names of the published event
// types. It imports nothing of ours, so the hop tracer (netcore/trace), the
// diagnosis, the contract package and every reader can share it; a reader
// that matches on these words uses the constants, never a string literal.
package vocab

// Cause is why a diagnosis or an incident names a player or a path (the
// `causes` of a diagnosis, the `cause` of an incident).
type Cause string

const (
	CauseLatency     Cause = "latency"     // its round trips are long
	CauseJitter      Cause = "jitter"      // its round trips vary
	CauseLoss        Cause = "loss"        // its packets get lost
	CauseProcessing  Cause = "processing"  // its machine is slow to run a frame
	CauseUnmeasured  Cause = "unmeasured"  // not measured well enough to tell
	CauseStale       Cause = "stale"       // its round-trip estimate has fallen behind
	CauseBad         Cause = "bad"         // a connection of it has gone bad
	CauseBufferbloat Cause = "bufferbloat" // its line's router queue fills under load
	CauseUnknown     Cause = "unknown"     // an incident whose cause cannot be told yet
)

// Causes is every cause, in the order the docs list them.
var Causes = [...]Cause{CauseLatency, CauseJitter, CauseLoss, CauseProcessing, CauseUnmeasured, CauseStale,
	CauseBad, CauseBufferbloat, CauseUnknown}

// Words is the cause for people, as a short phrase.
func (c Cause) Words() string {
	switch c {
	case CauseLatency:
		return "long round trips"
	case CauseJitter:
		return "round trips that vary"
	case CauseLoss:
		return "lost packets"
	case CauseProcessing:
		return "a slow machine"
	case CauseUnmeasured:
		return "not measured yet"
	case CauseStale:
		return "an estimate fallen behind"
	case CauseBad:
		return "a connection gone bad"
	case CauseBufferbloat:
		return "a router queue that fills under load"
	case CauseUnknown:
		return "not known yet"
	}
	return string(c)
}

// Diagnosed reports whether a diagnosis may name c: every cause but
// CauseUnknown, which only an incident uses.
func (c Cause) Diagnosed() bool { return c.Valid() && c != CauseUnknown }

// Valid reports whether c is one of Causes.
func (c Cause) Valid() bool {
	for _, x := range Causes {
		if c == x {
			return true
		}
	}
	return false
}

// HopLink names the link into a hop of a trace, from the tracing machine
// outward (the `link` of a path hop, delay_starts and where).
type HopLink string

const (
	HopLAN    HopLink = "lan"    // this machine to its home router: hop 1
	HopUplink HopLink = "uplink" // the home router to the first hop beyond it: hop 2
	HopISP    HopLink = "isp"    // the internet provider's hops
	HopBeyond HopLink = "beyond" // the rest of the way
	HopPeer   HopLink = "peer"   // the last link, into the peer
)

// HopLinks is every hop link, from this machine outward; a link's code on
// the wire (the path summary) is its place here plus one.
var HopLinks = [...]HopLink{HopLAN, HopUplink, HopISP, HopBeyond, HopPeer}

// Code is l's code on the wire: 1 to 5, and 0 for a link that is none of
// HopLinks.
func (l HopLink) Code() byte {
	for i, x := range HopLinks {
		if l == x {
			return byte(i + 1)
		}
	}
	return 0
}

// HopLinkOf is the link with wire code b; ok is false for 0 and codes
// past the last.
func HopLinkOf(b byte) (l HopLink, ok bool) {
	if b == 0 || int(b) > len(HopLinks) {
		return "", false
	}
	return HopLinks[b-1], true
}

// Valid reports whether l is one of HopLinks.
func (l HopLink) Valid() bool { return l.Code() != 0 }

// Words says where the link is, for people: one wording for every view.
func (l HopLink) Words() string {
	switch l {
	case HopLAN:
		return "between the machine and its home router (Wi-Fi or cable)"
	case HopUplink:
		return "on the home line out, between the router and the internet provider"
	case HopISP:
		return "inside the internet provider"
	case HopBeyond:
		return "past the internet provider"
	case HopPeer:
		return "the last link, into the other player's machine"
	}
	return string(l)
}

// LoadPhase is a phase of a load test (docs/load-test.md), as the test
// runs them.
type LoadPhase string

const (
	LoadAsking       LoadPhase = "asking"
	LoadIdle         LoadPhase = "idle"
	LoadUploadRamp   LoadPhase = "upload ramp"
	LoadUpload       LoadPhase = "upload"
	LoadDownloadRamp LoadPhase = "download ramp"
	LoadDownload     LoadPhase = "download"
	LoadBoth         LoadPhase = "both"
	LoadDone         LoadPhase = "done"
	// LoadAnswering is the peer's end of a test, which has no phases of
	// its own; LoadStopped a test that stopped before its last phase.
	LoadAnswering LoadPhase = "answering"
	LoadStopped   LoadPhase = "stopped"
)

// LoadPhases is every phase of a tester's test, in the order it runs
// them.
var LoadPhases = [...]LoadPhase{LoadAsking, LoadIdle, LoadUploadRamp, LoadUpload, LoadDownloadRamp, LoadDownload, LoadBoth, LoadDone}

// Valid reports whether p is a phase a test's progress names: one of
// LoadPhases, LoadAnswering or LoadStopped.
func (p LoadPhase) Valid() bool {
	for _, x := range LoadPhases {
		if p == x {
			return true
		}
	}
	return p == LoadAnswering || p == LoadStopped
}

// LoadTimed are the phases whose round trips a test grades, in order: the
// idle one and the three holds.
var LoadTimed = [...]LoadPhase{LoadIdle, LoadUpload, LoadDownload, LoadBoth}

// LoadHolds are the loaded phases a test grades.
var LoadHolds = [...]LoadPhase{LoadUpload, LoadDownload, LoadBoth}

// IncidentPhase is which line of an incident an `incident` event is.
type IncidentPhase string

const (
	IncidentOpen   IncidentPhase = "open"   // the first line
	IncidentUpdate IncidentPhase = "update" // something other than its cost changed
	IncidentClose  IncidentPhase = "close"  // the last line
)

// IncidentPhases is every incident phase, in order.
var IncidentPhases = [...]IncidentPhase{IncidentOpen, IncidentUpdate, IncidentClose}

// IncidentCauses are the causes an incident may name, in the order the
// docs list them: every reader that counts or draws incidents by cause
// (the metrics, the TUI's strip and list) walks this list.
var IncidentCauses = [...]Cause{CauseLatency, CauseLoss, CauseJitter, CauseProcessing, CauseBufferbloat, CauseUnknown}

// Join joins typed words as strings.Join joins strings.
func Join[T ~string](ws []T, sep string) string {
	n := 0
	for i, w := range ws {
		if i > 0 {
			n += len(sep)
		}
		n += len(w)
	}
	b := make([]byte, 0, n)
	for i, w := range ws {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, w...)
	}
	return string(b)
}
