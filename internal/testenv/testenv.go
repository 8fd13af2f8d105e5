// Package testenv holds the test helpers shared by locklab's packages: the
// policy for tests that need a server binary (skip under -short, fail loudly
// in CI, skip with a message elsewhere) and helpers that start real servers.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true or CI=1).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// RequireBinaries skips the test under -short and checks that every binary
// is on PATH: a missing one fails the test in CI (a suite that silently skips
// in CI proves nothing) and skips it, with the reason, elsewhere.
func RequireBinaries(t testing.TB, names ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real servers; skipped under -short")
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			msg := n + " not found on PATH (run `make deps`)"
			if InCI() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}
