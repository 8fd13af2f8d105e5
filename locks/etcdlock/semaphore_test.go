package etcdlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// Clients of TestSemaphore's ensemble: 0..5 are shared by the subtests;
// the one whose links are cut has its own.
const (
	cutSemaphore     = 6
	semaphoreClients = 7
)

// TestSemaphore runs etcd-semaphore's conformance tests on one ensemble.
func TestSemaphore(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, semaphoreClients)
	t.Run("admits", func(t *testing.T) { testSemaphoreAdmits(t, e) })
	t.Run("exclusion", func(t *testing.T) { testSemaphoreExclusion(t, e) })
	t.Run("holder-lost", func(t *testing.T) { testSemaphoreHolderLost(t, e) })
	t.Run("canceled", func(t *testing.T) {
		// A waiter for the single permit that gives up leaves no key
		// behind that blocks the next one.
		lock := locktest.Name(t)
		l := func(i int) locks.Locker { return connectPermits(t, e, i, 1, locktest.SteadyTTL).Locker(lock) }
		locktest.CanceledAcquire(t, locktest.Acquire(t, l(0)), l(1), l(2), 10*time.Second)
	})
}

// connectPermits builds etcd-semaphore client i with permits permits and
// lease TTL ttl.
func connectPermits(t testing.TB, e *testenv.Ensemble, i, permits int, ttl time.Duration) locks.Client {
	t.Helper()
	return locktest.Connect(t, etcdlock.NameSemaphore, locks.Config{
		Endpoints: e.Endpoints(i), Prefix: testPrefix, TTL: ttl,
		Options: map[string]string{locks.PermitsOption: strconv.Itoa(permits)},
	})
}

// outcome is an Acquire's result.
type outcome struct {
	ls  locks.Lease
	err error
}

// acquireAsync starts l's Acquire on a goroutine and returns where its
// outcome arrives; the test's end cancels it.
func acquireAsync(t *testing.T, l locks.Locker) <-chan outcome {
	ctx := locktest.Timeout(t, time.Minute)
	out := make(chan outcome, 1)
	go func() {
		ls, err := l.Acquire(ctx)
		out <- outcome{ls, err}
	}()
	return out
}

// waiting fails the test when got delivers within 300ms.
func waiting(t *testing.T, got <-chan outcome, who string) {
	t.Helper()
	select {
	case o := <-got:
		t.Fatalf("%s returned while it should wait (err %v)", who, o.err)
	case <-time.After(300 * time.Millisecond):
	}
}

// granted waits up to 30s for got's lease.
func granted(t *testing.T, got <-chan outcome, who string) locks.Lease {
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

func release(t *testing.T, ls locks.Lease, who string) {
	t.Helper()
	if err := ls.Release(locktest.Timeout(t, 10*time.Second)); err != nil {
		t.Fatalf("%s release: %v", who, err)
	}
}

// testSemaphoreAdmits: 3 permits admit 3 holders, the 4th and 5th wait;
// a release admits the 4th only, with a token above every earlier one.
func testSemaphoreAdmits(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	var held []locks.Lease
	for i := range 3 {
		held = append(held, locktest.AcquireWithin(t, connectPermits(t, e, i, 3, locktest.SteadyTTL).Locker(lock), 10*time.Second))
		if i > 0 && held[i].Token() <= held[i-1].Token() {
			t.Errorf("token %d then %d: not increasing", held[i-1].Token(), held[i].Token())
		}
	}
	fourth := acquireAsync(t, connectPermits(t, e, 3, 3, locktest.SteadyTTL).Locker(lock))
	waiting(t, fourth, "4th holder of 3 permits")
	fifth := acquireAsync(t, connectPermits(t, e, 4, 3, locktest.SteadyTTL).Locker(lock))
	waiting(t, fifth, "5th holder of 3 permits")
	// Not the key just ahead of the 4th: a waiter watching only that one
	// would not notice.
	release(t, held[0], "holder 0")
	ls := granted(t, fourth, "4th holder after a release")
	if ls.Token() <= held[2].Token() {
		t.Errorf("4th token %d not above %d", ls.Token(), held[2].Token())
	}
	waiting(t, fifth, "5th holder")
	release(t, ls, "4th holder")
	release(t, granted(t, fifth, "5th holder after a release"), "5th holder")
	release(t, held[1], "holder 1")
	release(t, held[2], "holder 2")
}

// testSemaphoreExclusion: 6 clients x 30 acquisitions of 3 permits, each
// holding 10ms: never more than 3 inside, and more than 1 at some point.
func testSemaphoreExclusion(t *testing.T, e *testenv.Ensemble) {
	const clients, permits = 6, 3
	lock := locktest.Name(t)
	ctx := locktest.Timeout(t, 3*time.Minute)
	var (
		inside, peak atomic.Int64
		wg           sync.WaitGroup
	)
	for i := range clients {
		l := connectPermits(t, e, i, permits, locktest.SteadyTTL).Locker(lock)
		wg.Go(func() {
			for n := range 30 {
				ls, err := l.Acquire(ctx)
				if err != nil {
					t.Errorf("client %d acquire %d: %v", i, n, err)
					return
				}
				in := inside.Add(1)
				if in > permits {
					t.Errorf("client %d: %d holders of %d permits", i, in, permits)
				}
				for p := peak.Load(); in > p && !peak.CompareAndSwap(p, in); p = peak.Load() {
				}
				time.Sleep(10 * time.Millisecond)
				inside.Add(-1)
				if err := ls.Release(ctx); err != nil {
					t.Errorf("client %d release %d: %v", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("holders inside together at most: %d of %d permits", peak.Load(), permits)
	if peak.Load() < 2 {
		t.Error("never more than one holder inside: the permits are not shared")
	}
}

// testSemaphoreHolderLost: with 2 permits held, a 3rd waits; cutting one
// holder's links closes its Lost, and once its lease expires its permit
// goes to the waiter while the other holder keeps its own; the cut
// holder's Release then reports ErrNotHeld.
func testSemaphoreHolderLost(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	a := locktest.Acquire(t, connectPermits(t, e, cutSemaphore, 2, ttl).Locker(lock))
	b := locktest.Acquire(t, connectPermits(t, e, 0, 2, ttl).Locker(lock))
	c := acquireAsync(t, connectPermits(t, e, 1, 2, ttl).Locker(lock))
	waiting(t, c, "3rd holder of 2 permits")
	cut := time.Now()
	e.Cut(t, cutSemaphore)
	select {
	case <-a.Lost():
	case <-time.After(locktest.LossBound(ttl, time.Second)):
		t.Fatal("cut holder's Lost not closed")
	}
	cl := granted(t, c, "waiter after the cut holder's lease expired")
	t.Logf("waiter granted %s after the cut", time.Since(cut).Round(time.Millisecond))
	if cl.Token() <= b.Token() {
		t.Errorf("new holder's token %d not above %d", cl.Token(), b.Token())
	}
	e.Heal(t, cutSemaphore)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("cut holder's Release = %v, want ErrNotHeld", err)
	}
	locktest.ReleaseHeld(t, ctx, b, "other holder")
	release(t, cl, "new holder")
}

func BenchmarkSemaphoreAcquireRelease(b *testing.B) {
	e := testenv.NewEnsemble(b, locks.Etcd, 1)
	locktest.AcquireRelease(b, connectPermits(b, e, 0, 3, ttl).Locker(locktest.Name(b)))
}
