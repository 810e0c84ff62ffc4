package main

import (
	"bytes"
	"strings"
	"testing"
)

// A release build stamps the version in with -ldflags -X main.version=...;
// `lagscope version` prints it in place of the module's "(devel)".
func TestVersionPrefersStampedVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "lagscope ") {
		t.Fatalf("unstamped: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	old := version
	t.Cleanup(func() { version = old })
	version = "v1.2.3"
	out.Reset()
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "lagscope v1.2.3 ") {
		t.Fatalf("stamped v1.2.3: exit %d, stdout %q", code, out.String())
	}
	if code := run([]string{"version", "extra"}, &out, &errb); code != 2 {
		t.Fatalf("`version extra` exit %d, want 2", code)
	}
}
