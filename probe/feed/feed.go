package feed

// Update is what a running engine hands its front ends: the newest picture
// of the peer and the events published since the last update, in order.
type Update struct {
	View   View
	Events []Event
	// Done is set on the last update, when the session has ended for this
	// machine; Err says why when it ended badly.
	Done bool
	Err  error
}

// Control is a request from a front end to the engine (the UI's only way
// in). The zero value asks for nothing.
type Control struct {
	Quit  bool // leave the session cleanly (issue a removal, then stop)
	Speed int  // set the game speed (frame-rate cap, S17); 0 = unchanged
	Start bool // start the game from the lobby (host only)
	// Path names the link the Path view shows: its hop trace runs while
	// the view is open. PathClosed ends it (the view closed).
	Path       string
	PathClosed bool
	// LoadTest starts a load test toward the member it names
	// (docs/load-test.md): it stops "busy" when another test holds the
	// session. LoadCancel stops this machine's test.
	LoadTest   string
	LoadCancel bool
}

// Feed connects a front end (TUI, NDJSON writer, recorder, metrics) to a
// running engine, live or replayed. Updates arrive at most ten times a
// second plus once at the end; the channel closes after the update with
// Done set. A slow reader loses intermediate Views, never Events.
type Feed interface {
	Updates() <-chan Update
	Control(c Control)
}
