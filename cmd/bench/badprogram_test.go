package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
)

// TestMissingProgramStartsNothing: bench run of a client program that
// cannot start (in --exec, or in the scenario file) exits 2 naming it,
// before any server starts or any results folder is made.
func TestMissingProgramStartsNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	src := "name: missing\ncluster: {redis: {primaries: 1}}\nlocks: [{name: exec, backend: redis, command: [python3, " + filepath.Join(dir, "gone.py") + "]}]\n" +
		"workload: {clients: 2, duration: 1s, ttl: 1s}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--exec missing", []string{"run", "--results", out, "--exec", "x=" + filepath.Join(dir, "nope"), "--backend", "redis", "redis-baseline"}, "--exec x: program"},
		{"scenario's script missing", []string{"run", "--results", out, file}, "s.yaml:3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), c.args, &stdout, &stderr), &stderr)
			if code != cli.ExitBadInput || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, want 2 naming %q\nstdout:\n%s\nstderr:\n%s", code, c.want, stdout.String(), stderr.String())
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was made (%v): nothing may start on bad input", out, err)
			}
		})
	}
}
