package adapters_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
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

// rwShared returns client c's Locker of lock as a SharedLocker.
func rwShared(t testing.TB, c locks.Client, lock string) locks.SharedLocker {
	t.Helper()
	l, ok := c.Locker(lock).(locks.SharedLocker)
	if !ok {
		t.Fatalf("%T is not a locks.SharedLocker", c.Locker(lock))
	}
	return l
}

// rwLocker is client i's etcd-rw Locker of lock, with a steady TTL.
func rwLocker(t testing.TB, e *testenv.Ensemble, i int, lock string) locks.SharedLocker {
	t.Helper()
	return rwShared(t, labConnectTTL(t, e, i, adapters.NameEtcdRW, locktest.SteadyTTL), lock)
}

// rwOutcome is an Acquire's result.
type rwOutcome struct {
	ls  locks.Lease
	err error
}

// rwAsync starts acquire on a goroutine; the test's end cancels it.
func rwAsync(t *testing.T, acquire func(context.Context) (locks.Lease, error)) <-chan rwOutcome {
	ctx := locktest.Timeout(t, time.Minute)
	out := make(chan rwOutcome, 1)
	go func() {
		ls, err := acquire(ctx)
		out <- rwOutcome{ls, err}
	}()
	return out
}

// rwWaiting fails the test when got delivers within 300ms.
func rwWaiting(t *testing.T, got <-chan rwOutcome, who string) {
	t.Helper()
	select {
	case o := <-got:
		t.Fatalf("%s returned while it should wait (err %v)", who, o.err)
	case <-time.After(300 * time.Millisecond):
	}
}

// rwGranted waits up to 30s for got's lease.
func rwGranted(t *testing.T, got <-chan rwOutcome, who string) locks.Lease {
	t.Helper()
	select {
	case o := <-got:
		if o.err != nil {
			t.Fatalf("%s: %v", who, o.err)
		}
		return o.ls
	case <-time.After(30 * time.Second):
		t.Fatalf("%s not granted within 30s", who)
	}
	return nil
}

