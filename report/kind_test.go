package report

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

// TestKindReading: each kind's figures read in its own words.
func TestKindReading(t *testing.T) {
	tests := []struct {
		run  Run
		want []string
	}{
		{Run{Kind: "mutex"}, nil},
		{Run{Kind: "rw", ReadShare: 0.5, PeakHolders: 3, SafetyFigures: safety(2, 1),
			ViolationEvents: []ViolationEvent{{}, {FirstShared: true}}},
			[]string{"read share 0.5", "up to 3 inside", "2 writers inside together once", "a writer inside with a reader once", "1 reader saw the value change"}},
		{Run{Kind: "semaphore", Permits: 3, PeakHolders: 4}, []string{"semaphore of 3 permits", "4 holders of 3 permits inside at once"}},
		{Run{Kind: "semaphore", Permits: 1, PeakHolders: 1, TTLMs: 1000, TimelineBucketMs: 1000,
			Faults:   []FaultWindow{{StartS: 2}},
			Timeline: []TimelineBucket{{Completions: 5}, {Completions: 5}, {}, {}, {}, {}, {}, {Completions: 1}}},
			[]string{"semaphore of 1 permit", "a permit leaked for 5 s"}},
		{Run{Kind: "semaphore", Permits: 1, PeakHolders: 1, PermitsLeakedMs: ptr(6012.5)},
			[]string{"semaphore of 1 permit", "a permit leaked for 6.0 s"}},
		{Run{Kind: "semaphore", Permits: 1, PeakHolders: 1, PermitsLeakedMs: ptr(12.0)},
			[]string{"no permit leaked", "12 ms"}},
		{Run{Kind: "semaphore", Permits: 2, PermitsLeakedMs: ptr(0.0)}, []string{"no permit leaked"}},
		{Run{Kind: "fair", OutOfOrder: 2, MaxOvertakenWaitMs: 120}, []string{"2 grants out of request order", "120 ms"}},
	}
	for _, tt := range tests {
		got := KindReading(&tt.run)
		if tt.want == nil && got != "" {
			t.Errorf("%s: %q, want nothing", tt.run.Kind, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.run.Kind, got, w)
			}
		}
	}
}

func safety(violations, changed int) (s checker.SafetyFigures) {
	s.Violations, s.ChangedReads = violations, changed
	return s
}
