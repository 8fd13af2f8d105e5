package adapters_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/adapters"
	"github.com/locklab/locklab/locks/zklock"
)

// Helpers shared by zklib_test.go and etcdmutex_test.go carry a "lab"
// prefix: other files of this package belong to other adapters.

// labTTL is both the etcd lease TTL and the ZooKeeper session timeout of
// these tests: short so that expiry tests stay fast, yet within what the
// servers accept (etcd's minimum TTL is 2s by default; ZooKeeper clamps to
// [2, 20] x tickTime).
const labTTL = 4 * time.Second

const labPrefix = "locklab-test"

func labLockName(t testing.TB) string {
	return strings.NewReplacer("/", "-", "#", "-").Replace(t.Name())
}

// labConnect builds client i of lock name through the registry.
func labConnect(t testing.TB, e *labEnv, i int, name string) locks.Client {
	t.Helper()
	spec, ok := locks.Lookup(name)
	if !ok {
		t.Fatalf("lock %s not registered", name)
	}
	cfg := locks.Config{Endpoints: e.endpoints(i), Prefix: labPrefix, TTL: labTTL}
	if spec.Backend == locks.ZooKeeper {
		cfg.Options = map[string]string{zklock.OptSessionTimeout: labTTL.String()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := spec.New(ctx, cfg)
	if err != nil {
		t.Fatalf("connect client %d: %v", i, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func labAcquire(t testing.TB, l locks.Locker) locks.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return ls
}

// labContend runs clients clients (each its own Client) doing perClient
// acquire -> critical section -> release cycles on one lock: no two may
// overlap, and fencing tokens must strictly increase.
func labContend(t *testing.T, e *labEnv, name string, clients, perClient int) {
	t.Helper()
	spec, _ := locks.Lookup(name)
	lock := labLockName(t)
	var lockers []locks.Locker
	for i := 0; i < clients; i++ {
		lockers = append(lockers, labConnect(t, e, i, name).Locker(lock))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		inside, ops, overlaps, stale atomic.Int64
		last                         atomic.Uint64
		wg                           sync.WaitGroup
	)
	start := time.Now()
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < perClient; n++ {
				ls, err := l.Acquire(ctx)
				if err != nil {
					t.Errorf("client %d acquire %d: %v", i, n, err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				if tok := ls.Token(); spec.Fencing && tok <= last.Swap(tok) {
					stale.Add(1)
				}
				for k := 0; k < 20; k++ {
					time.Sleep(0)
				}
				inside.Add(-1)
				ops.Add(1)
				if err := ls.Release(ctx); err != nil {
					t.Errorf("client %d release %d: %v", i, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	t.Logf("%s: %d critical sections in %s (%.0f/s), overlaps %d, stale tokens %d",
		name, ops.Load(), el.Round(time.Millisecond), float64(ops.Load())/el.Seconds(), overlaps.Load(), stale.Load())
	if ops.Load() != int64(clients*perClient) {
		t.Errorf("ops = %d, want %d", ops.Load(), clients*perClient)
	}
	if overlaps.Load() != 0 {
		t.Errorf("overlaps = %d, want 0", overlaps.Load())
	}
	if stale.Load() != 0 {
		t.Errorf("tokens not strictly increasing %d times", stale.Load())
	}
}

// labLostOnCut acquires on client 0, cuts all its links and expects Lost
// within bound; client 1 then acquires once the server expired the lease or
// session; after healing, the stale holder's Release must report ErrNotHeld
// without taking the lock from client 1 (client 2 cannot get in).
func labLostOnCut(t *testing.T, e *labEnv, name string, bound time.Duration, reconnected func(locks.Client) bool) {
	lock := labLockName(t)
	a := labConnect(t, e, 0, name)
	b := labConnect(t, e, 1, name)
	held := labAcquire(t, a.Locker(lock))
	cut := time.Now()
	e.cut(t, 0)
	select {
	case <-held.Lost():
		t.Logf("Lost after %s", time.Since(cut).Round(time.Millisecond))
	case <-time.After(bound):
		t.Fatalf("Lost not closed within %s of the cut", bound)
	}
	next := labAcquire(t, b.Locker(lock))
	t.Logf("next holder after %s", time.Since(cut).Round(time.Millisecond))
	e.heal(t, 0)
	if reconnected != nil {
		deadline := time.Now().Add(30 * time.Second)
		for !reconnected(a) {
			if time.Now().After(deadline) {
				t.Fatal("client 0 did not reconnect after the heal")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := held.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("stale Release = %v, want ErrNotHeld", err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer tcancel()
	if ls, err := labConnect(t, e, 2, name).Locker(lock).Acquire(tctx); err == nil {
		ls.Release(ctx)
		t.Fatal("lock free after the stale Release: it removed the new holder's key")
	}
	if err := next.Release(ctx); err != nil {
		t.Errorf("new holder Release = %v", err)
	}
}

func TestZKLibMutualExclusion(t *testing.T) {
	labContend(t, newLabEnv(t, 8, locks.ZooKeeper), adapters.NameZKLib, 8, 250)
}

func TestZKLibLostOnCut(t *testing.T) {
	labLostOnCut(t, newLabEnv(t, 3, locks.ZooKeeper), adapters.NameZKLib, labTTL+time.Second, func(c locks.Client) bool {
		select {
		case <-c.(interface{ Session() *zklock.Session }).Session().Up():
			return true
		default:
			return false
		}
	})
}

// TestZKLibAcquireCanceled: giving up on a blocked Acquire leaves nothing
// that blocks the next waiter (the adapter unlocks once the library's Lock
// returns).
func TestZKLibAcquireCanceled(t *testing.T) {
	e := newLabEnv(t, 3, locks.ZooKeeper)
	lock := labLockName(t)
	holder := labAcquire(t, labConnect(t, e, 0, adapters.NameZKLib).Locker(lock))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := labConnect(t, e, 1, adapters.NameZKLib).Locker(lock).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
	}
	third := labConnect(t, e, 2, adapters.NameZKLib).Locker(lock)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ls, err := third.Acquire(ctx)
		if err == nil {
			err = ls.Release(ctx)
		}
		done <- err
	}()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("third waiter still blocked: the canceled waiter's node was left in the queue")
	}
}

// BenchmarkAcquireReleaseZKLib measures an uncontended acquire + release.
func BenchmarkAcquireReleaseZKLib(b *testing.B) { labBenchmark(b, adapters.NameZKLib) }

func labBenchmark(b *testing.B, name string) {
	spec, _ := locks.Lookup(name)
	l := labConnect(b, newLabEnv(b, 1, spec.Backend), 0, name).Locker(labLockName(b))
	ctx := context.Background()
	for b.Loop() {
		ls, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := ls.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
