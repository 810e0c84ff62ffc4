// Package longtest says how much of a randomised test to run: all of it
// where LAGSCOPE_LONG=1 (.ci/run sets it), a share of it by default, so
// the README's test command stays short and CI still runs every seed.
package longtest

import "os"

// Env is the variable that asks for the long runs.
const Env = "LAGSCOPE_LONG"

// Long reports whether the long runs are asked for.
func Long() bool { return os.Getenv(Env) == "1" }

// Count is long where the long runs are asked for, short otherwise.
func Count(short, long int) int {
	if Long() {
		return long
	}
	return short
}
