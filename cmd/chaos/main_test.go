package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/cli"
	"github.com/locklab/locklab/internal/testenv"
	"github.com/locklab/locklab/workload"
)

func TestMain(m *testing.M) {
	workload.MaybeWorker()
	os.Exit(m.Run())
}

// TestExitCodes: the same run passes with the right expectation (exit 0)
// and fails with its opposite (exit 1); a bad file exits 2; a safety claim
// without enough visits is inconclusive (exit 3).
func TestExitCodes(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	const head = "name: exit-codes\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad, redis-set-del]\n" +
		"workload: {clients: 3, duration: 2s, ttl: 300ms, critical_section: 500ms}\n"
	tests := []struct {
		name, expect string
		code         int
	}{
		{"right", "expect:\n  default: {violations: \">0\"}\n", cli.ExitOK},
		{"opposite", "expect:\n  default: {violations: 0}\n", cli.ExitFailed},
		{"bad", "expect:\n  default: {violations: \"~3\"}\n", cli.ExitBadInput},
		{"inconclusive", "expect:\n  redis-cad: {lock_faults: 0, min_visits: 1000000}\n  redis-set-del: {violations: \">0\"}\n", cli.ExitInconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(file, []byte(head+tt.expect), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"run", "-q", "--out", filepath.Join(dir, "out"), file}, &stdout, &stderr)
			if code := cli.Code(err, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			if tt.code == cli.ExitFailed && !strings.Contains(stdout.String(), "failed 0/1") {
				t.Errorf("no failed cell in the matrix:\n%s", stdout.String())
			}
			if tt.code == cli.ExitInconclusive && !strings.Contains(stdout.String(), "inconclusive 0/1") {
				t.Errorf("no inconclusive cell in the matrix:\n%s", stdout.String())
			}
		})
	}
}

func TestList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := cli.Code(run(context.Background(), []string{"list"}, &stdout, &stderr), &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"pause-client", "clock-jump", "pause-holder", "etcd-minority-partition"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("chaos list lacks %q", want)
		}
	}
}
