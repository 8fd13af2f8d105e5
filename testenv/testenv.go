// Package testenv holds the test helpers shared by locklab's packages: the
// policy for tests that need a server binary (skip under -short, fail loudly
// in CI, skip with a message elsewhere) and helpers that start real servers.
// Of locklab it imports only cluster and locks; it never imports checker,
// scenarios, faults, runner or workload, and only tests import it
// (docs/architecture.md).
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// InCI reports whether the tests run in CI (CI=true or CI=1).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// Unavailable ends a test whose precondition is missing on this machine
// (a binary, a kernel interface): it fails in CI, where every precondition
// must hold, and skips with the reason elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
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
			Unavailable(t, "%s not found on PATH (run `make deps`)", n)
		}
	}
}

// Eventually polls f until it returns nil and fails the test with f's last
// error when d passes first: waiting by polling, never by a bare sleep.
func Eventually(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, d, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
}

// SentinelDemoteWithin bounds how long Sentinel takes to turn a healed old
// primary into a replica (+convert-to-slave), from Sentinel's own periods:
// it INFOs replicas every 10 s, waits 4 publish periods (8 s) after the
// node reported its role and was last down, and acts at the next INFO, so
// up to about 30 s on a quiet machine; twice that leaves a loaded one its
// slack.
const SentinelDemoteWithin = 60 * time.Second
