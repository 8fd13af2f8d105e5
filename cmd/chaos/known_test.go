package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/testenv"
)

// TestKnownCatalogue runs one known failure once through `chaos run
// --known NAME --runs 1` on a real Redis and checks the catalogue it
// writes: the scenario, its sources and lock, k/1 with its Wilson
// interval and the command. Whether the key was lost in this one run is
// the scenario's business (its expect), not this test's: exit 0 or 1.
func TestKnownCatalogue(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Unavailable(t, "/dev/fuse: %v", err)
	}
	out := filepath.Join(t.TempDir(), "known")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"run", "--known", "-q", "--runs", "1", "--out", out, "known-redis-power-cut-everysec"}, &stdout, &stderr)
	if code := cli.Code(err, &stderr); code != cli.ExitOK && code != cli.ExitFailed {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "known.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "known.html")); err != nil {
		t.Error(err)
	}
	for _, want := range []string{"**known-redis-power-cut-everysec**", "https://github.com/dsrhaslab/lazyfs", "| redis-cad |",
		"`lock_faults >0`", "`chaos run --runs 1 known-redis-power-cut-everysec`"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("known.md lacks %q:\n%s", want, md)
		}
	}
	if !regexp.MustCompile(`\| [01]/1 \[0\.\d\d–[01]\.\d\d\] \|`).Match(md) {
		t.Errorf("known.md has no k/1 with its interval:\n%s", md)
	}
	// The run's data dirs were on the lossy filesystem: its result says so.
	res, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"lossy_disks": true`) {
		t.Errorf("result.json lacks \"lossy_disks\": true")
	}
}

// TestKnownBadName: --known takes only known-<slug> built-ins; anything
// else is bad input and starts nothing.
func TestKnownBadName(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"run", "--known", "--out", t.TempDir(), "redis-baseline"}, &stdout, &stderr)
	if code := cli.Code(err, &stderr); code != cli.ExitBadInput || !strings.Contains(stderr.String(), "not a known failure") {
		t.Fatalf("exit %d, want %d with 'not a known failure'\nstderr:\n%s", code, cli.ExitBadInput, stderr.String())
	}
}
