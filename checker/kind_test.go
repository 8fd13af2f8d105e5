package checker

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// kindCases are the hand-written histories of testdata/kinds, one per
// promise of a lock kind, with the figures docs/verdicts.md gives them.
// recheck's tests judge the same files.
var kindCases = []struct {
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

func TestKindHistories(t *testing.T) {
	for _, c := range kindCases {
		t.Run(c.file, func(t *testing.T) {
			s := replayKind(t, c.file)
			got := []int{s.Violations, s.Incidents, s.LockFaults, s.ClientFaults, s.ChangedReads, s.LostUpdates, s.PeakHolders}
			want := []int{c.violations, c.incidents, c.lockFaults, c.clientFaults, c.changedReads, c.lostUpdates, c.peakHolders}
			names := []string{"violations", "incidents", "lock_faults", "client_faults", "changed_reads", "lost_updates", "peak_holders"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s = %d, want %d", names[i], got[i], want[i])
				}
			}
			if s.Kind == KindMutex {
				t.Errorf("kind = %q: the history names its kind", s.Kind)
			}
		})
	}
}

// TestKindLive drives a live resource the way the workload does: readers
// overlap freely, a writer entering among them is a violation, and the
// incident closes once its members left though a reader stays inside.
func TestKindLive(t *testing.T) {
	s := New(FencingObserve, time.Now())
	s.SetKind(KindRW, 0)
	ctx := t.Context()
	r1, _ := s.Enter(ctx, Visit{Lock: "l", Client: 0, Shared: true, Token: 1})
	r2, _ := s.Enter(ctx, Visit{Lock: "l", Client: 1, Shared: true, Token: 2})
	if n := s.ViolationCount(); n != 0 {
		t.Fatalf("two readers: %d violations, want 0", n)
	}
	w, _ := s.Enter(ctx, Visit{Lock: "l", Client: 2, Token: 3})
	if n := s.ViolationCount(); n != 2 {
		t.Fatalf("a writer among two readers: %d violations, want 2", n)
	}
	for _, id := range []uint64{w, r1} {
		if err := s.Exit(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r3, _ := s.Enter(ctx, Visit{Lock: "l", Client: 3, Shared: true, Token: 4})
	for _, id := range []uint64{r2, r3} {
		if err := s.Exit(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	sum := s.Summary()
	if sum.Violations != 2 || sum.Incidents != 1 || sum.PeakHolders != 3 {
		t.Errorf("violations %d incidents %d peak %d, want 2 1 3", sum.Violations, sum.Incidents, sum.PeakHolders)
	}
}

// TestFairFigures: a grant that returned before that of a client that asked
// FairMargin or more earlier overtook it; requests closer than the margin
// may reach the server in either order and count nothing.
func TestFairFigures(t *testing.T) {
	ms := time.Millisecond
	gs := []grant{
		{requested: 0, acquired: 100 * ms},      // overtaken by the next
		{requested: 20 * ms, acquired: 50 * ms}, // overtook the first
		{requested: 25 * ms, acquired: 150 * ms},
		{requested: 151 * ms, acquired: 160 * ms},
		{requested: 155 * ms, acquired: 158 * ms}, // within the margin of the one before
	}
	f := fairFigures(gs)
	if f.OutOfOrder != 1 || f.MaxOvertakenWait != 100*ms {
		t.Errorf("got %+v, want 1 out of order, longest overtaken wait 100ms", f)
	}
}

// TestFairHistory: client 1 asked 20 ms after client 0 and was granted
// first: one grant out of request order, client 0 overtaken after a wait
// of 100 ms. recheck judges the same file.
func TestFairHistory(t *testing.T) {
	s := replayKind(t, "fair-overtaken.jsonl")
	if got := s.Fair; got.OutOfOrder != 1 || got.MaxOvertakenWait != 100*time.Millisecond || s.Violations != 0 {
		t.Errorf("fair figures %+v, violations %d; want 1 out of order, 100ms, 0", got, s.Violations)
	}
}

// replayKind replays the hand-written history testdata/kinds/file and
// returns its first run's summary.
func replayKind(t *testing.T, file string) Summary {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "kinds", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums, err := Replay(f, FencingOff)
	if err != nil {
		t.Fatal(err)
	}
	return sums[0]
}
