package workload_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memlock"
	"github.com/locklab/locklab/workload"
)

func memClients(n int) []locks.Client {
	tab := memlock.NewTable()
	cs := make([]locks.Client, n)
	for i := range cs {
		cs[i] = memlock.NewClient(tab, locks.Config{TTL: 10 * time.Second})
	}
	return cs
}

func openRun(t *testing.T, clients int, rate float64, cs, d time.Duration) (workload.Summary, time.Duration) {
	t.Helper()
	base := time.Now()
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: clients, Keys: clients, KeyPerClient: true, Rate: rate, CriticalSection: cs, Duration: d, Base: base}
	workload.Drive(context.Background(), cfg, memClients(clients), checker.New(checker.FencingOff, base), rec)
	return rec.Summary(), time.Since(base)
}

// TestOpenLoopKeepsRate: with clients to spare, operations start at the
// requested rate, whatever their completions do.
func TestOpenLoopKeepsRate(t *testing.T) {
	const rate = 500.0
	sum, elapsed := openRun(t, 20, rate, time.Millisecond, time.Second)
	want := rate * elapsed.Seconds()
	if f := float64(sum.Started); f < 0.8*want || f > want+1 {
		t.Errorf("started %d operations in %s, want about %.0f", sum.Started, elapsed, want)
	}
	if sum.Lag == nil || sum.Lag.TotalCount() != sum.Started {
		t.Errorf("lag samples %v, want one per started operation (%d)", sum.Lag, sum.Started)
	}
}

// TestOpenLoopCountsFromSchedule: one client holding 10ms cannot keep up
// with 1,000/s; each operation starts later than scheduled, and the
// acquire latency counts from the schedule, so it grows with the backlog
// (coordinated omission would report the lock's own microseconds).
func TestOpenLoopCountsFromSchedule(t *testing.T) {
	const hold = 10 * time.Millisecond
	sum, elapsed := openRun(t, 1, 1000, hold, 500*time.Millisecond)
	if sum.Started == 0 || sum.Ops == 0 {
		t.Fatalf("started %d, completed %d", sum.Started, sum.Ops)
	}
	if achieved := float64(sum.Started) / elapsed.Seconds(); achieved > 1000.0/2 {
		t.Errorf("achieved %.0f/s with one client holding %s, want well under 1000/s", achieved, hold)
	}
	// The n-th operation was due at n ms but started after n holds: the
	// last one is at least (n-1)*(hold-1ms) late.
	n := sum.Started
	wantLate := time.Duration(n-1) * (hold - time.Millisecond)
	if got := time.Duration(sum.Acquire.Max()) * time.Microsecond; got < wantLate*9/10 {
		t.Errorf("acquire max %s after %d operations, want >= %s (latency from the schedule)", got, n, wantLate)
	}
	if got := time.Duration(sum.Lag.Max()) * time.Microsecond; got < wantLate*9/10 {
		t.Errorf("start lag max %s, want >= %s", got, wantLate)
	}
}

// TestClosedLoopRecordsNoSchedule: closed-loop runs have no schedule.
func TestClosedLoopRecordsNoSchedule(t *testing.T) {
	sum, _ := openRun(t, 2, 0, 0, 100*time.Millisecond)
	if sum.Ops == 0 || sum.Started != 0 {
		t.Errorf("ops %d, started %d: want ops and no scheduled starts", sum.Ops, sum.Started)
	}
}
