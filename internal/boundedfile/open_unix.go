//go:build unix

package boundedfile

import "syscall"

// openFlags makes the open non-blocking: opening a FIFO for reading
// returns at once instead of waiting for a writer.
const openFlags = syscall.O_NONBLOCK
