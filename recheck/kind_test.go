package recheck

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKindHistories judges the checker's hand-written histories of lock
// kinds (checker/testdata/kinds) by this package's own reading of
// docs/verdicts.md; the expected figures are restated here, not shared.
func TestKindHistories(t *testing.T) {
	cases := []struct {
		file                                            string
		violations, incidents, lockFaults, clientFaults int
		changedReads, lostUpdates, peakHolders          int
	}{
		{"rw-readers-overlap.jsonl", 0, 0, 0, 0, 0, 0, 2},
		{"rw-writer-with-reader.jsonl", 1, 1, 1, 0, 1, 1, 2},
		{"rw-two-writers.jsonl", 1, 1, 1, 0, 0, 1, 2},
		{"semaphore-3-of-3.jsonl", 0, 0, 0, 0, 0, 0, 3},
		{"semaphore-4-of-3.jsonl", 1, 1, 1, 0, 0, 0, 4},
		{"semaphore-expired-holder.jsonl", 1, 1, 0, 1, 0, 0, 4},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			g := checkKind(t, c.file)
			got := []int{g.Violations, g.Incidents, g.LockFaults, g.ClientFaults, g.ChangedReads, g.LostUpdates, g.PeakHolders}
			want := []int{c.violations, c.incidents, c.lockFaults, c.clientFaults, c.changedReads, c.lostUpdates, c.peakHolders}
			names := []string{"violations", "incidents", "lock_faults", "client_faults", "changed_reads", "lost_updates", "peak_holders"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s = %d, want %d", names[i], got[i], want[i])
				}
			}
		})
	}
}

// TestFairHistory: the checker's fair-overtaken.jsonl, one grant out of
// request order and an overtaken wait of 100 ms.
func TestFairHistory(t *testing.T) {
	if g := checkKind(t, "fair-overtaken.jsonl"); g.OutOfOrder != 1 || g.MaxOvertakenWait != 100*time.Millisecond || g.Violations != 0 {
		t.Errorf("out of order %d, longest overtaken wait %s, violations %d; want 1, 100ms, 0", g.OutOfOrder, g.MaxOvertakenWait, g.Violations)
	}
}

// checkKind re-checks the checker's hand-written history
// checker/testdata/kinds/file and returns its first run's figures.
func checkKind(t *testing.T, file string) Figures {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "checker", "testdata", "kinds", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	figs, err := Check(f, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return figs[0]
}
