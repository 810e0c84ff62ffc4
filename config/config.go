// Package config reads lagscope's settings file: the TOML file
// lagscope/config.toml in the user's config directory (os.UserConfigDir:
// $XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/Application Support on
// macOS, %AppData% on Windows). It holds what should stick between runs of
// the live commands — name, theme, key file, last host — and the alert
// thresholds.
//
// Precedence is flag > file > default: Load gives the file over the
// defaults, ApplyFlags lets every flag the user set on the command line win.
// Decoding is strict: an unknown key or a bad value is an error naming the
// file and the line, which the commands print as one line and exit 2.
//
// sim, replay and report never read this file: their output depends on
// their inputs alone.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spf13/pflag"

	"github.com/lagscope/lagscope/internal/boundedfile"
	"github.com/lagscope/lagscope/themes"
)

// The most a config file and a key file may hold. Either is a few lines
// (a key a few dozen bytes); a path naming something larger, or not a
// regular file at all, is refused before it is read (boundedfile).
const (
	maxConfigBytes = 64 << 10
	maxKeyBytes    = 4 << 10
)

// Defaults of the alert thresholds: a link's loss over the last
// 10 s passing 5 % raises an alert; the terminal bell is off unless asked for.
const (
	defaultLossPercent = 5.0
	defaultLossWindow  = 10 * time.Second
	defaultBell        = false
	// defaultTrace: the live commands trace their links' hops, at the
	// low rate docs/path.md states.
	defaultTrace = true
)

// Settings are the values in force. An empty string means "not set": the
// command falls back to its own default (the login name for name, the dark
// theme, no key, no remembered host).
type Settings struct {
	Name     string `toml:"name"`
	Theme    string `toml:"theme"`
	KeyFile  string `toml:"key_file"`
	LastHost string `toml:"last_host"`
	// Trace: the live commands trace the hops of their links (false is
	// --no-trace: no probe is sent).
	Trace  bool   `toml:"trace"`
	Alerts Alerts `toml:"alerts"`
}

// Alerts are the thresholds of the alert on a link going bad.
type Alerts struct {
	LossPercent float64  `toml:"loss_percent"`
	Bell        bool     `toml:"bell"`
	LossWindow  Duration `toml:"loss_window"`
}

// Duration is a time.Duration written in TOML as a Go duration string
// ("10s", "1m30s").
type Duration time.Duration

// UnmarshalText parses a Go duration string; the decoder turns its error
// into one naming the line.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (write it like \"10s\")", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration the way UnmarshalText reads it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Source says where a setting in force came from.
type Source string

const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromFlag    Source = "flag"
)

// Keys are the settings' TOML keys in the order `lagscope config` lists them.
var Keys = []string{"name", "theme", "key_file", "last_host", "trace", "alerts.loss_percent", "alerts.bell", "alerts.loss_window"}

// flagFor is the command-line flag that overrides a key, where one exists.
// The live commands' --key gives the key itself and so wins over key_file;
// the commands handle that one (see Settings.Key).
var flagFor = map[string]string{"name": "name", "theme": "theme"}

// Config is the settings in force and where each came from.
type Config struct {
	Path     string // the file looked for
	Found    bool   // whether it exists
	Settings Settings
	From     map[string]Source // by key, every one of Keys
	Line     map[string]int    // by key, the file's line for settings from the file
}

// fileError is a bad config file: the file, the line (0 when unknown) and
// what is wrong, printed as one line. Err, when set, is the error behind it (a
// *boundedfile.Error for a file that is too large or not a regular file).
type fileError struct {
	Path string
	Line int
	Msg  string
	Err  error
}

func (e *fileError) Unwrap() error { return e.Err }

