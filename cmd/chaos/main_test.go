package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/testenv"
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

// TestJSONOnly: with --format json stdout holds only JSON, one result
// document per run; the verdict matrix goes to stderr.
func TestJSONOnly(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	const yaml = "name: json-only\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad]\n" +
		"workload: {clients: 2, duration: 1s}\nexpect:\n  default: {violations: 0}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"run", file, "--format", "json", "-q", "--runs", "2", "--out", filepath.Join(dir, "out")}, &stdout, &stderr)
	if code := cli.Code(err, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	docs := 0
	for {
		var r report.Result
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("stdout is not only JSON documents: %v\n%s", err, stdout.String())
		}
		if r.Scenario != "json-only" {
			t.Errorf("document %d: scenario %q", docs, r.Scenario)
		}
		docs++
	}
	if docs != 2 {
		t.Errorf("%d JSON documents, want 2", docs)
	}
	if !strings.Contains(stderr.String(), "verdict: met") {
		t.Errorf("no verdict matrix on stderr:\n%s", stderr.String())
	}
}

func TestVersionAndValidate(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--version"}, 0, "chaos github.com/locklab/locklab "},
		{[]string{"validate", "pause-holder", "--locks", "redis-watchdog"}, 0, "ok pause-holder (1 locks, 1 faults)"},
		{[]string{"validate", "pause-holdr"}, 2, `did you mean "pause-holder"?`},
		{[]string{"atlsa"}, 2, `did you mean "atlas"?`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), tt.args, &stdout, &stderr), &stderr)
			if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, stdout.String(), stderr.String(), tt.code, tt.want)
			}
		})
	}
}
