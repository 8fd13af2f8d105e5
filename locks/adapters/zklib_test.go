package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/adapters"
	"github.com/locklab/locklab/locks/zklock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// Helpers shared by zklib_test.go and etcdmutex_test.go carry a "lab"
// prefix: other files of this package belong to other adapters.

// labTTL is both the etcd lease TTL and the ZooKeeper session timeout of
// these tests: short so that expiry tests stay fast, yet within what the
// servers accept (etcd's minimum TTL is 2s by default; ZooKeeper clamps to
// [2, 20] x tickTime).
const labTTL = 4 * time.Second

const labPrefix = "locklab-test"

// labConnect builds client i of lock name through the registry, with the
// short labTTL of expiry tests.
func labConnect(t testing.TB, e *testenv.Ensemble, i int, name string) locks.Client {
	t.Helper()
	return labConnectTTL(t, e, i, name, labTTL)
}

// labConnectTTL is labConnect with a lease/session TTL of the test's choice.
func labConnectTTL(t testing.TB, e *testenv.Ensemble, i int, name string, ttl time.Duration) locks.Client {
	t.Helper()
	cfg := locks.Config{Endpoints: e.Endpoints(i), Prefix: labPrefix, TTL: ttl}
	if locktest.Spec(t, name).Backend == locks.ZooKeeper {
		cfg.Options = map[string]string{zklock.OptSessionTimeout: ttl.String()}
	}
	return locktest.Connect(t, name, cfg)
}

// labContend runs clients clients of lock name through rounds critical
// sections each (locktest.Contend): no two may overlap, and fencing tokens
// must strictly increase (be 0 for a lock without them).
func labContend(t *testing.T, e *testenv.Ensemble, name string, clients, rounds int) {
	t.Helper()
	locktest.Contend(t, locktest.Contenders{
		Connect: func(i int) locks.Client { return labConnectTTL(t, e, i, name, locktest.SteadyTTL) },
		Clients: clients, Rounds: rounds, Fencing: locktest.Spec(t, name).Fencing,
	})
}