func (e *fileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// configPath is where the config file lives: lagscope/config.toml under
// this platform's config directory.
func configPath() (string, error) {
	dir, err := configDir(runtime.GOOS, os.Getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "lagscope", "config.toml"), nil
}

// configDir is the user's config directory on goos, from the environment
// getenv reads: %AppData% on Windows, ~/Library/Application Support on
// macOS, $XDG_CONFIG_HOME (when absolute) or ~/.config elsewhere. These are
// os.UserConfigDir's rules; they are written out here, with the platform
// as an argument, so that every platform's choice is tested on any.
func configDir(goos string, getenv func(string) string) (string, error) {
	switch goos {
	case "windows":
		dir := getenv("AppData")
		if dir == "" {
			return "", errors.New("no config directory: %AppData% is not set")
		}
		return dir, nil
	case "darwin", "ios":
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("no config directory: $HOME is not set")
		}
		return home + "/Library/Application Support", nil
	case "plan9":
		home := getenv("home")
		if home == "" {
			return "", errors.New("no config directory: $home is not set")
		}
		return home + "/lib", nil
	}
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" && strings.HasPrefix(dir, "/") {
		return dir, nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("no config directory: neither $XDG_CONFIG_HOME nor $HOME is set")
	}
	return home + "/.config", nil
}

// defaults is the configuration with no file and no flags.
func defaults(path string) *Config {
	c := &Config{
		Path: path,
		Settings: Settings{Trace: defaultTrace, Alerts: Alerts{
			LossPercent: defaultLossPercent,
			Bell:        defaultBell,
			LossWindow:  Duration(defaultLossWindow),
		}},
		From: map[string]Source{},
		Line: map[string]int{},
	}
	for _, k := range Keys {
		c.From[k] = FromDefault
	}
	return c
}

// Load reads the config file at configPath. A missing file is not an error: the
// defaults are in force.
func Load() (*Config, error) {
	path, err := configPath()
	if err != nil {
		return nil, err
	}
	return loadFile(path)
}

// loadFile reads the config file at path over the defaults. A missing file
// gives the defaults; anything wrong in it, or a path naming something that
// is not a regular file of at most maxConfigBytes, is a *fileError. A file the
// system will not let us read is the system's error (an *fs.PathError
// under "config file: "), not a *fileError.
func loadFile(path string) (*Config, error) {
	c := defaults(path)
	doc, err := boundedfile.Read("config file", path, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		var be *boundedfile.Error
		if errors.As(err, &be) {
			return nil, &fileError{Path: path, Msg: be.Problem, Err: be}
		}
		return nil, fmt.Errorf("config file: %w", err)
	}
	c.Found = true
	dec := toml.NewDecoder(bytes.NewReader(doc)).DisallowUnknownFields()
	if err := dec.Decode(&c.Settings); err != nil {
		return nil, decodeError(path, err)
	}
	set := keysIn(doc)
	for _, k := range Keys {
		if line, ok := set[k]; ok {
			c.From[k] = FromFile
			c.Line[k] = line
		}
	}
	// A table given whole ([alerts] or alerts = {...}) sets only the keys it
	// names; the others keep their defaults, which Decode left in place.
	for _, k := range Keys {
		if c.From[k] != FromFile {
			continue
		}
		if msg := check(k, c.Settings); msg != "" {
			return nil, &fileError{Path: path, Line: c.Line[k], Msg: msg}
		}
	}
	return c, nil
}

// ApplyFlags lets every flag the user set on fs win over the file and the
// defaults (pflag's Changed tells a flag set from its default). A flag that
// fs does not declare is left alone. A bad value is an error naming the flag.
func (c *Config) ApplyFlags(fs *pflag.FlagSet) error {
	for _, k := range Keys {
		name, ok := flagFor[k]
		if !ok || fs.Lookup(name) == nil || !fs.Changed(name) {
			continue
		}
		v := fs.Lookup(name).Value.String()
		switch k {
		case "name":
			c.Settings.Name = v
		case "theme":
			c.Settings.Theme = v
		}
		if msg := check(k, c.Settings); msg != "" {
			return fmt.Errorf("--%s: %s", name, msg)
		}
		c.From[k] = FromFlag
		delete(c.Line, k)
	}
	return nil
}

// Value is the setting of key in force, as `lagscope config` prints it.
func (c *Config) Value(key string) string {
	s := c.Settings
	switch key {
	case "name":
		return orUnset(s.Name, "your login name")
	case "theme":
		return orUnset(s.Theme, themes.Default+", or monochrome under NO_COLOR")
	case "key_file":
		return orUnset(s.KeyFile, "no key")
	case "last_host":
		return orUnset(s.LastHost, "none")
	case "trace":
		return strconv.FormatBool(s.Trace)
	case "alerts.loss_percent":
		return strconv.FormatFloat(s.Alerts.LossPercent, 'f', -1, 64)
	case "alerts.bell":
		return strconv.FormatBool(s.Alerts.Bell)
	case "alerts.loss_window":
		return time.Duration(s.Alerts.LossWindow).String()
	}
	return ""
}

