package zklock_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/zklock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// Clients of TestKinds' ensemble: 0..5 are shared by the subtests, and
// each test that cuts a client's links has one of its own.
const (
	cutRW        = 6
	cutSemaphore = 7
	kindClients  = 8
)

// TestKinds runs the conformance tests of zk-rw and zk-semaphore on one
// ensemble.
func TestKinds(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.ZooKeeper, kindClients)
	for _, tt := range []struct {
		name string
		test func(*testing.T, *testenv.Ensemble)
	}{
		{"rw", testRWConformance},
		{"rw-exclusion", testRWExclusion},
		{"rw-reader-lost", testRWReaderLost},
		{"semaphore", testSemaphoreConformance},
		{"semaphore-exclusion", testSemaphoreExclusion},
		{"semaphore-holder-lost", testSemaphoreHolderLost},
		{"canceled", testKindsCanceled},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, e) })
	}
}

// connectPermits is connect for zk-semaphore with permits permits and the
// session timeout of the test's choice.
func connectPermits(t testing.TB, e *testenv.Ensemble, i, permits int, session time.Duration) locks.Client {
	t.Helper()
	return locktest.Connect(t, zklock.NameSemaphore, locks.Config{
		Endpoints: e.Endpoints(i),
		Prefix:    testPrefix,
		Options: map[string]string{
			zklock.OptSessionTimeout: session.String(),
			locks.PermitsOption:      strconv.Itoa(permits),
		},
	})
}

// shared returns client's Locker of lock as the read-write lock it must be.
func shared(t testing.TB, c locks.Client, lock string) locks.SharedLocker {
	t.Helper()
	l, ok := c.Locker(lock).(locks.SharedLocker)
	if !ok {
		t.Fatalf("%T is not a locks.SharedLocker", c.Locker(lock))
	}
	return l
}

// outcome is an Acquire's result.
type outcome struct {
	ls  locks.Lease
	err error
}

// acquireAsync starts acquire on a goroutine and returns where its outcome
// arrives; the test's end cancels it.
func acquireAsync(t *testing.T, acquire func(context.Context) (locks.Lease, error)) <-chan outcome {
	ctx := locktest.Timeout(t, time.Minute)
	out := make(chan outcome, 1)
	go func() {
		ls, err := acquire(ctx)
		out <- outcome{ls, err}
	}()
	return out
}

// waiting fails the test when got delivers within 300ms: its Acquire
// should still wait.
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

// testRWConformance: readers hold together, a writer excludes readers and
// writers, a writer waiting behind readers gets the lock once they
// release, and a reader queued behind a waiting writer waits for it.
func testRWConformance(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	var l []locks.SharedLocker
	for i := range 4 {
		l = append(l, shared(t, connectSession(t, e, i, zklock.NameRW, locktest.SteadyTTL), lock))
	}
	r0 := locktest.Acquire(t, readSide{l[0]})
	r1 := locktest.AcquireWithin(t, readSide{l[1]}, 10*time.Second) // readers together

	w := acquireAsync(t, l[2].Acquire)
	waiting(t, w, "writer behind two readers")
	r3 := acquireAsync(t, l[3].AcquireShared)
	waiting(t, r3, "reader behind a waiting writer")
	release(t, r0, "reader 0")
	waiting(t, w, "writer behind one reader")
	release(t, r1, "reader 1")
	wl := granted(t, w, "writer after the readers")
	waiting(t, r3, "reader behind the writer")

	w1 := acquireAsync(t, l[0].Acquire)
	waiting(t, w1, "second writer")
	release(t, wl, "writer")
	rl := granted(t, r3, "reader after the writer")
	waiting(t, w1, "second writer behind the reader")
	release(t, rl, "reader 3")
	wl1 := granted(t, w1, "second writer")
	if wl1.Token() <= wl.Token() {
		t.Errorf("writer tokens %d then %d: not increasing", wl.Token(), wl1.Token())
	}
	release(t, wl1, "second writer")
}

