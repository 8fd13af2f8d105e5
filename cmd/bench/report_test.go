package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/report"
)

func writeResult(t *testing.T, dir string, ops float64) {
	t.Helper()
	lat := report.Latency{Count: 10, P50Ms: 1, P99Ms: 5, Curve: [][2]float64{{0, 0.5}, {50, 1}, {99, 5}, {100, 6}}}
	r := &report.Result{Schema: report.Schema, Scenario: "cli-test", Complete: true, Workload: report.Workload{Clients: 2}}
	for _, lock := range []string{"redis-cad", "redis-watchdog ttl=5s"} {
		r.Runs = append(r.Runs, report.Run{
			Lock: lock, Clients: 2, Ops: int64(ops * 2), Throughput: ops, DurationS: 2, Complete: true,
			Acquire: lat, Handoff: lat, TimelineBucketMs: 100,
			Timeline: []report.TimelineBucket{{Completions: 5}, {Completions: 7, Violations: 1}},
			Faults:   []report.FaultWindow{{Type: "pause", Target: "redis-0", StartS: 0.05, EndS: 0.15}},
		})
	}
	if err := report.Write(dir, r); err != nil {
		t.Fatal(err)
	}
}

func TestReportCommand(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	writeResult(t, a, 100)
	writeResult(t, b, 80)

	var out, errw strings.Builder
	if err := reportCmd([]string{a}, &out, &errw); err != nil {
		t.Fatalf("report %s: %v\n%s", a, err, errw.String())
	}
	for _, f := range []string{"report.md", "report.html", "throughput.png", "latency.png", "safety.png", "timeline-redis-watchdog_ttl_5s.png"} {
		if _, err := os.Stat(filepath.Join(a, f)); err != nil {
			t.Error(err)
		}
	}

	cmp := filepath.Join(t.TempDir(), "cmp")
	out.Reset()
	// Flags after the folders work too.
	if err := reportCmd([]string{a, filepath.Join(b, "result.json"), "--out", cmp}, &out, &errw); err != nil {
		t.Fatalf("compare: %v\n%s", err, errw.String())
	}
	if !strings.Contains(out.String(), "100 → 80 (-20.0%)") {
		t.Errorf("comparison table lacks the throughput delta:\n%s", out.String())
	}
	for _, f := range []string{"comparison.md", "comparison.html", "compare-throughput.png", "safety.png"} {
		if _, err := os.Stat(filepath.Join(cmp, f)); err != nil {
			t.Error(err)
		}
	}

	if err := reportCmd(nil, &out, &errw); err == nil {
		t.Error("no folder: no error")
	}
	if err := reportCmd([]string{t.TempDir()}, &out, &errw); err == nil {
		t.Error("folder without result.json: no error")
	}
}
