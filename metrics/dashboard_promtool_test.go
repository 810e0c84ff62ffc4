package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lagscope/lagscope/internal/systool"
)

// promtool parses every query of docs/grafana-dashboard.json: each becomes
// the expression of a recording rule, and `promtool check rules` must pass
// the file (it parses each expression as Prometheus does). A broken
// query — a typo in a function, an unbalanced brace — fails here, before
// anyone imports the dashboard.
func TestDashboardQueriesPassPromtool(t *testing.T) {
	promtool := systool.Need(t, "promtool", "it comes with Debian's prometheus package")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	qs := dashboardQueries(t)
	for i, q := range qs {
		// A JSON string is a YAML double-quoted scalar.
		expr, _ := json.Marshal(q)
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i+1, expr)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", len(qs))) {
		t.Fatalf("promtool check rules: %v\n%s\nthe rules:\n%s", err, out, rules.String())
	}
	// The check itself fails on a broken query.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("groups:\n  - name: bad\n    rules:\n      - record: dashboard:bad\n        expr: \"max by (session (lagscope_rung)\"\n"), 0o644)
	if out, err := exec.Command(promtool, "check", "rules", bad).CombinedOutput(); err == nil {
		t.Fatalf("promtool passed a broken query:\n%s", out)
	}
}
