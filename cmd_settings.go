package main

import (
	"fmt"
	"io"
	"time"

	"github.com/lagscope/lagscope/config"
	"github.com/lagscope/lagscope/probe"
	"github.com/lagscope/lagscope/probe/session"
)

// The config file in the live commands: host, join and watch take
// the name, theme, key file, last host and alert thresholds from it; the demo
// only the theme and the alerts (its players are its own). Flags win over
// the file, the file over the defaults. sim, replay and report never call
// any of this: their output depends on their inputs alone.

// settle reads the config file once and puts what it sets under the flags
// the user did not give. The demo takes the theme and the alerts alone.
func (lf *liveFlags) settle() error {
	if lf.conf != nil {
		return nil
	}
	c, err := loadConfig(lf.fs)
	if err != nil {
		return err
	}
	lf.conf = c
	s := c.Settings
	if s.Theme != "" {
		lf.theme = s.Theme
	}
	lf.alerts = probe.AlertConfig{LossPercent: s.Alerts.LossPercent, LossWindow: time.Duration(s.Alerts.LossWindow)}
	lf.bell = s.Alerts.Bell
	if lf.cmd == "demo" {
		return nil
	}
	if !s.Trace && !lf.fs.Changed("no-trace") {
		lf.noTrace = true
	}
	if c.From["name"] == config.FromFile {
		if err := session.CheckName(s.Name); err != nil {
			return usagef("%s:%d: name %q: %v", c.Path, c.Line["name"], s.Name, err)
		}
		lf.name = s.Name
	}
	if !lf.fs.Changed("key") {
		key, err := s.Key()
		if err != nil {
			// A key file that is missing, empty, too large or not a
			// regular file is bad input; one the system refuses is not.
			return fileInputError(fmt.Errorf("%s:%d: %w", c.Path, c.Line["key_file"], err))
		}
		lf.key = string(key)
	}
	return nil
}

// joinAddr is the address join and watch go to: the one given, or the
// config file's last_host when none is (said on stderr, so the user knows
// where it came from).
func (lf *liveFlags) joinAddr(args []string, stderr io.Writer) (string, error) {
	if len(args) > 1 {
		return "", usagef("unexpected argument %q", args[1])
	}
	if err := lf.settle(); err != nil {
		return "", err
	}
	if len(args) == 1 {
		return args[0], nil
	}
	last := lf.conf.Settings.LastHost
	if last == "" {
		return "", usagef("needs the host's address, e.g. lagscope %s 192.168.1.20:7373 (the config file has no last_host yet)", lf.cmd)
	}
	fmt.Fprintf(stderr, "lagscope %s: no address given: going to %s, the last host (%s)\n", lf.cmd, last, lf.conf.Path)
	return last, nil
}

// rememberHost makes rc save addr as the config file's last_host once the
// host has welcomed this machine. The error, if any, is for a note on
// stderr after the run: the TUI owns the terminal during it.
func (lf *liveFlags) rememberHost(addr string) (joined func(), saveErr func() error) {
	var err error
	joined = func() {
		if lf.conf == nil || lf.conf.Settings.LastHost == addr {
			return
		}
		err = config.SaveLastHost(lf.conf.Path, addr)
	}
	return joined, func() error { return err }
}
