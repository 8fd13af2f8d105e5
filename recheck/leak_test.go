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
		{"semaphore-handoff.jsonl", 2 * time.Millisecond},
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

// TestFreeSpans: a permit given back and taken at one instant is never
// free; an over-granted semaphore is free only below its permits.
func TestFreeSpans(t *testing.T) {
	got := freeSpans([][2]int64{{0, 10}, {10, 20}, {5, 30}, {6, 7}}, 2)
	want := [][2]int64{{-noEnd, 5}, {20, noEnd}}
	if len(got) != len(want) {
		t.Fatalf("free %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("free %v, want %v", got, want)
		}
	}
}
