package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// SteadyTTL is the lease or session TTL of tests whose subject is not loss
// (mutual exclusion, FIFO, herd effect): long enough that a loaded 2-core
// machine running the whole suite (JVMs, etcd and Sentinel groups, -race)
// does not expire a session while a client waits for the processor. Tests
// of expiry use short TTLs of their own.
const SteadyTTL = 30 * time.Second

// LossBound is how long after a cut a holder may take to learn it lost its
// lease: the lease's ttl, plus the period at which the client library
// checks its deadline (check), plus half a ttl of slack for a loaded
// machine, where timers and keep-alive goroutines run late.
func LossBound(ttl, check time.Duration) time.Duration { return ttl + check + ttl/2 }

// Contenders describes a Contend run: Clients clients, each with its own
// locks.Client, going through acquire -> critical section -> release on one
// lock.
type Contenders struct {
	// Connect returns client i, 0 <= i < Clients. Contend connects every
	// client before any starts, so set-up is not part of the run.
	Connect func(i int) locks.Client
	// Clients is the number of clients.
	Clients int
	// Rounds is the number of critical sections of each client: all
	// Clients*Rounds must complete.
	Rounds int
	// For, when set, replaces Rounds: every client goes on until For has
	// passed; an Acquire cut short by that end is not an error. The caller
	// judges Contention.Ops.
	For time.Duration
	// Hold is how long a holder stays inside. Default: 0, the holder yields
	// the processor 20 times instead, the shortest critical section in which
	// others still get to run.
	Hold time.Duration
	// Within bounds the whole run, every Acquire and Release included: one
	// still blocked then fails with ctx's error. Default: 3 minutes.
	Within time.Duration
	// Fencing says the lock hands out fencing tokens (locks.Spec.Fencing):
	// they must strictly increase in the order holders enter. Without it
	// every token must be 0, as locks.Lease.Token documents.
	Fencing bool
}

// Contention is what a Contend run saw.
type Contention struct {
	// Ops counts the critical sections completed.
	Ops int64
	// Overlaps counts entries while another client was inside.
	Overlaps int64
	// StaleTokens counts tokens not above the one of the holder before, with
	// Fencing; BadTokens counts tokens other than 0 without it.
	StaleTokens, BadTokens int64
	// Lost counts leases the backend ended under the client (an Acquire
	// that failed with locks.ErrLeaseLost, a Release that found the lease
	// gone: locks.ErrNotHeld). Loss is an outcome of a loaded machine, not a
	// failure of mutual exclusion; Contend fails only when it leaves fewer
	// than half of the critical sections asked for.
	Lost int64
	// Elapsed is the run's duration, connections not included.
	Elapsed time.Duration
	// Counters sums the locks.Stats counters of the clients that have them,
	// counting the run only (not the connection set-up).
	Counters map[string]int64
}

// PerOp is counter name per critical section (0 when there was none).
func (r Contention) PerOp(name string) float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.Counters[name]) / float64(r.Ops)
}