func rwRelease(t *testing.T, ls locks.Lease, who string) {
	t.Helper()
	if err := ls.Release(locktest.Timeout(t, 10*time.Second)); err != nil {
		t.Fatalf("%s release: %v", who, err)
	}
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
// writers' tokens increase.
func testEtcdRWConformance(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	var l []locks.SharedLocker
	for i := range 4 {
		l = append(l, rwLocker(t, e, i, lock))
	}
	r0 := rwGranted(t, rwAsync(t, l[0].AcquireShared), "reader 0")
	r1 := rwGranted(t, rwAsync(t, l[1].AcquireShared), "reader 1 beside reader 0")

	w := rwAsync(t, l[2].Acquire)
	rwWaiting(t, w, "writer behind two readers")
	r3 := rwAsync(t, l[3].AcquireShared)
	rwWaiting(t, r3, "reader behind a waiting writer")
	rwRelease(t, r0, "reader 0")
	rwWaiting(t, w, "writer behind one reader")
	rwRelease(t, r1, "reader 1")
	wl := rwGranted(t, w, "writer after the readers")
	rwWaiting(t, r3, "reader behind the writer")

	w1 := rwAsync(t, l[0].Acquire)
	rwWaiting(t, w1, "second writer")
	rwRelease(t, wl, "writer")
	rl := rwGranted(t, r3, "reader after the writer")
	rwWaiting(t, w1, "second writer behind the reader")
	if rl.Token() <= wl.Token() {
		t.Errorf("reader token %d not above the writer's %d before it", rl.Token(), wl.Token())
	}
	rwRelease(t, rl, "reader 3")
	wl1 := rwGranted(t, w1, "second writer")
	if wl1.Token() <= rl.Token() {
		t.Errorf("writer token %d not above %d, the holder's before it", wl1.Token(), rl.Token())
	}
	rwRelease(t, wl1, "second writer")
}

// testEtcdRWExclusion: 6 clients x 30 acquisitions, half of them shared
// (seeded), each holding 2ms: never a writer with anybody else inside,
// writers' tokens above every earlier holder's, readers inside together
// at some point.
func testEtcdRWExclusion(t *testing.T, e *testenv.Ensemble) {
	const clients, rounds = 6, 30
	lock := locktest.Name(t)
	ctx := locktest.Timeout(t, 3*time.Minute)
	var (
		readers, writers, readPeak atomic.Int64
		mu                         sync.Mutex
		lastWrite, lastAny         uint64
		wg                         sync.WaitGroup
	)
	for i := range clients {
		l := rwLocker(t, e, i, lock)
		rnd := rand.New(rand.NewPCG(uint64(i), 34))
		wg.Go(func() {
			for n := range rounds {
				write := rnd.IntN(2) == 0
				acquire := l.AcquireShared
				if write {
					acquire = l.Acquire
				}
				ls, err := acquire(ctx)
				if err != nil {
					t.Errorf("client %d acquire %d: %v", i, n, err)
					return
				}
				tok := ls.Token()
				mu.Lock()
				if write {
					if w := writers.Add(1); w != 1 || readers.Load() != 0 {
						t.Errorf("client %d writer inside with %d writers and %d readers", i, w, readers.Load())
					}
					if tok <= lastAny {
						t.Errorf("writer token %d not above %d, the highest before it", tok, lastAny)
					}
					lastWrite, lastAny = tok, tok
				} else {
					r := readers.Add(1)
					if w := writers.Load(); w != 0 {
						t.Errorf("client %d reader inside with %d writers", i, w)
					}
					readPeak.Store(max(readPeak.Load(), r))
					if tok <= lastWrite {
						t.Errorf("reader token %d not above the last writer's %d", tok, lastWrite)
					}
					lastAny = max(lastAny, tok)
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				if write {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				if err := ls.Release(ctx); err != nil {
					t.Errorf("client %d release %d: %v", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("readers inside together at most: %d", readPeak.Load())
	if readPeak.Load() < 2 {
		t.Error("readers never held together")
	}
}

// testEtcdRWReaderLost: a reader whose links are cut loses its lease
// (Lost closes) and, once the lease expired, the writer waiting behind it
// gets the lock with a higher token.
func testEtcdRWReaderLost(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	r := rwGranted(t, rwAsync(t, rwShared(t, labConnect(t, e, rwCutReader, adapters.NameEtcdRW), lock).AcquireShared), "reader")
	w := rwAsync(t, rwShared(t, labConnect(t, e, 0, adapters.NameEtcdRW), lock).Acquire)
	rwWaiting(t, w, "writer behind the reader")
	cut := time.Now()
	e.Cut(t, rwCutReader)
	select {
	case <-r.Lost():
	case <-time.After(locktest.LossBound(labTTL, time.Second)):
		t.Fatal("reader's Lost not closed")
	}
	wl := rwGranted(t, w, "writer after the reader's lease expired")
	t.Logf("writer granted %s after the cut", time.Since(cut).Round(time.Millisecond))
	e.Heal(t, rwCutReader) // the client's Close revokes its lease
	if wl.Token() <= r.Token() {
		t.Errorf("writer token %d not above the lost reader's %d", wl.Token(), r.Token())
	}
	rwRelease(t, wl, "writer")
}

// testEtcdRWWaiterLeaseExpired is etcd #11456 against the library: a
// writer waiting behind a reader has its links cut until its lease
// expired; the reader releases and the links heal. The library tells the
// waiter it holds the lock; the adapter's token read finds its key gone
// and reports locks.ErrLeaseLost instead.
func testEtcdRWWaiterLeaseExpired(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	keys := rwKeys(t, e, 1, lock)
	r := rwGranted(t, rwAsync(t, rwShared(t, labConnect(t, e, 0, adapters.NameEtcdRW), lock).AcquireShared), "reader")
	w := rwAsync(t, rwShared(t, labConnect(t, e, rwCutWaiter, adapters.NameEtcdRW), lock).Acquire)
	locktest.WaitFor(t, 3*labTTL, "writer queued", func() bool { return keys() == 2 })
	e.Cut(t, rwCutWaiter)
	locktest.WaitFor(t, 3*labTTL, "writer's lease expired", func() bool { return keys() == 1 })
	rwRelease(t, r, "reader")
	e.Heal(t, rwCutWaiter)
	select {
	case o := <-w:
		if !errors.Is(o.err, locks.ErrLeaseLost) {
			t.Errorf("waiter's Acquire = %v, want ErrLeaseLost", o.err)
		}
		if o.ls != nil {
			o.ls.Release(context.Background())
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
	w := rwGranted(t, rwAsync(t, rwLocker(t, e, 0, lock).Acquire), "writer")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := rwLocker(t, e, 2, lock).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled writer's Acquire = %v, want DeadlineExceeded", err)
	}
	locktest.WaitFor(t, 10*time.Second, "canceled writer's key removed", func() bool { return keys() == 1 })
	r := rwAsync(t, rwLocker(t, e, 3, lock).AcquireShared)
	rwWaiting(t, r, "reader behind the writer")
	rwRelease(t, w, "writer")
	rwRelease(t, rwGranted(t, r, "reader after the writer"), "reader")
}

// BenchmarkAcquireReleaseEtcdRW measures an uncontended write acquire +
// release (with the adapter's token read).
func BenchmarkAcquireReleaseEtcdRW(b *testing.B) { labBenchmark(b, adapters.NameEtcdRW) }
