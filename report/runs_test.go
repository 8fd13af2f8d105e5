package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

func TestSummarizeRuns(t *testing.T) {
	run := func(lock string, tp, p50, p99 float64, violations int, errMsg string) Run {
		return Run{Lock: lock, Ops: 10, Throughput: tp, Acquire: Latency{P50Ms: p50, P99Ms: p99}, Errors: map[string]int64{"timeout": 1}, Error: errMsg,
			SafetyFigures: checker.SafetyFigures{Violations: violations, Incidents: violations, LockFaults: violations},
		}
	}
	results := []*Result{
		{Scenario: "s", Runs: []Run{run("a", 100, 1, 10, 0, ""), run("b", 50, 2, 20, 1, "")}},
		{Scenario: "s", Runs: []Run{run("a", 300, 3, 30, 0, ""), run("b", 70, 4, 40, 2, "")}},
		{Scenario: "s", Runs: []Run{run("a", 200, 2, 20, 0, ""), run("b", 0, 0, 0, 0, "cluster did not start")}},
	}
	// a lost two leases in two runs (zombie medians 100 and 300 ms, the
	// longest 900 ms), none in the third; b never measured it.
	zombies := []struct {
		lost     int
		p50, max *float64
	}{{1, ptr(100.0), ptr(100.0)}, {1, ptr(300.0), ptr(900.0)}, {0, nil, nil}}
	for i, z := range zombies {
		results[i].Runs[0].LostLeases, results[i].Runs[0].ZombieMsP50, results[i].Runs[0].ZombieMsMax = ptr(z.lost), z.p50, z.max
	}
	s := SummarizeRuns(results)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"runs", s.Runs, 3},
		{"locks", len(s.Locks), 2},
		{"a throughput", s.Locks[0].Throughput, Spread{Median: 200, Min: 100, Max: 300}},
		{"a p99", s.Locks[0].AcquireP99Ms, Spread{Median: 20, Min: 10, Max: 30}},
		{"b throughput without the failed run (even count: mean of the middle)", s.Locks[1].Throughput, Spread{Median: 60, Min: 50, Max: 70}},
		{"b failed", s.Locks[1].Failed, 1},
		{"b violations summed", s.Locks[1].Violations, 3},
		{"b errors summed", s.Locks[1].Errors, int64(3)},
		{"b ops summed", s.Locks[1].Ops, int64(30)},
		{"a lost leases summed", deref(s.Locks[0].LostLeases), 2},
		{"a zombie median of the runs' medians", deref(s.Locks[0].ZombieMsP50), 200.0},
		{"a zombie max", deref(s.Locks[0].ZombieMsMax), 900.0},
		{"a zombie cell", s.Locks[0].zombieCell(), "200/900 (2)"},
		{"b zombie cell: not measured", s.Locks[1].zombieCell(), "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}

	dir := t.TempDir()
	if err := WriteRuns(dir, s); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back RunsSummary
	if err := json.Unmarshal(data, &back); err != nil || back.Locks[0].Throughput.Median != 200 {
		t.Errorf("runs.json: %v, %+v", err, back)
	}
	md, err := os.ReadFile(filepath.Join(dir, "runs.md"))
	if err != nil || !strings.Contains(string(md), "| a | 3 | 200 [100 - 300] |") || !strings.Contains(string(md), "| b | 3 (1 failed) |") {
		t.Errorf("runs.md: %v\n%s", err, md)
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil || !strings.Contains(b.String(), "200 [100 - 300]") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
}
