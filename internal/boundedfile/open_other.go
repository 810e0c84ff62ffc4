//go:build !unix

package boundedfile

// openFlags is empty where there is no O_NONBLOCK; the stat before the
// open refuses a named pipe there.
const openFlags = 0
