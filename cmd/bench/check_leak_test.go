package main

import (
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/recheck"
	"github.com/locklab/locklab/report"
)

// TestLeakFigure: a result without permits_leaked_ms is not measured, not
// a difference; a result that states another figure than both the replay
// and the re-check is the odd one out.
func TestLeakFigure(t *testing.T) {
	s := checker.Summary{Kind: checker.KindSemaphore, PermitsLeaked: 6 * time.Second}
	rc := recheck.Figures{PermitsLeaked: 6 * time.Second}
	stated := func(ms float64) report.Run { return report.Run{Kind: "semaphore", PermitsLeakedMs: &ms} }
	tests := []struct {
		name string
		run  report.Run
		rc   recheck.Figures
		odd  string
	}{
		{"agree", stated(6000.4), rc, ""},
		{"older result", report.Run{Kind: "semaphore"}, rc, ""},
		{"older result, replay and recheck differ", report.Run{Kind: "semaphore"}, recheck.Figures{}, "replay or recheck"},
		{"result differs", stated(10), rc, "result.json"},
	}
	for _, tt := range tests {
		f := leakFigure(tt.run, s, tt.rc)
		if got := f.odd(); got != tt.odd {
			t.Errorf("%s: odd one out %q, want %q (%+v)", tt.name, got, tt.odd, f)
		}
	}
}