func orUnset(v, fallback string) string {
	if v == "" {
		return "(unset: " + fallback + ")"
	}
	return strconv.Quote(v)
}

// Key reads the pre-shared key from the key file, or returns nil when none
// is set. One trailing newline (an editor's) is not part of the key. The
// live commands' --key, when given, wins over this.
//
// A key file that is not a regular file of at most maxKeyBytes is refused
// unread with a *boundedfile.Error naming it ("key file /dev/zero: not a
// regular file (a character device)"); an error of the system (not found,
// permission denied) comes back wrapped under "key_file: ".
func (s Settings) Key() ([]byte, error) {
	if s.KeyFile == "" {
		return nil, nil
	}
	b, err := boundedfile.Read("key file", expandHome(s.KeyFile), maxKeyBytes)
	var be *boundedfile.Error
	if errors.As(err, &be) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("key_file: %w", err)
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 {
		return nil, fmt.Errorf("key_file %s: the key is empty", s.KeyFile)
	}
	return b, nil
}

// expandHome lets a key file be written ~/... as people do in config files.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// check validates one key's value; "" when it is fine.
func check(key string, s Settings) string {
	switch key {
	case "name":
		// The live commands check the name's form (live.CheckName) as
		// they do --name's; here only what no name can be.
		if strings.TrimSpace(s.Name) == "" {
			return "name is empty"
		}
	case "theme":
		if _, ok := themes.ByName(s.Theme); !ok {
			return fmt.Sprintf("theme %q: one of %s", s.Theme, strings.Join(themes.Names(), ", "))
		}
	case "key_file":
		if s.KeyFile == "" {
			return "key_file is empty (leave it out for no key)"
		}
	case "last_host":
		if s.LastHost == "" {
			return "last_host is empty (leave it out instead)"
		}
	case "alerts.loss_percent":
		if p := s.Alerts.LossPercent; !(p > 0 && p <= 100) {
			return fmt.Sprintf("alerts.loss_percent %v: must be more than 0 and at most 100", p)
		}
	case "alerts.loss_window":
		if w := time.Duration(s.Alerts.LossWindow); w < time.Second || w > time.Hour {
			return fmt.Sprintf("alerts.loss_window %v: must be between 1s and 1h", w)
		}
	}
	return ""
}

// decodeError turns go-toml's errors (multi-line, with a caret under the
// spot) into one line naming the line.
func decodeError(path string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		line, _ := e.Position()
		return &fileError{Path: path, Line: line, Msg: fmt.Sprintf("unknown key %s (known: %s)", strings.Join(e.Key(), "."), strings.Join(Keys, ", "))}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if k := de.Key(); len(k) > 0 {
			msg = strings.Join(k, ".") + ": " + msg
		}
		return &fileError{Path: path, Line: line, Msg: msg}
	}
	return &fileError{Path: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// keysIn maps each key the document sets to the line that sets it. A key
// set inside an inline table (alerts = {bell = true}) gets the inline
// table's line.
func keysIn(doc []byte) map[string]int {
	out := map[string]int{}
	var p unstable.Parser
	p.Reset(doc)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(e.Key())
		case unstable.KeyValue:
			parts := append(append([]string(nil), table...), keyParts(e.Key())...)
			line := 0
			if it := e.Key(); it.Next() {
				line = p.Shape(p.Range(it.Node().Data)).Start.Line
			}
			prefix := strings.Join(parts, ".")
			if v := e.Value(); v.Kind == unstable.InlineTable {
				for kids := v.Children(); kids.Next(); {
					if kv := kids.Node(); kv.Kind == unstable.KeyValue {
						out[prefix+"."+strings.Join(keyParts(kv.Key()), ".")] = line
					}
				}
				continue
			}
			out[prefix] = line
		}
	}
	return out
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}
