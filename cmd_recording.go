package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lagscope/lagscope/probe/record"
	"github.com/lagscope/lagscope/textsafe"
)

// What replay and report say about the file they are given: one plain
// sentence naming it, in the user's terms, rather than the reader's
// chain of errors.

// openRecording reads the recording at path. A file that is not a
// recording (a directory, too), one in a format this build cannot read,
// one cut short inside its header, one that does not exist or may not be
// read, is bad input (exit 2) in one line naming the file; any other
// failure of the system comes back as it is (exit 1). A tail cut off or
// damaged is no error: the caller says so with stopNote.
func openRecording(path string) (*record.Recording, error) {
	name := textsafe.Terminal(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, usagef("%s is a directory, not a lagscope recording", name)
	}
	rec, err := record.Open(path)
	if err == nil {
		return rec, nil
	}
	var se *record.StopError
	switch {
	case errors.Is(err, record.ErrNotRecording):
		if st, serr := os.Stat(path); serr == nil && st.Size() == 0 {
			return nil, usagef("%s is not a lagscope recording (the file is empty)", name)
		}
		return nil, usagef("%s is not a lagscope recording", name)
	case errors.Is(err, record.ErrVersion):
		return nil, usagef("%s: %s", name, textsafe.Terminal(strings.TrimPrefix(err.Error(), "record: ")))
	case errors.As(err, &se):
		// The reader stops inside the header only when the file ends there.
		return nil, usagef("%s is cut short: it ends inside its header, before anything was recorded", name)
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission):
		return nil, usagef("%v", err)
	}
	return nil, err
}

// stopNote tells the user, in one line on stderr, that the recording at
// path ends early — cut short (the writer was killed, the disk filled) or
// at a damaged record — where, and what the command shows instead (rest).
func stopNote(stderr io.Writer, cmd, path string, rec *record.Recording, rest string) {
	st := rec.Stop
	if st == nil {
		return
	}
	name := textsafe.Terminal(path)
	if errors.Is(st, record.ErrTruncated) {
		fmt.Fprintf(stderr, "lagscope %s: note: %s was cut short at byte %d (record %d); %s\n", cmd, name, st.Offset, st.Index, rest)
		return
	}
	fmt.Fprintf(stderr, "lagscope %s: note: %s has a damaged record at byte %d (record %d): %s; %s\n",
		cmd, name, st.Offset, st.Index, textsafe.Terminal(st.Detail), rest)
}
