// Package systool finds the system tools some tests drive (prometheus,
// promtool, tmux), so the README's `go test -race ./...` passes on a
// machine with Go alone while CI can never pass by skipping them.
package systool

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// require is the environment variable that turns a missing tool from a skip
// into a failure; .ci/run sets it to 1.
const require = "LAGSCOPE_REQUIRE_TOOLS"

// Need returns the path of the tool name. Without it the test skips with one
// line saying why (hint says where to get it), or fails when require is 1.
func Need(t testing.TB, name, hint string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s is not on the PATH (%s)", name, hint)
	if os.Getenv(require) == "1" {
		t.Fatal(msg + "; " + require + "=1 makes that a failure")
	}
	t.Skip(msg + "; skipping (set " + require + "=1 to fail instead)")
	return ""
}