// readSide is a SharedLocker's shared side as a Locker.
type readSide struct{ l locks.SharedLocker }

func (r readSide) Acquire(ctx context.Context) (locks.Lease, error) { return r.l.AcquireShared(ctx) }

// testRWExclusion: 6 clients x 30 acquisitions, half of them shared, each
// holding 2ms: never a writer with anybody else inside, writers' tokens
// strictly increasing, readers inside together at some point.
func testRWExclusion(t *testing.T, e *testenv.Ensemble) {
	const clients = 6
	lock := locktest.Name(t)
	var l []locks.SharedLocker
	for i := range clients {
		l = append(l, shared(t, connectSession(t, e, i, zklock.NameRW, locktest.SteadyTTL), lock))
	}
	contendRW(t, l, 30, 2*time.Millisecond)
}

// contendRW runs every locker through rounds acquisitions, shared or
// exclusive at random (seeded per client), holding hold each, and checks
// the read-write promise with counters of the holders inside.
func contendRW(t *testing.T, lockers []locks.SharedLocker, rounds int, hold time.Duration) {
	ctx := locktest.Timeout(t, 3*time.Minute)
	var (
		readers, writers, readPeak atomic.Int64
		mu                         sync.Mutex
		lastWrite, lastAny         uint64
		wg                         sync.WaitGroup
	)
	for i, l := range lockers {
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
				if write {
					if w := writers.Add(1); w != 1 || readers.Load() != 0 {
						t.Errorf("client %d writer inside with %d writers and %d readers", i, w, readers.Load())
					}
					mu.Lock()
					if tok <= lastAny {
						t.Errorf("writer token %d not above %d, the highest before it", tok, lastAny)
					}
					lastWrite, lastAny = tok, tok
					mu.Unlock()
				} else {
					r := readers.Add(1)
					if w := writers.Load(); w != 0 {
						t.Errorf("client %d reader inside with %d writers", i, w)
					}
					for p := readPeak.Load(); r > p && !readPeak.CompareAndSwap(p, r); p = readPeak.Load() {
					}
					mu.Lock()
					if tok <= lastWrite {
						t.Errorf("reader token %d not above the last writer's %d", tok, lastWrite)
					}
					lastAny = max(lastAny, tok)
					mu.Unlock()
				}
				time.Sleep(hold)
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

// testRWReaderLost: a reader whose links are cut loses its lease (Lost
// closes) and, once its session expires, the writer waiting behind it
// gets the lock.
func testRWReaderLost(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	r := locktest.Acquire(t, readSide{shared(t, connect(t, e, cutRW, zklock.NameRW), lock)})
	w := acquireAsync(t, shared(t, connect(t, e, 0, zklock.NameRW), lock).Acquire)
	waiting(t, w, "writer behind the reader")
	cut := time.Now()
	e.Cut(t, cutRW)
	select {
	case <-r.Lost():
	case <-time.After(locktest.LossBound(sessionTimeout, time.Second)):
		t.Fatal("reader's Lost not closed")
	}
	wl := granted(t, w, "writer after the reader's session expired")
	t.Logf("writer granted %s after the cut", time.Since(cut).Round(time.Millisecond))
	if wl.Token() <= r.Token() {
		t.Errorf("writer token %d not above the lost reader's %d", wl.Token(), r.Token())
	}
	release(t, wl, "writer")
}

// testSemaphoreConformance: 3 permits admit 3 holders, the 4th waits
// until one releases; tokens increase in grant order.
func testSemaphoreConformance(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	var held []locks.Lease
	for i := range 3 {
		held = append(held, locktest.AcquireWithin(t, connectPermits(t, e, i, 3, locktest.SteadyTTL).Locker(lock), 10*time.Second))
		if i > 0 && held[i].Token() <= held[i-1].Token() {
			t.Errorf("token %d then %d: not increasing", held[i-1].Token(), held[i].Token())
		}
	}
	fourth := acquireAsync(t, connectPermits(t, e, 3, 3, locktest.SteadyTTL).Locker(lock).Acquire)
	waiting(t, fourth, "4th holder of 3 permits")
	release(t, held[1], "holder 1")
	ls := granted(t, fourth, "4th holder after a release")
	if ls.Token() <= held[2].Token() {
		t.Errorf("4th token %d not above %d", ls.Token(), held[2].Token())
	}
	for _, l := range []locks.Lease{held[0], held[2], ls} {
		release(t, l, "holder")
	}
}

// testSemaphoreExclusion: 6 clients x 30 acquisitions of 3 permits, each
// holding 10ms: never more than 3 inside, and more than 1 at some point.
func testSemaphoreExclusion(t *testing.T, e *testenv.Ensemble) {
	const clients, permits = 6, 3
	lock := locktest.Name(t)
	var l []locks.Locker
	for i := range clients {
		l = append(l, connectPermits(t, e, i, permits, locktest.SteadyTTL).Locker(lock))
	}
	contendSemaphore(t, l, permits, 30, 10*time.Millisecond)
}

// contendSemaphore runs every locker through rounds acquisitions holding
// hold each, and checks that no more than permits are ever inside.
func contendSemaphore(t *testing.T, lockers []locks.Locker, permits int64, rounds int, hold time.Duration) {
	ctx := locktest.Timeout(t, 3*time.Minute)
	var (
		inside, peak atomic.Int64
		wg           sync.WaitGroup
	)
	for i, l := range lockers {
		wg.Go(func() {
			for n := range rounds {
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
				time.Sleep(hold)
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
// holder's links closes its Lost, and once its session expires its permit
// goes to the waiter, while the other holder keeps its own.
func testSemaphoreHolderLost(t *testing.T, e *testenv.Ensemble) {
	lock := locktest.Name(t)
	a := locktest.Acquire(t, connectPermits(t, e, cutSemaphore, 2, sessionTimeout).Locker(lock))
	b := locktest.Acquire(t, connectPermits(t, e, 0, 2, sessionTimeout).Locker(lock))
	c := acquireAsync(t, connectPermits(t, e, 1, 2, sessionTimeout).Locker(lock).Acquire)
	waiting(t, c, "3rd holder of 2 permits")
	cut := time.Now()
	e.Cut(t, cutSemaphore)
	select {
	case <-a.Lost():
	case <-time.After(locktest.LossBound(sessionTimeout, time.Second)):
		t.Fatal("cut holder's Lost not closed")
	}
	cl := granted(t, c, "waiter after the cut holder's session expired")
	t.Logf("waiter granted %s after the cut", time.Since(cut).Round(time.Millisecond))
	locktest.ReleaseHeld(t, locktest.Timeout(t, 10*time.Second), b, "other holder")
	release(t, cl, "new holder")
}

// testKindsCanceled: a writer of zk-rw, and a waiter for zk-semaphore's
// single permit, that give up leave no node behind that blocks the next
// one (locktest.CanceledAcquire).
func testKindsCanceled(t *testing.T, e *testenv.Ensemble) {
	t.Run("rw", func(t *testing.T) {
		lock := locktest.Name(t)
		l := func(i int) locks.Locker {
			return connectSession(t, e, i, zklock.NameRW, locktest.SteadyTTL).Locker(lock)
		}
		locktest.CanceledAcquire(t, locktest.Acquire(t, l(0)), l(1), l(2), 10*time.Second)
	})
	t.Run("semaphore", func(t *testing.T) {
		lock := locktest.Name(t)
		l := func(i int) locks.Locker { return connectPermits(t, e, i, 1, locktest.SteadyTTL).Locker(lock) }
		locktest.CanceledAcquire(t, locktest.Acquire(t, l(0)), l(1), l(2), 10*time.Second)
	})
}
