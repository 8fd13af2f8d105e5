package recheck

import (
	"testing"
	"time"
)

// TestPermitsLeaked judges the checker's hand-written semaphore histories
// (checker/testdata/kinds) by this package's reading of
// docs/history-format.md; the expected figures are restated here.
func TestPermitsLeaked(t *testing.T) {
	cases := []struct {
		file   string
		leaked time.Duration
	}{
		{"semaphore-dead-holder.jsonl", 1700 * time.Millisecond},
		{"semaphore-handoff.jsonl", 0}, // a release, then the next entry: a hand-off
		{"semaphore-exit-unreleased.jsonl", 50 * time.Millisecond},
		{"semaphore-3-of-3.jsonl", 0},
		{"semaphore-expired-holder.jsonl", 0},
		{"rw-two-writers.jsonl", 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			if got := checkKind(t, c.file).PermitsLeaked; got != c.leaked {
				t.Errorf("permits leaked %v, want %v", got, c.leaked)
			}
		})
	}
}

// TestOwedSpans: with 2 permits, A dies inside at 10 (its permit owed),
// B's release gives its permit back at 30, C takes B's at 40 and D takes
// A's at 80: owed and not all in use from 10 to 80. A given-back permit
// taken at the instant of its return is never free.
func TestOwedSpans(t *testing.T) {
	died := func(from, to int64) *hold { return &hold{enter: from, exit: to, freed: -1, entered: true} }
	freed := func(from, to int64) *hold { return &hold{enter: from, exit: to, freed: to, entered: true} }
	got := owedSpans([]*hold{died(0, 10), freed(0, 30), died(40, noEnd), died(80, noEnd), freed(90, 95), died(95, noEnd)}, 2)
	want := [][2]int64{{10, 80}}
	if len(got) != len(want) || got[0] != want[0] {
		t.Fatalf("owed %v, want %v", got, want)
	}
}
