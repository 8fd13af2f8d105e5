package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/zklock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// sessionTimeout is short so that expiry tests stay fast; it is within the
// bounds a server with tickTime up to 2s accepts (2..20 ticks).
const sessionTimeout = 4 * time.Second

const testPrefix = "locklab-test"

// connect builds client i through the registry, as the harness does, with
// the short session timeout of expiry tests.
func connect(t testing.TB, e *testenv.Ensemble, i int, name string) locks.Client {
	t.Helper()
	return connectSession(t, e, i, name, sessionTimeout)
}

// connectSession is connect with a session timeout of the test's choice.
func connectSession(t testing.TB, e *testenv.Ensemble, i int, name string, session time.Duration) locks.Client {
	t.Helper()
	return locktest.Connect(t, name, locks.Config{
		Endpoints: e.Endpoints(i),
		Prefix:    testPrefix,
		Options:   map[string]string{zklock.OptSessionTimeout: session.String()},
	})
}

// admin connects a plain go-zookeeper connection through client i's links.
func admin(t testing.TB, e *testenv.Ensemble, i int) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(e.Endpoints(i).Table["zookeeper"], 10*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(discard{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// contend runs clients clients of lock name through rounds critical
// sections each (locktest.Contend).
func contend(t *testing.T, e *testenv.Ensemble, name string, clients, rounds int) locktest.Contention {
	t.Helper()
	return locktest.Contend(t, locktest.Contenders{
		Connect: func(i int) locks.Client { return connectSession(t, e, i, name, locktest.SteadyTTL) },
		Clients: clients, Rounds: rounds, Fencing: true,
	})
}

// TestMutualExclusion: 8 clients, 2000 critical sections, no overlap,
// tokens strictly increasing.
func TestMutualExclusion(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 8)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			contend(t, e, name, 8, 250)
		})
	}
}

// TestHerdEffect measures watch notifications and requests per hand-off:
// they grow with the number of waiters for zk-herd and stay flat for
// zk-recipe.
func TestHerdEffect(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 8)
	perOp := func(t *testing.T, name string, clients int) (events, requests float64) {
		var r locktest.Contention
		t.Run(fmt.Sprintf("%s/%d", name, clients), func(t *testing.T) {
			r = contend(t, e, name, clients, 240/clients)
		})
		return r.PerOp("watch_events"), r.PerOp("requests")
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
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 5)
	name := locktest.Name(t)
	conn := admin(t, e, 4)
	dir := zklock.Root(testPrefix) + "/" + name
	queued := func() int {
		c, _, err := conn.Children(dir)
		if err != nil {
			return 0
		}
		return len(c)
	}
	holder := locktest.Acquire(t, connectSession(t, e, 0, zklock.NameRecipe, locktest.SteadyTTL).Locker(name))
	var waiters []locks.Locker
	for i := 1; i <= 3; i++ {
		waiters = append(waiters, connectSession(t, e, i, zklock.NameRecipe, locktest.SteadyTTL).Locker(name))
	}
	locktest.FIFO(t, holder, waiters, queued)
}

// TestLostOnCut cuts every link of the holder's client and expects Lost
// within the session timeout + 1s; the holder's node then expires, a second
// client acquires, and the stale holder's Release must report ErrNotHeld and
// leave the new holder's node alone.
func TestLostOnCut(t *testing.T) {
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			e := testenv.NewEnsemble(t, locks.ZooKeeper, 3)
			lock := locktest.Name(t)
			a := connect(t, e, 0, name)
			b := connect(t, e, 1, name)
			held := locktest.Acquire(t, a.Locker(lock))
			select {
			case <-held.Lost():
				t.Fatal("lost before the cut")
			default:
			}

			cut := time.Now()
			e.Cut(t, 0)
			select {
			case <-held.Lost():
				t.Logf("Lost after %s", time.Since(cut).Round(time.Millisecond))
			case <-time.After(locktest.LossBound(sessionTimeout, time.Second)):
				t.Fatalf("Lost not closed within %s of the cut", locktest.LossBound(sessionTimeout, time.Second))
			}

			// The server expires the session; b gets the lock.
			next := locktest.Acquire(t, b.Locker(lock))
			t.Logf("next holder after %s, token %d -> %d", time.Since(cut).Round(time.Millisecond), held.Token(), next.Token())
			if next.Token() <= held.Token() {
				t.Errorf("next token %d not above %d", next.Token(), held.Token())
			}

			e.Heal(t, 0)
			s := a.(*zklock.Client).Session()
			locktest.WaitFor(t, 20*time.Second, "client 0 reconnected", func() bool {
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
			locktest.ReleaseHeld(t, ctx, next, "new holder")
		})
	}
}

// TestReleaseTwice: the second Release reports ErrNotHeld.
func TestReleaseTwice(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 1)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			ls := locktest.Acquire(t, connect(t, e, 0, name).Locker(locktest.Name(t)))
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
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 3)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			lock := locktest.Name(t)
			holder := locktest.Acquire(t, connect(t, e, 0, name).Locker(lock))
			canceled := connect(t, e, 1, name).Locker(lock)
			locktest.CanceledAcquire(t, holder, canceled, connect(t, e, 2, name).Locker(lock), 10*time.Second)
		})
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	e := testenv.NewEnsemble(b, locks.ZooKeeper, 1)
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd, zklock.NameRW, zklock.NameSemaphore} {
		b.Run(name, func(b *testing.B) {
			l := connect(b, e, 0, name).Locker(locktest.Name(b))
			locktest.AcquireRelease(b, l)
		})
	}
}