// Contend runs c on one lock named Name(t) and fails the test (t.Error, so
// the caller's other checks still run) on any Acquire or Release error, on
// an overlap of two critical sections, on a token out of order (or not 0
// for a lock without fencing), and, with Rounds, when fewer than
// Clients*Rounds critical sections completed. Mutual exclusion is checked
// with an "inside" counter every holder increments on entry and decrements
// on exit: a holder that finds it above 1 overlaps with another.
//
// Contend logs a summary and returns what it saw.
func Contend(t testing.TB, c Contenders) Contention {
	t.Helper()
	within := c.Within
	if within == 0 {
		within = 3 * time.Minute
	}
	lock := Name(t)
	lockers := make([]locks.Locker, c.Clients)
	var stats []locks.Stats
	for i := range lockers {
		cl := c.Connect(i)
		lockers[i] = cl.Locker(lock)
		if s, ok := cl.(locks.Stats); ok {
			stats = append(stats, s)
		}
	}
	before := sum(stats)

	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	// With For, acquireCtx ends the run at end; Release still gets ctx, so
	// the holder at the end gives the lock back. An Acquire that failed
	// with DeadlineExceeded once end has passed ended with the run: compare
	// with end, not acquireCtx.Err(), as a client may see the deadline pass
	// (socket deadlines set from ctx) before ctx's own timer fires.
	acquireCtx, end := ctx, time.Time{}
	if c.For > 0 {
		end = time.Now().Add(c.For)
		var cancelFor context.CancelFunc
		acquireCtx, cancelFor = context.WithDeadline(ctx, end)
		defer cancelFor()
	}
	var (
		inside, ops, overlaps, stale, bad, lost atomic.Int64
		last                                    atomic.Uint64
		wg                                      sync.WaitGroup
	)
	start := time.Now()
	for i, l := range lockers {
		wg.Go(func() {
			for n := 0; c.For > 0 || n < c.Rounds; n++ {
				ls, err := l.Acquire(acquireCtx)
				if err != nil {
					if c.For > 0 && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(end) {
						return // the run is over
					}
					if errors.Is(err, locks.ErrLeaseLost) {
						lost.Add(1)
						t.Logf("client %d acquire %d: %v (counted as lost)", i, n, err)
						continue
					}
					t.Errorf("client %d acquire %d: %v", i, n, err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				// Swap, not Load: of two overlapping holders, each compares
				// with the token stored just before its own.
				tok := ls.Token()
				if prev := last.Swap(tok); c.Fencing && tok <= prev {
					stale.Add(1)
				}
				if !c.Fencing && tok != 0 {
					bad.Add(1)
				}
				if c.Hold > 0 {
					time.Sleep(c.Hold) // the critical section's work
				} else {
					for range 20 {
						time.Sleep(0) // let others run while inside
					}
				}
				inside.Add(-1)
				ops.Add(1)
				if err := ls.Release(ctx); errors.Is(err, locks.ErrNotHeld) {
					lost.Add(1)
					t.Logf("client %d release %d: %v (counted as lost)", i, n, err)
				} else if err != nil {
					t.Errorf("client %d release %d: %v", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	r := Contention{
		Ops: ops.Load(), Overlaps: overlaps.Load(), StaleTokens: stale.Load(), BadTokens: bad.Load(), Lost: lost.Load(),
		Elapsed: time.Since(start), Counters: sum(stats),
	}
	for k := range r.Counters {
		r.Counters[k] -= before[k]
	}
	summary := fmt.Sprintf("%d critical sections in %s (%.0f/s), overlaps %d, stale tokens %d, leases lost %d",
		r.Ops, r.Elapsed.Round(time.Millisecond), float64(r.Ops)/r.Elapsed.Seconds(), r.Overlaps, r.StaleTokens, r.Lost)
	if len(r.Counters) > 0 {
		summary += fmt.Sprintf(", counters %v", r.Counters)
	}
	t.Log(summary)
	// Every round ends in a completed critical section or a counted loss (an
	// Acquire lost its lease: no section); loss may not eat half the run.
	if want := int64(c.Clients * c.Rounds); c.For == 0 {
		lostAcquires := want - r.Ops
		if lostAcquires < 0 || lostAcquires > r.Lost {
			t.Errorf("ops = %d, want %d (less %d leases lost)", r.Ops, want, r.Lost)
		}
		if 2*r.Ops < want {
			t.Errorf("ops = %d of %d: lease loss (%d) left too few critical sections to judge", r.Ops, want, r.Lost)
		}
	}
	if r.Overlaps != 0 {
		t.Errorf("overlaps = %d, want 0", r.Overlaps)
	}
	if r.StaleTokens != 0 {
		t.Errorf("tokens not strictly increasing %d times", r.StaleTokens)
	}
	if r.BadTokens != 0 {
		t.Errorf("%d tokens other than 0 from a lock without fencing tokens", r.BadTokens)
	}
	return r
}

// sum adds up the counters of stats by name.
func sum(stats []locks.Stats) map[string]int64 {
	out := map[string]int64{}
	for _, s := range stats {
		for k, v := range s.Counters() {
			out[k] += v
		}
	}
	return out
}
