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

// TestMissingProgramStartsNothing: a client program that cannot start
// (missing, not executable, an interpreter's missing script, in --exec or
// in a scenario file) is bad input: chaos run and chaos atlas exit 2
// naming it, before any server starts or any results folder is made.
func TestMissingProgramStartsNothing(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh") // exists, not executable
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := func(command string) string {
		file := filepath.Join(dir, "s.yaml")
		src := "name: missing\ncluster: {redis: {primaries: 1}}\nlocks: [{name: exec, backend: redis, command: [" + command + "]}]\n" +
			"workload: {clients: 2, duration: 1s, ttl: 1s}\n"
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"run --exec missing", []string{"run", "--results", out, "--exec", "x=" + filepath.Join(dir, "nope"), "--backend", "redis", scenario("true")}, "nope"},
		{"run --exec not executable", []string{"run", "--results", out, "--exec", "x=" + plain, "--backend", "redis", scenario("true")}, "plain.sh"},
		{"run --exec missing script", []string{"run", "--results", out, "--exec", "x=python3 " + filepath.Join(dir, "missing.py"), "--backend", "redis", scenario("true")}, "missing.py"},
		{"run --exec not in PATH", []string{"run", "--results", out, "--exec", "x=no-such-program-here --x", "--backend", "redis", scenario("true")}, "no-such-program-here"},
		{"run of a scenario whose program is missing", []string{"run", "--results", out, scenario(`"` + filepath.Join(dir, "nope") + `"`)}, "s.yaml:3"},
		{"atlas --exec missing", []string{"atlas", "--out", out, "--families", "restart-empty", "--exec", "x=" + filepath.Join(dir, "nope"), "--backend", "redis"}, "nope"},
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
