package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

// TestReading: one line per run, from its counts: lock faults cannot be
// repaired by fencing, client faults can, unless the tokens themselves
// broke.
func TestReading(t *testing.T) {
	failover := []FaultWindow{{Type: "failover", Target: "redis-0", StartS: 11, EndS: 14}}
	tests := []struct {
		name string
		run  Run
		want string
	}{
		{"lock faults", Run{Faults: failover, SafetyFigures: checker.SafetyFigures{LockFaults: 2, Incidents: 2}},
			"unsafe: 2 lock faults under failover — the lock granted twice; fencing cannot repair this"},
		{"client fault fenced", Run{Fences: true, Faults: failover, SafetyFigures: checker.SafetyFigures{ClientFaults: 1, Incidents: 1}},
			"safe only with fencing: 1 client fault under failover"},
		{"client fault no tokens", Run{Faults: failover, SafetyFigures: checker.SafetyFigures{ClientFaults: 1, Incidents: 1}},
			"unsafe without fencing: 1 client fault under failover"},
		{"broken tokens", Run{Fences: true, Faults: failover, SafetyFigures: checker.SafetyFigures{ClientFaults: 1, Incidents: 1, DuplicateTokens: 1}},
			"fencing would repair this, but the fencing source itself broke (1 duplicate token, 0 token regressions)"},
		{"a fencing lock granted without a token", Run{Fences: true, Faults: failover, SafetyFigures: checker.SafetyFigures{ClientFaults: 1, Incidents: 1, ZeroTokens: 2}},
			"fencing would repair this, but the fencing source itself broke (0 duplicate tokens, 0 token regressions, 2 grants without a token)"},
		{"no fault", Run{}, "safe: no incident (no fault in this run)"},
		{"safe with evidence", Run{Faults: failover, VisitsInWindow: 212, ContendersInWindow: 3},
			"safe: no incident under failover, 212 visits, 3 contenders in the fault window"},
		{"inconclusive", Run{Faults: failover, Verdict: checker.VerdictInconclusive, VerdictReason: "0 visits after fault 0"},
			"inconclusive: no incident, but too little evidence (0 visits after fault 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reading(&tt.run); !strings.Contains(got, tt.want) {
				t.Errorf("Reading = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// TestReportAnswersFirst: report.md opens with the Summary (one row per
// lock with its safety, fencing, throughput, p99, availability and
// reading) before the Safety details; absent fields show "-".
func TestReportAnswersFirst(t *testing.T) {
	r := syntheticResult(2, []int{3})
	avail := 0.25
	r.Runs[0].LockFaults, r.Runs[0].Incidents = 2, 2
	r.Runs[1].AvailabilityDuringFault = &avail
	dir := outDir(t, "answer")
	if err := Render(dir, r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	summary, safety := strings.Index(s, "## Summary"), strings.Index(s, "## Safety")
	if summary < 0 || summary > safety {
		t.Fatalf("report.md does not open with the Summary (at %d, Safety at %d)", summary, safety)
	}
	part := s[summary:safety]
	for _, want := range []string{"availability during fault", "| 25% |", "unsafe: 2 lock faults under latency + kill + pause-client",
		"tokens (resource: observe)", "locklab version | -"} {
		if !strings.Contains(part, want) && !strings.Contains(s, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Count(part, "\n| ") != 1+len(r.Runs) {
		t.Errorf("summary has %d rows, want a header and one per run (%d)", strings.Count(part, "\n| ")-1, len(r.Runs))
	}
}
