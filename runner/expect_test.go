package runner

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/workload"
)

// TestEvaluateVerdicts: a safety claim is inconclusive without evidence (a
// fault that did not apply, too few visits after a fault, a resource-call
// error), failed when the counts contradict it, met otherwise.
func TestEvaluateVerdicts(t *testing.T) {
	sc := &scenarios.Scenario{Expect: map[string]scenarios.Expect{"default": {Violations: "0", LockFaults: "0"}}}
	good := report.FaultWindow{Type: "kill", Target: "redis-0", StartS: 1, VisitsAfter: 10}
	tests := []struct {
		name, want, reason string
		run                report.Run
	}{
		{"evidence", scenarios.Met, "", report.Run{Faults: []report.FaultWindow{good}}},
		{"failed fault", scenarios.Inconclusive, "did not apply",
			report.Run{Faults: []report.FaultWindow{{Type: "kill", Target: "redis-0", Error: "no such node", VisitsAfter: 10}}}},
		{"few visits", scenarios.Inconclusive, "2 visits after fault 0",
			report.Run{Faults: []report.FaultWindow{{Type: "kill", Target: "redis-0", VisitsAfter: 2}}}},
		{"resource error", scenarios.Inconclusive, "resource-call errors",
			report.Run{Faults: []report.FaultWindow{good}, Errors: map[string]int64{workload.ErrResource: 1}}},
		{"violation", scenarios.Failed, "violations: got 2",
			report.Run{Violations: 2, Incidents: 1, ClientFaults: 1, Faults: []report.FaultWindow{{Type: "kill", VisitsAfter: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := tt.run
			run.Lock, run.LockName, run.Complete, run.Visits = "redis-cad", "redis-cad", true, 50
			res := &report.Result{Runs: []report.Run{run}}
			evaluate(sc, res)
			got := res.Runs[0]
			if got.Verdict != tt.want || !strings.Contains(got.VerdictReason, tt.reason) || res.Verdict != tt.want {
				t.Errorf("verdict %q (%q), result %q; want %q containing %q", got.Verdict, got.VerdictReason, res.Verdict, tt.want, tt.reason)
			}
			if met := *got.ExpectMet; met != (tt.want == scenarios.Met) {
				t.Errorf("expect_met %v", met)
			}
		})
	}
}
