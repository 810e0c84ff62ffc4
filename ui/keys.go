package ui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key the UI answers, in one place (bubbles/key), so the
// help screen and the handlers cannot drift apart.
type keyMap struct {
	Help, Quit         key.Binding
	NextView, PrevView key.Binding
	Up, Down           key.Binding
	PageUp, PageDown   key.Binding
	Focus              key.Binding
	Options, Pause     key.Binding
	Path               key.Binding
	Theme              key.Binding
	Sort, Reverse      key.Binding
	Bell               key.Binding
	Close              key.Binding
	Left, Right, Apply key.Binding
	// Start starts the game now with whoever is seated: the host's key
	// in its lobby (startable), where it takes s from Sort.
	Start     key.Binding
	startable bool
	// LoadTest asks for a load test of the link in focus, and stops this
	// machine's test while one runs (LoadStop is its help then); Yes and
	// No answer the confirmation. load is what the footer offers.
	LoadTest, LoadStop key.Binding
	Yes, No            key.Binding
	load               loadKeys

	// OlderIncident and NewerIncident move the Incidents list's focus;
	// in a replay they seek to the incident before or after.
	OlderIncident, NewerIncident key.Binding

	// A replay's keys (Playback), shown only when the feed is one.
	PlayPause, SeekBack, SeekForward key.Binding
	Slower, Faster                   key.Binding
	replay                           bool
}

func newKeyMap() keyMap {
	return keyMap{
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		NextView: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevView: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous link")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next link")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Focus:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "focus link")),
		Options:  key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "options")),
		Pause:    key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "pause display")),
		Path:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "trace path")),
		Theme:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "next theme")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by next column")),
		Reverse:  key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		Bell:     key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "bell on alerts")),
		Close:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
		Left:     key.NewBinding(key.WithKeys("left", "h", "-"), key.WithHelp("←/→", "game speed")),
		Right:    key.NewBinding(key.WithKeys("right", "l", "+"), key.WithHelp("→", "faster")),
		Apply:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply speed")),
		Start:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start now")),
		LoadTest: key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "load test")),
		LoadStop: key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "stop load test")),
		Yes:      key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "start load test")),
		No:       key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "cancel")),

		OlderIncident: key.NewBinding(key.WithKeys("["), key.WithHelp("[/]", "older/newer incident")),
		NewerIncident: key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "newer incident")),

		PlayPause:   key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "play/pause")),
		SeekBack:    key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "seek 10 s")),
		SeekForward: key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "seek 10 s on")),
		Slower:      key.NewBinding(key.WithKeys("-"), key.WithHelp("-/+", "replay speed")),
		Faster:      key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
	}
}

// ShortHelp is the footer line (bubbles/help.KeyMap).
func (k keyMap) ShortHelp() []key.Binding {
	if k.replay {
		return []key.Binding{k.Help, k.PlayPause, k.SeekBack, k.Slower, k.NextView, k.Up, k.Quit}
	}
	out := []key.Binding{k.Help}
	if k.load == loadKeyStop {
		// A running test is what a player may want to end in a hurry:
		// its key goes first.
		out = append(out, k.LoadStop)
	}
	if k.startable {
		out = append(out, k.Start)
	}
	out = append(out, k.NextView, k.Up)
	if k.load == loadKeyOffer {
		out = append(out, k.LoadTest)
	}
	return append(out, k.Path, k.Focus, k.Options, k.Pause, k.Theme, k.Bell, k.Quit)
}

// FullHelp is the help screen.
func (k keyMap) FullHelp() [][]key.Binding {
	views := []key.Binding{k.NextView, k.PrevView, k.Sort, k.Reverse, k.OlderIncident, k.LoadTest}
	if k.startable {
		views = []key.Binding{k.Start, k.NextView, k.PrevView, k.Reverse, k.OlderIncident, k.LoadTest}
	}
	more := []key.Binding{k.Options, k.Pause, k.Theme, k.Bell, k.Help, k.Close, k.Quit}
	if k.replay {
		// Under the views' keys, where the column has room at 80 columns.
		// Space plays and pauses the replay itself, which also holds
		// the display still. A replay runs no load test: its key gives
		// way to the replay's.
		seek := k.OlderIncident
		seek.SetHelp("[/]", "seek to an incident")
		views = append(views[:len(views)-2], seek, k.PlayPause, k.SeekBack, k.Slower)
		more = append(more[:1:1], more[2:]...)
	}
	return [][]key.Binding{
		{k.Up, k.Down, k.Focus, k.Path, k.PageUp, k.PageDown},
		views,
		more,
	}
}

// dialogKeys is the help of the options dialog.
type dialogKeys struct{ k keyMap }

func (d dialogKeys) ShortHelp() []key.Binding {
	return []key.Binding{d.k.Left, d.k.Apply, d.k.Close}
}

func (d dialogKeys) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

// confirmKeys is the help of the load test's confirmation.
type confirmKeys struct{ k keyMap }

func (c confirmKeys) ShortHelp() []key.Binding { return []key.Binding{c.k.Yes, c.k.No} }

func (c confirmKeys) FullHelp() [][]key.Binding { return [][]key.Binding{c.ShortHelp()} }
