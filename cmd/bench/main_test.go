package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/testenv"
)

// TestBadScenarios: every class of bad input exits 2 with file:line: field:
// and starts nothing (the results folder is never created).
func TestBadScenarios(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: x\nlocks: [redis-cad]\nworkload:\n  clients: 2\n  durration: 5s\n",
			"x.yaml:5: workload.durration: unknown field"},
		{"malformed duration", "name: x\nlocks: [redis-cad]\nworkload:\n  duration: 10 seconds\n",
			"x.yaml:4: workload.duration:"},
		{"unknown lock", "name: x\nlocks:\n  - redis-cad\n  - redis-foo\n",
			"x.yaml:4: locks[1]:"},
		{"negative clients", "name: x\nlocks: [redis-cad]\nworkload:\n  clients: -3\n",
			"x.yaml:4: workload.clients:"},
		{"bad fault node", "name: x\nlocks: [redis-cad]\nfaults:\n  - {at: 1s, type: kill, node: redis-7}\n",
			"x.yaml:4: faults[0].node:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "x.yaml")
			if err := os.WriteFile(file, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "results")
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"run", "-q", "--results", out, file}, &stdout, &stderr)
			code := cli.Code(err, &stderr)
			if code != cli.ExitBadInput {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitBadInput, stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, filepath.Join(dir, tt.want)) {
				t.Errorf("stderr %q does not contain %q", msg, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("results folder created for a bad scenario: %v", err)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"run"}, {"run", "--format", "xml", "redis-baseline"}, {"run", "--locks", "zk-recipe", "redis-baseline"}} {
		var stdout, stderr bytes.Buffer
		if code := cli.Code(run(context.Background(), args, &stdout, &stderr), &stderr); code != cli.ExitBadInput {
			t.Errorf("bench %v: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Code(run(context.Background(), []string{"list"}, &stdout, &stderr), &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "redis-baseline") || !strings.Contains(stdout.String(), "redis-watchdog") {
		t.Errorf("bench list: exit %d, output %q", code, stdout.String())
	}
}

// TestFlagsAnywhere: flags after the scenario are flags, not file names,
// and a -- ends them.
func TestFlagsAnywhere(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(file, []byte("name: x\nlocks: [redis-cad]\nworkload:\n  clients: -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"flags after the file", []string{"run", file, "-q", "--results", out, "--duration", "5s"}, file + ":4: workload.clients:"},
		{"lock flag after a built-in", []string{"run", "redis-baseline", "--locks", "zk-recipe"}, "zk-recipe"},
		{"after --, a file name", []string{"run", "-q", "--", "--duration"}, "--duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), tt.args, &stdout, &stderr), &stderr)
			if code != cli.ExitBadInput || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tt.want)
			}
			if flagAsFile := strings.Contains(stderr.String(), "scenarios: --"); flagAsFile != slices.Contains(tt.args, "--") {
				t.Errorf("a flag read as a scenario: %v, want it only after --: %q", flagAsFile, stderr.String())
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("results folder created for bad input: %v", err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if code := cli.Code(run(context.Background(), args, &stdout, &stderr), &stderr); code != 0 ||
			!strings.HasPrefix(stdout.String(), "bench github.com/locklab/locklab ") {
			t.Errorf("bench %v: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
}

// TestValidate: validate checks what run checks (file, lock names, the
// run's overrides), prints ok lines for valid scenarios and exits 2 when
// any is bad, with file:line and a "did you mean" where a name is close.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "name: good\nlocks: [redis-cad, redlock]\nfaults:\n  - {at: 1s, type: kill, node: redis-0}\n")
	tab := write("tab.yaml", "name: x\nlocks: [redis-cad]\nworkload:\n  clients: 2\n\tduration: 5s\n")
	typo := write("typo.yaml", "name: x\nlocks:\n  - redis-ca\n")
	fieldTypo := write("field.yaml", "name: x\nlocks: [redis-cad]\nworkload:\n  durration: 5s\n")
	faultTypo := write("fault.yaml", "name: x\nlocks: [redis-cad]\nfaults:\n  - {at: 1s, type: pasue, node: redis-0}\n")
	expectTypo := write("expect.yaml", "name: x\nlocks: [redis-cad]\nexpect:\n  defualt: {violations: 0}\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"built-in", []string{"redis-baseline", "--locks", "redis-cad"}, 0, "ok redis-baseline (1 locks, 0 faults)\n", ""},
		{"file", []string{good}, 0, "ok " + good + " (2 locks, 1 faults)\n", ""},
		{"tab", []string{tab}, 2, "", tab + ":5: a tab character: YAML indentation must use spaces"},
		{"lock typo in a file", []string{typo}, 2, "", typo + `:3: locks[0]: unknown lock "redis-ca" (known: `},
		{"lock typo suggestion", []string{typo}, 2, "", `; did you mean "redis-cad"?`},
		{"--locks typo", []string{"redis-baseline", "--locks", "redis-ca"}, 2, "", `--locks: "redis-ca" is not among the scenario's locks (redis-setnx-expire, redis-set-del, redis-cad, redis-watchdog, redis-reentrant); did you mean "redis-cad"?`},
		{"scenario typo", []string{"redis-baselin"}, 2, "", `did you mean "redis-baseline"?`},
		{"field typo", []string{fieldTypo}, 2, "", fieldTypo + `:4: workload.durration: unknown field (allowed: `},
		{"field typo suggestion", []string{fieldTypo}, 2, "", `; did you mean "duration"?`},
		{"fault type typo", []string{faultTypo}, 2, "", `unknown fault type "pasue" (known: `},
		{"fault type suggestion", []string{faultTypo}, 2, "", `; did you mean "pause"?`},
		{"expect key typo", []string{expectTypo}, 2, "", `; did you mean "default"?`},
		{"one bad of two", []string{good, typo}, 2, "ok " + good, "1 of 2 scenarios invalid"},
		{"bad provider", []string{"--provider", "k8s", good}, 2, "", `--provider "k8s"`},
		{"provider override checked", []string{"--provider", "external", good}, 2, "", "provider external needs cluster.external"},
		{"nothing", nil, 2, "", "no scenario given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), append([]string{"validate"}, tt.args...), &stdout, &stderr), &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestShow: show prints the built-in file byte for byte (so the shown
// text is the repository's scenarios/NAME.yaml) and suggests names.
func TestShow(t *testing.T) {
	want, err := os.ReadFile("../../scenarios/redis-baseline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Code(run(context.Background(), []string{"show", "redis-baseline"}, &stdout, &stderr), &stderr); code != 0 || !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("show redis-baseline: exit %d, output differs from scenarios/redis-baseline.yaml (%d vs %d bytes); stderr %q", code, stdout.Len(), len(want), stderr.String())
	}
	for _, args := range [][]string{{"show", "redis-baselin"}, {"show"}, {"show", "a", "b"}} {
		stdout.Reset()
		stderr.Reset()
		if code := cli.Code(run(context.Background(), args, &stdout, &stderr), &stderr); code != cli.ExitBadInput || stdout.Len() > 0 {
			t.Errorf("bench %v: exit %d, stdout %q", args, code, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "did you mean") && !strings.Contains(stderr.String(), "Usage: bench show") {
		t.Errorf("no hint or usage: %q", stderr.String())
	}
}

func TestUnknownVerbSuggests(t *testing.T) {
	tests := []struct{ verb, want string }{
		{"rnu", `unknown verb "rnu"; did you mean "run"?`},
		{"valdiate", `did you mean "validate"?`},
		{"frobnicate", `unknown verb "frobnicate"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), []string{tt.verb}, &stdout, &stderr), &stderr)
			if code != cli.ExitBadInput || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestRunExpectAndRuns: bench run judges a scenario with expect as chaos
// run does (0 met, 1 failed, 3 inconclusive); without expect it exits 0.
// --runs 2 writes runs.json and runs.md beside run-1 and run-2, and
// --format json keeps stdout to one JSON document per run.
func TestRunExpectAndRuns(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	const head = "name: bench-expect\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad, redis-set-del]\n" +
		"workload: {clients: 3, duration: 2s, ttl: 300ms, critical_section: 500ms}\n"
	tests := []struct {
		name, expect string
		extra        []string
		code         int
	}{
		{"no expect, two runs, json", "", []string{"--runs", "2", "--format", "json"}, cli.ExitOK},
		{"met", "expect:\n  default: {violations: \">0\"}\n", nil, cli.ExitOK},
		{"failed", "expect:\n  default: {violations: 0}\n", nil, cli.ExitFailed},
		{"throughput gate", "expect:\n  default: {throughput: \">=1000000\", violations: \">=0\"}\n", nil, cli.ExitFailed},
		{"inconclusive", "expect:\n  redis-cad: {lock_faults: 0, min_visits: 1000000}\n  redis-set-del: {violations: \">0\"}\n", nil, cli.ExitInconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(file, []byte(head+tt.expect), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"run", file, "-q", "--out", out}, tt.extra...), &stdout, &stderr)
			if code := cli.Code(err, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			if tt.expect == "" {
				if strings.Contains(stdout.String()+stderr.String(), "verdict:") {
					t.Errorf("a scenario without expect was judged:\n%s", stderr.String())
				}
				dec := json.NewDecoder(&stdout)
				docs := 0
				for {
					var r report.Result
					if err := dec.Decode(&r); err == io.EOF {
						break
					} else if err != nil {
						t.Fatalf("stdout is not only JSON documents: %v", err)
					}
					docs++
				}
				if docs != 2 {
					t.Errorf("%d JSON documents on stdout, want 2 (one per run)", docs)
				}
				data, err := os.ReadFile(filepath.Join(out, "runs.json"))
				if err != nil {
					t.Fatal(err)
				}
				var s report.RunsSummary
				if err := json.Unmarshal(data, &s); err != nil || s.Runs != 2 || len(s.Locks) != 2 || s.Locks[0].Throughput.Median <= 0 {
					t.Errorf("runs.json: %v %+v", err, s)
				}
				for _, f := range []string{"runs.md", "run-1/result.json", "run-2/result.json"} {
					if _, err := os.Stat(filepath.Join(out, f)); err != nil {
						t.Error(err)
					}
				}
				return
			}
			if !strings.Contains(stdout.String(), "verdict: "+map[int]string{0: "met", 1: "failed", 3: "inconclusive"}[tt.code]) {
				t.Errorf("no matching verdict line:\n%s", stdout.String())
			}
		})
	}
}