// labLostOnCut acquires on client 0, cuts all its links and expects Lost
// within bound; client 1 then acquires once the server expired the lease or
// session; after healing, the stale holder's Release must report ErrNotHeld
// without taking the lock from client 1 (client 2 cannot get in).
func labLostOnCut(t *testing.T, e *testenv.Ensemble, name string, bound time.Duration, reconnected func(locks.Client) bool) {
	lock := locktest.Name(t)
	a := labConnect(t, e, 0, name)
	b := labConnect(t, e, 1, name)
	held := locktest.Acquire(t, a.Locker(lock))
	cut := time.Now()
	e.Cut(t, 0)
	select {
	case <-held.Lost():
		t.Logf("Lost after %s", time.Since(cut).Round(time.Millisecond))
	case <-time.After(bound):
		t.Fatalf("Lost not closed within %s of the cut", bound)
	}
	next := locktest.Acquire(t, b.Locker(lock))
	t.Logf("next holder after %s", time.Since(cut).Round(time.Millisecond))
	e.Heal(t, 0)
	if reconnected != nil {
		locktest.WaitFor(t, 30*time.Second, "client 0 reconnected after the heal", func() bool { return reconnected(a) })
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
	labContend(t, testenv.NewEnsemble(t, locks.ZooKeeper, 8), adapters.NameZKLib, 8, 250)
}

func TestZKLibLostOnCut(t *testing.T) {
	labLostOnCut(t, testenv.NewEnsemble(t, locks.ZooKeeper, 3), adapters.NameZKLib, locktest.LossBound(labTTL, time.Second), func(c locks.Client) bool {
		select {
		case <-labSession(c).Up():
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
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 3)
	lock := locktest.Name(t)
	holder := locktest.Acquire(t, labConnect(t, e, 0, adapters.NameZKLib).Locker(lock))
	canceled := labConnect(t, e, 1, adapters.NameZKLib).Locker(lock)
	locktest.CanceledAcquire(t, holder, canceled, labConnect(t, e, 2, adapters.NameZKLib).Locker(lock), 20*time.Second)
}

// TestZKLibCanceledLeavesQueue: a canceled Acquire's node leaves the
// queue at once, while the holder still holds (as Curator's does), not when
// the abandoned Lock would have been granted: until then every waiter
// behind it waited too.
func TestZKLibCanceledLeavesQueue(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 3)
	lock := locktest.Name(t)
	hc := labConnect(t, e, 0, adapters.NameZKLib)
	holder := locktest.Acquire(t, hc.Locker(lock))
	defer holder.Release(context.Background())
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := labConnect(t, e, 1, adapters.NameZKLib).Locker(lock).Acquire(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
		}
	}
	conn := labSession(hc).Conn()
	dir := zklock.Root(labPrefix) + "/" + lock
	deadline := time.Now().Add(5 * time.Second)
	for {
		children, _, err := conn.Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(children) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder still holds and %d nodes queue under %s: the canceled Acquires left theirs %v", len(children), dir, children)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestZKLibRetryKeepsPlace: an Acquire that gave up on its Lock leaves it
// to the client's next Acquire of the same lock, so a caller retrying with
// short tries keeps its place in the queue: when the holder releases, the
// retry is granted ahead of a waiter that queued after the first try.
// Before, every try that timed out left the queue and joined its end
// again: under load no try ever finished.
func TestZKLibRetryKeepsPlace(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 3)
	lock := locktest.Name(t)
	holder := locktest.Acquire(t, labConnect(t, e, 0, adapters.NameZKLib).Locker(lock))
	retrier := labConnect(t, e, 1, adapters.NameZKLib).Locker(lock)
	try := func() (locks.Lease, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return retrier.Acquire(ctx)
	}
	if _, err := try(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first try = %v, want DeadlineExceeded", err)
	}
	later := make(chan locks.Lease, 1)
	go func() {
		later <- locktest.AcquireWithin(t, labConnect(t, e, 2, adapters.NameZKLib).Locker(lock), 20*time.Second)
	}()
	time.Sleep(300 * time.Millisecond) // the later waiter queues
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	ls, err := try()
	if err != nil {
		t.Fatalf("the retry after the release = %v: it lost its place to the later waiter", err)
	}
	select {
	case l := <-later:
		t.Fatalf("the later waiter was granted while the retry holds (token %d)", l.Token())
	default:
	}
	if err := ls.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := (<-later).Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestZKLibCleansUpAfterConnectionLoss: a request of the library cut short
// by a lost connection, in a session that survives it, leaves no node that
// blocks the lock. The library's Unlock and Lock leave their node behind
// then; before the adapter cleaned up, the next waiter blocked for as long
// as the stale holder's session lived (forever here).
func TestZKLibCleansUpAfterConnectionLoss(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 3)
	lock := locktest.Name(t)
	a := labConnect(t, e, 0, adapters.NameZKLib)
	b := labConnect(t, e, 1, adapters.NameZKLib)
	c := labConnect(t, e, 2, adapters.NameZKLib)
	dir := zklock.Root(labPrefix) + "/" + lock

	// Release cut short: client 0's delete is dropped, then its
	// connections are closed; it reconnects to the same session.
	held := locktest.Acquire(t, a.Locker(lock))
	released := make(chan error, 1)
	labCutShort(t, e, 0, a, func() {
		go func() { released <- held.Release(locktest.Timeout(t, 20*time.Second)) }()
	})
	t.Logf("Release after its delete was lost: %v", <-released)
	next := locktest.AcquireWithin(t, c.Locker(lock), 10*time.Second)

	// Lock cut short: client 1 waits behind client 2; when client 2
	// releases, client 1's next request (the listing after its watch
	// fired) is dropped and its connection closed, so Lock fails after
	// creating its node.
	waiting := make(chan error, 1)
	go func() {
		ls, err := b.Locker(lock).Acquire(locktest.Timeout(t, 20*time.Second))
		if err == nil {
			err = errors.Join(errors.New("acquired although its connection was lost"), ls.Release(context.Background()))
		}
		waiting <- err
	}()
	conn := labSession(b).Conn()
	locktest.WaitFor(t, 10*time.Second, "client 1 queued", func() bool {
		children, _, err := conn.Children(dir)
		return err == nil && len(children) == 2
	})
	labCutShort(t, e, 1, b, func() {
		if err := next.Release(context.Background()); err != nil {
			t.Errorf("client 2 Release = %v", err)
		}
	})
	t.Logf("Acquire whose Lock lost its connection: %v", <-waiting)
	locktest.AcquireWithin(t, c.Locker(lock), 10*time.Second).Release(context.Background())
}

// TestZKLibWithoutCleanup: with cleanup: false the library runs as it
// is. A Release whose delete a lost connection cut short returns the
// error, and its node, in a session that survives, keeps every later
// Acquire waiting.
func TestZKLibWithoutCleanup(t *testing.T) {
	if err := locktest.Spec(t, adapters.NameZKLib).CheckOptions(map[string]string{adapters.OptCleanup: "maybe"}); err == nil {
		t.Error("zk-lib accepts cleanup=maybe")
	}
	e := testenv.NewEnsemble(t, locks.ZooKeeper, 2)
	lock := locktest.Name(t)
	connect := func(i int) locks.Client {
		return locktest.Connect(t, adapters.NameZKLib, locks.Config{Endpoints: e.Endpoints(i), Prefix: labPrefix, TTL: labTTL,
			Options: map[string]string{zklock.OptSessionTimeout: labTTL.String(), adapters.OptCleanup: "false"}})
	}
	a, b := connect(0), connect(1)
	held := locktest.Acquire(t, a.Locker(lock))
	released := make(chan error, 1)
	labCutShort(t, e, 0, a, func() {
		go func() { released <- held.Release(locktest.Timeout(t, 20*time.Second)) }()
	})
	if err := <-released; err == nil || errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("Release after its delete was lost = %v, want the connection error", err)
	}
	if ls, err := b.Locker(lock).Acquire(locktest.Timeout(t, 2*labTTL)); err == nil {
		ls.Release(context.Background())
		t.Fatal("acquired past the stale node of a Release cut short")
	}
}

// labCutShort drops every request client i sends while during runs and for
// 300 ms after, then closes its connections (removing the drop does so)
// and checks that the client came back in the same session: the requests
// sent in between are lost, their outcome unknown to the client, and the
// session's ephemeral nodes live on.
func labCutShort(t *testing.T, e *testenv.Ensemble, i int, c locks.Client, during func()) {
	t.Helper()
	s := labSession(c)
	sid, losses := s.Conn().SessionID(), s.Counters()["session_losses"]
	links, err := e.C.Links(fmt.Sprintf("client-%d", i))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(links))
	for j, l := range links {
		if names[j], err = l.Blackhole(cluster.StreamUp); err != nil {
			t.Fatal(err)
		}
	}
	during()
	time.Sleep(300 * time.Millisecond)
	for j, l := range links {
		if err := l.RemoveToxic(locktest.Timeout(t, 10*time.Second), names[j]); err != nil {
			t.Fatal(err)
		}
	}
	locktest.WaitFor(t, 10*time.Second, "the session back", func() bool {
		select {
		case <-s.Up():
			return s.Counters()["session_losses"] > losses
		default:
			return false
		}
	})
	if got := s.Conn().SessionID(); got != sid {
		t.Fatalf("client %d session %x expired (now %x): the test needs it to survive", i, sid, got)
	}
}

// labSession is a ZooKeeper client's session.
func labSession(c locks.Client) *zklock.Session {
	return c.(interface{ Session() *zklock.Session }).Session()
}

// BenchmarkAcquireReleaseZKLib measures an uncontended acquire + release.
func BenchmarkAcquireReleaseZKLib(b *testing.B) { labBenchmark(b, adapters.NameZKLib) }

func labBenchmark(b *testing.B, name string) {
	spec, _ := locks.Lookup(name)
	l := labConnect(b, testenv.NewEnsemble(b, spec.Backend, 1), 0, name).Locker(locktest.Name(b))
	locktest.AcquireRelease(b, l)
}
