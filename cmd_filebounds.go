package main

import (
	"errors"
	"io/fs"
)

// maxScenarioBytes is the most a scenario file of `lagscope sim` may hold:
// the largest real one is a few KiB; a path naming something larger, or not
// a regular file, is refused before it is read (internal/boundedfile). The
// config file and the key file have bounds of their own, in package config.
const maxScenarioBytes = 4 << 20

// fileInputError sorts an error from reading a file the user named (the
// config file, its key file, a scenario) into the exit codes of docs/cli.md.
// The system refusing an existing path — permission denied, not a
// directory, an I/O error — is a runtime failure (exit 1) in the system's
// words. Everything else is bad input (exit 2) in one line: a file that does
// not exist, is not a regular file, is larger than its bound, or does not
// decode.
func fileInputError(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return usageError{err.Error()}
}
