package atlas

import "testing"

// TestMostLeaked: a cell's permits_leaked_ms is its worst run's; runs that
// did not measure it count nothing.
func TestMostLeaked(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	mostLeaked := func(runs []RunSummary) *float64 {
		return largest(runs, func(r RunSummary) *float64 { return r.PermitsLeakedMs })
	}
	if got := mostLeaked([]RunSummary{{}, {}}); got != nil {
		t.Errorf("no run measured it: got %v, want nil", *got)
	}
	got := mostLeaked([]RunSummary{{PermitsLeakedMs: f(12)}, {}, {PermitsLeakedMs: f(6000)}, {PermitsLeakedMs: f(0)}})
	if got == nil || *got != 6000 {
		t.Errorf("got %v, want 6000", got)
	}
}
