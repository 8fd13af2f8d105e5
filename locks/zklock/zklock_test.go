package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/zklock"
)

// sessionTimeout is short so that expiry tests stay fast; it is within the
// bounds a server with tickTime up to 2s accepts (2..20 ticks).
const sessionTimeout = 4 * time.Second

const testPrefix = "locklab-test"

// lockName returns a lock name unique to the test.
func lockName(t testing.TB) string {
	return strings.NewReplacer("/", "-", "#", "-").Replace(t.Name())
}

// connect builds client i through the registry, as the harness does.
func connect(t testing.TB, e *testEnv, i int, name string) locks.Client {
	t.Helper()
	spec, ok := locks.Lookup(name)
	if !ok {
		t.Fatalf("lock %s not registered", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := spec.New(ctx, locks.Config{
		Endpoints: e.endpoints(i),
		Prefix:    testPrefix,
		Options:   map[string]string{zklock.OptSessionTimeout: sessionTimeout.String()},
	})
	if err != nil {
		t.Fatalf("connect client %d: %v", i, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// admin connects a plain go-zookeeper connection through client i's links.
func admin(t testing.TB, e *testEnv, i int) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(e.endpoints(i).ZooKeeper, 10*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(discard{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// acquire acquires within a bounded time or fails the test.
func acquire(t testing.TB, l locks.Locker) locks.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return ls
}

// waitFor polls cond every 10ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// contention is the result of contend.
type contention struct {
	ops, overlaps, staleTokens int64
	counters                   map[string]int64 // summed over clients
}

// contend runs clients clients (each its own Client) doing perClient
// acquire -> critical section -> release cycles on one lock, and checks
// mutual exclusion with an "inside" counter and token order.
func contend(t *testing.T, e *testEnv, name string, clients, perClient int) contention {
	t.Helper()
	lock := lockName(t)
	var lockers []locks.Locker
	var stats []locks.Stats
	for i := 0; i < clients; i++ {
		c := connect(t, e, i, name)
		lockers = append(lockers, c.Locker(lock))
		if s, ok := c.(locks.Stats); ok {
			stats = append(stats, s)
		}
	}
	before := sum(stats)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		inside, ops, overlaps, stale atomic.Int64
		last                         atomic.Uint64
		wg                           sync.WaitGroup
		errs                         = make(chan error, clients)
	)
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < perClient; n++ {
				ls, err := l.Acquire(ctx)
				if err != nil {
					errs <- fmt.Errorf("client %d acquire %d: %w", i, n, err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				if tok := ls.Token(); tok <= last.Swap(tok) {
					stale.Add(1)
				}
				for k := 0; k < 20; k++ {
					time.Sleep(0) // let others run while "inside"
				}
				inside.Add(-1)
				ops.Add(1)
				if err := ls.Release(ctx); err != nil {
					errs <- fmt.Errorf("client %d release %d: %w", i, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	after := sum(stats)
	for k := range after {
		after[k] -= before[k]
	}
	return contention{ops: ops.Load(), overlaps: overlaps.Load(), staleTokens: stale.Load(), counters: after}
}

func sum(stats []locks.Stats) map[string]int64 {
	out := map[string]int64{}
	for _, s := range stats {
		for k, v := range s.Counters() {
			out[k] += v
		}
	}
	return out
}

func TestMutualExclusion(t *testing.T) {
	e := newEnv(t, 8)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			const clients, perClient = 8, 250
			start := time.Now()
			r := contend(t, e, name, clients, perClient)
			el := time.Since(start)
			t.Logf("%s: %d critical sections in %s (%.0f/s), overlaps %d, stale tokens %d, counters %v",
				name, r.ops, el.Round(time.Millisecond), float64(r.ops)/el.Seconds(), r.overlaps, r.staleTokens, r.counters)
			if r.ops != clients*perClient {
				t.Errorf("ops = %d, want %d", r.ops, clients*perClient)
			}
			if r.overlaps != 0 {
				t.Errorf("overlaps = %d, want 0", r.overlaps)
			}
			if r.staleTokens != 0 {
				t.Errorf("tokens not strictly increasing %d times", r.staleTokens)
			}
		})
	}
}

// TestHerdEffect measures watch notifications and requests per hand-off:
// they grow with the number of waiters for zk-herd and stay flat for
// zk-recipe.
func TestHerdEffect(t *testing.T) {
	e := newEnv(t, 8)
	perOp := func(t *testing.T, name string, clients int) (events, requests float64) {
		var r contention
		t.Run(fmt.Sprintf("%s/%d", name, clients), func(t *testing.T) {
			r = contend(t, e, name, clients, 240/clients)
		})
		return float64(r.counters["watch_events"]) / float64(r.ops), float64(r.counters["requests"]) / float64(r.ops)
	}
	herd2, herdReq2 := perOp(t, zklock.NameHerd, 2)
	herd8, herdReq8 := perOp(t, zklock.NameHerd, 8)
	rec2, recReq2 := perOp(t, zklock.NameRecipe, 2)
	rec8, recReq8 := perOp(t, zklock.NameRecipe, 8)
	t.Logf("watch events per hand-off: zk-herd %.2f (2 clients) -> %.2f (8); zk-recipe %.2f -> %.2f", herd2, herd8, rec2, rec8)
	t.Logf("requests per hand-off:     zk-herd %.2f (2 clients) -> %.2f (8); zk-recipe %.2f -> %.2f", herdReq2, herdReq8, recReq2, recReq8)
	if herd8 < 2*herd2 {
		t.Errorf("zk-herd: events per hand-off %.2f with 8 clients, want at least twice the %.2f with 2", herd8, herd2)
	}
	if rec8 > 1.1 {
		t.Errorf("zk-recipe: events per hand-off %.2f with 8 clients, want <= 1.1 (one per release)", rec8)
	}
}

// TestFIFO checks that waiters acquire zk-recipe in the order they queued.
func TestFIFO(t *testing.T) {
	e := newEnv(t, 5)
	name := lockName(t)
	conn := admin(t, e, 4)
	dir := zklock.Root(testPrefix) + "/" + name
	queued := func() int {
		c, _, err := conn.Children(dir)
		if err != nil {
			return 0
		}
		return len(c)
	}
	holder := acquire(t, connect(t, e, 0, zklock.NameRecipe).Locker(name))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		l := connect(t, e, i, zklock.NameRecipe).Locker(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := l.Acquire(ctx)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := ls.Release(ctx); err != nil {
				t.Errorf("waiter %d release: %v", i, err)
			}
		}()
		waitFor(t, 10*time.Second, fmt.Sprintf("waiter %d queued", i), func() bool { return queued() == i+1 })
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if fmt.Sprint(order) != "[1 2 3]" {
		t.Errorf("acquisition order %v, want [1 2 3]", order)
	}
}

// TestLostOnCut cuts every link of the holder's client and expects Lost
// within the session timeout + 1s; the holder's node then expires, a second
// client acquires, and the stale holder's Release must report ErrNotHeld and
// leave the new holder's node alone.
func TestLostOnCut(t *testing.T) {
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, 3)
			lock := lockName(t)
			a := connect(t, e, 0, name)
			b := connect(t, e, 1, name)
			held := acquire(t, a.Locker(lock))
			select {
			case <-held.Lost():
				t.Fatal("lost before the cut")
			default:
			}

			cut := time.Now()
			e.cut(t, 0)
			select {
			case <-held.Lost():
				t.Logf("Lost after %s", time.Since(cut).Round(time.Millisecond))
			case <-time.After(sessionTimeout + time.Second):
				t.Fatalf("Lost not closed within %s of the cut", sessionTimeout+time.Second)
			}

			// The server expires the session; b gets the lock.
			next := acquire(t, b.Locker(lock))
			t.Logf("next holder after %s, token %d -> %d", time.Since(cut).Round(time.Millisecond), held.Token(), next.Token())
			if next.Token() <= held.Token() {
				t.Errorf("next token %d not above %d", next.Token(), held.Token())
			}

			e.heal(t, 0)
			s := a.(*zklock.Client).Session()
			waitFor(t, 20*time.Second, "client 0 reconnected", func() bool {
				select {
				case <-s.Up():
					return true
				default:
					return false
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := held.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
				t.Errorf("stale Release = %v, want ErrNotHeld", err)
			}

			// The new holder's node survived: a third party cannot get in,
			// and the holder releases cleanly.
			c := connect(t, e, 2, name)
			tctx, tcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer tcancel()
			if ls, err := c.Locker(lock).Acquire(tctx); err == nil {
				ls.Release(ctx)
				t.Fatal("lock free after the stale Release: it deleted the new holder's node")
			}
			select {
			case <-next.Lost():
				t.Error("new holder lost its lock")
			default:
			}
			if err := next.Release(ctx); err != nil {
				t.Errorf("new holder Release = %v", err)
			}
		})
	}
}

// TestReleaseTwice: the second Release reports ErrNotHeld.
func TestReleaseTwice(t *testing.T) {
	e := newEnv(t, 1)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			ls := acquire(t, connect(t, e, 0, name).Locker(lockName(t)))
			ctx := context.Background()
			if err := ls.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := ls.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
				t.Errorf("second Release = %v, want ErrNotHeld", err)
			}
		})
	}
}

// TestAcquireCanceled: a waiter that gives up leaves no node behind, so the
// next waiter is not blocked by it.
func TestAcquireCanceled(t *testing.T) {
	e := newEnv(t, 3)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			lock := lockName(t)
			holder := acquire(t, connect(t, e, 0, name).Locker(lock))
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if _, err := connect(t, e, 1, name).Locker(lock).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
			}
			third := connect(t, e, 2, name).Locker(lock)
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				ls, err := third.Acquire(ctx)
				if err == nil {
					err = ls.Release(context.Background())
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
			case <-time.After(10 * time.Second):
				t.Fatal("third waiter still blocked: the canceled waiter's node was left in the queue")
			}
		})
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	e := newEnv(b, 1)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		b.Run(name, func(b *testing.B) {
			l := connect(b, e, 0, name).Locker(lockName(b))
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
		})
	}
}
