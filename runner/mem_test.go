package runner_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/runner"
)

// TestMemNeedsNoCluster runs the calibration lock with no cluster section:
// nothing starts, the run completes and the resource sees no violation.
func TestMemNeedsNoCluster(t *testing.T) {
	sc := parse(t, `
name: mem-only
locks: [mem]
workload: {clients: 4, duration: 500ms, critical_section: 0s, keys: 1}
`)
	res := runScenario(t, sc)
	r := res.Runs[0]
	if !r.Complete || r.Ops == 0 || r.Violations != 0 || r.LostUpdates != 0 || r.StaleTokens != 0 {
		t.Errorf("mem run: complete %v ops %d violations %d lost %d stale %d", r.Complete, r.Ops, r.Violations, r.LostUpdates, r.StaleTokens)
	}
	if r.PeakRSSMB <= 0 {
		t.Errorf("peak_rss_mb = %v, want the harness's peak RSS", r.PeakRSSMB)
	}
}

// TestMemRefusesClientProcesses: a mem lock is shared only inside the
// harness process, so client processes would each get their own.
func TestMemRefusesClientProcesses(t *testing.T) {
	sc := parse(t, `
name: mem-processes
locks: [mem]
workload: {clients: 2, duration: 1s, process_per_client: true}
`)
	_, err := runner.Plan(sc, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), ":3: locks: mem") {
		t.Fatalf("Plan = %v, want an error naming line 3 and mem", err)
	}
}
