package adapters_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/adapters"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// Helpers of etcd-rw's tests carry an "rw" prefix. Clients of
// TestEtcdRW's ensemble: 0..5 are shared by the subtests, and each test
// that cuts a client's links has one of its own.
const (
	rwCutReader = 6
	rwCutWaiter = 7
	rwClients   = 8
)

// TestEtcdRW runs etcd-rw's conformance tests on one ensemble.
func TestEtcdRW(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, rwClients)
	t.Run("conformance", func(t *testing.T) { testEtcdRWConformance(t, e) })
	t.Run("exclusion", func(t *testing.T) { testEtcdRWExclusion(t, e) })
	t.Run("reader-lost", func(t *testing.T) { testEtcdRWReaderLost(t, e) })
	t.Run("waiter-lease-expired", func(t *testing.T) { testEtcdRWWaiterLeaseExpired(t, e) })
	t.Run("canceled", func(t *testing.T) { testEtcdRWCanceled(t, e) })
}

// rwLocker is client i's etcd-rw Locker of lock, with a steady TTL.
func rwLocker(t testing.TB, e *testenv.Ensemble, i int, lock string) locks.SharedLocker {
	t.Helper()
	return locktest.Shared(t, labConnectTTL(t, e, i, adapters.NameEtcdRW, locktest.SteadyTTL), lock)
}

// rwKeys counts the keys under lock's prefix.
func rwKeys(t testing.TB, e *testenv.Ensemble, i int, lock string) func() int64 {
	t.Helper()
	ctx := locktest.Timeout(t, time.Minute)
	adm, err := etcdlock.Dial(ctx, locks.Config{Endpoints: e.Endpoints(i)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })
	return func() int64 {
		resp, err := adm.Get(ctx, labPrefix+"/"+lock+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
}

// testEtcdRWConformance: readers hold together, a writer excludes readers
// and writers, a writer waiting behind readers gets the lock once they
// release, a reader queued behind a waiting writer waits for it, and
// writers' tokens increase (locktest.RWConformance).
func testEtcdRWConformance(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	var l []locks.SharedLocker
	for i := range 4 {
		l = append(l, rwLocker(t, e, i, lock))
	}
	locktest.RWConformance(t, l)
}

// testEtcdRWExclusion: 6 clients x 30 acquisitions, half of them shared
// (seeded), each holding 2ms: never a writer with anybody else inside,
// writers' tokens above every earlier holder's, readers inside together
// at some point.
func testEtcdRWExclusion(t *testing.T, e *testenv.Ensemble) {
	const clients, rounds = 6, 30
	lock := locktest.Name(t)
	var l []locks.SharedLocker
	for i := range clients {
		l = append(l, rwLocker(t, e, i, lock))
	}
	locktest.ContendRW(t, l, rounds, 2*time.Millisecond)
}

// testEtcdRWReaderLost: a reader whose links are cut loses its lease
// (Lost closes) and, once the lease expired, the writer waiting behind it
// gets the lock with a higher token.
func testEtcdRWReaderLost(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	r := locktest.Granted(t, locktest.AcquireAsync(t, locktest.Shared(t, labConnect(t, e, rwCutReader, adapters.NameEtcdRW), lock).AcquireShared), "reader")
	w := locktest.AcquireAsync(t, locktest.Shared(t, labConnect(t, e, 0, adapters.NameEtcdRW), lock).Acquire)
	wl := locktest.TakeOver(t, r, w, func() { e.Cut(t, rwCutReader) }, locktest.LossBound(labTTL, time.Second))
	e.Heal(t, rwCutReader) // the client's Close revokes its lease
	if wl.Token() <= r.Token() {
		t.Errorf("writer token %d not above the lost reader's %d", wl.Token(), r.Token())
	}
	locktest.Release(t, wl, "writer")
}

// testEtcdRWWaiterLeaseExpired is etcd #11456 against the library: a
// writer waiting behind a reader has its links cut until its lease
// expired; the reader releases and the links heal. The library tells the
// waiter it holds the lock; the adapter's token read finds its key gone
// and reports locks.ErrLeaseLost instead.
func testEtcdRWWaiterLeaseExpired(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	keys := rwKeys(t, e, 1, lock)
	r := locktest.Granted(t, locktest.AcquireAsync(t, locktest.Shared(t, labConnect(t, e, 0, adapters.NameEtcdRW), lock).AcquireShared), "reader")
	w := locktest.AcquireAsync(t, locktest.Shared(t, labConnect(t, e, rwCutWaiter, adapters.NameEtcdRW), lock).Acquire)
	locktest.WaitFor(t, 3*labTTL, "writer queued", func() bool { return keys() == 2 })
	e.Cut(t, rwCutWaiter)
	locktest.WaitFor(t, 3*labTTL, "writer's lease expired", func() bool { return keys() == 1 })
	locktest.Release(t, r, "reader")
	e.Heal(t, rwCutWaiter)
	select {
	case o := <-w:
		if !errors.Is(o.Err, locks.ErrLeaseLost) {
			t.Errorf("waiter's Acquire = %v, want ErrLeaseLost", o.Err)
		}
		if o.Lease != nil {
			o.Lease.Release(context.Background())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waiter's Acquire still blocked")
	}
}

// testEtcdRWCanceled: a writer that gives up leaves no key behind (the
// adapter drops its session), so a reader behind it is not blocked.
func testEtcdRWCanceled(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	keys := rwKeys(t, e, 1, lock)
	w := locktest.Granted(t, locktest.AcquireAsync(t, rwLocker(t, e, 0, lock).Acquire), "writer")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := rwLocker(t, e, 2, lock).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled writer's Acquire = %v, want DeadlineExceeded", err)
	}
	locktest.WaitFor(t, 10*time.Second, "canceled writer's key removed", func() bool { return keys() == 1 })
	r := locktest.AcquireAsync(t, rwLocker(t, e, 3, lock).AcquireShared)
	locktest.Waiting(t, r, "reader behind the writer")
	locktest.Release(t, w, "writer")
	locktest.Release(t, locktest.Granted(t, r, "reader after the writer"), "reader")
}

// BenchmarkAcquireReleaseEtcdRW measures an uncontended write acquire +
// release (with the adapter's token read).
func BenchmarkAcquireReleaseEtcdRW(b *testing.B) { labBenchmark(b, adapters.NameEtcdRW) }
