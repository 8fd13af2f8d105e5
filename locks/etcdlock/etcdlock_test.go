package etcdlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// ttl is short so that expiry tests stay fast; etcd's minimum lease TTL
// with default election settings is 2s.
const ttl = 3 * time.Second

const testPrefix = "locklab-test"

// connect builds client i through the registry, as the harness does, with
// the short ttl of expiry tests.
func connect(t testing.TB, e *testenv.Ensemble, i int) locks.Client {
	t.Helper()
	return connectTTL(t, e, i, ttl)
}

// connectTTL is connect with a lease TTL of the test's choice.
func connectTTL(t testing.TB, e *testenv.Ensemble, i int, ttl time.Duration) locks.Client {
	t.Helper()
	return locktest.Connect(t, etcdlock.Name, locks.Config{Endpoints: e.Endpoints(i), Prefix: testPrefix, TTL: ttl})
}

// admin connects a plain etcd client through client i's links.
func admin(t testing.TB, e *testenv.Ensemble, i int) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := etcdlock.Dial(ctx, locks.Config{Endpoints: e.Endpoints(i)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// keys returns the keys under the lock's prefix, in create order.
func keys(t testing.TB, cli *clientv3.Client, lock string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, testPrefix+"/"+lock+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// TestMutualExclusion: 8 clients, 2000 critical sections, no overlap,
// tokens strictly increasing.
func TestMutualExclusion(t *testing.T) {
	const clients = 8
	e := testenv.NewEnsemble(t, locks.Etcd, clients)
	r := locktest.Contend(t, locktest.Contenders{
		Connect: func(i int) locks.Client { return connectTTL(t, e, i, locktest.SteadyTTL) },
		Clients: clients, Rounds: 250, Fencing: true,
	})
	t.Logf("watch events per op %.2f, requests per op %.2f, local checks per op %.2f",
		r.PerOp("watch_events"), r.PerOp("requests"), r.PerOp("local_checks"))
	// A waiter woken by its predecessor's deletion re-checks at that
	// revision on its member; only a member behind it makes the
	// linearizable read instead.
	if r.Counters["local_checks"] == 0 {
		t.Error("no re-check was answered at the deletion's revision")
	}
}

// TestFIFO checks that waiters acquire in the order they queued.
func TestFIFO(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 5)
	lock := locktest.Name(t)
	adm := admin(t, e, 4)
	holder := locktest.Acquire(t, connectTTL(t, e, 0, locktest.SteadyTTL).Locker(lock))
	var waiters []locks.Locker
	for i := 1; i <= 3; i++ {
		waiters = append(waiters, connectTTL(t, e, i, locktest.SteadyTTL).Locker(lock))
	}
	locktest.FIFO(t, holder, waiters, func() int { return len(keys(t, adm, lock)) })
}

// TestLostOnCut cuts every link of the holder's client: Lost must close
// within the TTL + 1s; the next client acquires once the lease expired,
// and the stale holder's Release reports ErrNotHeld and leaves the new
// holder's key intact.
func TestLostOnCut(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 3)
	lock := locktest.Name(t)
	a, b := connect(t, e, 0), connect(t, e, 1)
	adm := admin(t, e, 2)
	held := locktest.Acquire(t, a.Locker(lock))

	cut := time.Now()
	e.Cut(t, 0)
	select {
	case <-held.Lost():
		t.Logf("Lost after %s", time.Since(cut).Round(time.Millisecond))
	case <-time.After(locktest.LossBound(ttl, time.Second)):
		t.Fatalf("Lost not closed within %s of the cut", locktest.LossBound(ttl, time.Second))
	}
	next := locktest.Acquire(t, b.Locker(lock))
	t.Logf("next holder after %s, token %d -> %d", time.Since(cut).Round(time.Millisecond), held.Token(), next.Token())
	if next.Token() <= held.Token() {
		t.Errorf("next token %d not above %d", next.Token(), held.Token())
	}
	e.Heal(t, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := held.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("stale Release = %v, want ErrNotHeld", err)
	}
	if k := keys(t, adm, lock); len(k) != 1 {
		t.Errorf("keys after the stale Release: %v, want the new holder's only", k)
	}
	locktest.ReleaseHeld(t, ctx, next, "new holder")
}

// TestWaiterLeaseExpired is etcd #11456: a waiter whose lease expired while
// it waited (its links were cut meanwhile) must not be told it holds the
// lock when its predecessor releases.
func TestWaiterLeaseExpired(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 3)
	lock := locktest.Name(t)
	adm := admin(t, e, 2)
	holder := locktest.Acquire(t, connect(t, e, 0).Locker(lock))
	waiter := connect(t, e, 1).Locker(lock)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result := locktest.Waiter(ctx, waiter.Acquire)
	locktest.WaitFor(t, 10*time.Second, "waiter queued", func() bool { return len(keys(t, adm, lock)) == 2 })

	e.Cut(t, 1)
	locktest.WaitFor(t, 3*ttl, "waiter's lease expired", func() bool { return len(keys(t, adm, lock)) == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	e.Heal(t, 1)
	locktest.WaiterLost(t, result)
}

// TestRecheckAfterWait isolates the re-check of etcd #11456: the waiter's
// lease is revoked behind its back (its keep-alive loop is not running, so
// only the re-check after the wait can tell), then the holder releases.
func TestRecheckAfterWait(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 3)
	lock := locktest.Name(t)
	adm := admin(t, e, 2)
	holder := locktest.Acquire(t, connect(t, e, 0).Locker(lock))
	waiter := connect(t, e, 1).Locker(lock)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result := locktest.Waiter(ctx, func(ctx context.Context) (locks.Lease, error) { return etcdlock.AcquireUnkept(ctx, waiter) })
	locktest.WaitFor(t, 10*time.Second, "waiter queued", func() bool { return len(keys(t, adm, lock)) == 2 })
	k := keys(t, adm, lock)[1]
	id, err := strconv.ParseInt(k[strings.LastIndexByte(k, '/')+1:], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-result:
		t.Fatalf("waiter returned before the holder released: %v", err)
	default:
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.WaiterLost(t, result)
}

func TestReleaseTwice(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 1)
	ls := locktest.Acquire(t, connect(t, e, 0).Locker(locktest.Name(t)))
	ctx := context.Background()
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("second Release = %v, want ErrNotHeld", err)
	}
}

// TestAcquireCanceled: a waiter that gives up leaves no key behind.
func TestAcquireCanceled(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 3)
	lock := locktest.Name(t)
	holder := locktest.Acquire(t, connect(t, e, 0).Locker(lock))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := connect(t, e, 1).Locker(lock).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
	}
	adm := admin(t, e, 2)
	locktest.WaitFor(t, 10*time.Second, "canceled waiter's key removed", func() bool { return len(keys(t, adm, lock)) == 1 })
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	e := testenv.NewEnsemble(b, locks.Etcd, 1)
	l := connect(b, e, 0).Locker(locktest.Name(b))
	locktest.AcquireRelease(b, l)
}
