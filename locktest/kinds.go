package locktest

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// Outcome is the result of an Acquire started by AcquireAsync.
type Outcome struct {
	Lease locks.Lease
	Err   error
}

// AcquireAsync starts acquire (a Locker's Acquire or AcquireShared) on a
// goroutine of its own and returns where its outcome arrives; the call's
// context ends after a minute or with the test.
func AcquireAsync(t testing.TB, acquire func(context.Context) (locks.Lease, error)) <-chan Outcome {
	ctx := Timeout(t, time.Minute)
	out := make(chan Outcome, 1)
	go func() {
		ls, err := acquire(ctx)
		out <- Outcome{ls, err}
	}()
	return out
}

// Waiting fails the test when got delivers within 300ms: its Acquire
// should still wait. who names the waiter in the failure.
func Waiting(t testing.TB, got <-chan Outcome, who string) {
	t.Helper()
	select {
	case o := <-got:
		t.Fatalf("%s returned while it should wait (err %v)", who, o.Err)
	case <-time.After(300 * time.Millisecond):
	}
}

// Granted waits up to 30s for got's lease, failing the test when the
// Acquire failed or still waits then.
func Granted(t testing.TB, got <-chan Outcome, who string) locks.Lease {
	t.Helper()
	select {
	case o := <-got:
		if o.Err != nil {
			t.Fatalf("%s: %v", who, o.Err)
		}
		return o.Lease
	case <-time.After(30 * time.Second):
		t.Fatalf("%s not granted within 30s", who)
	}
	return nil
}

// Release releases ls within 10s, failing the test at once when that
// fails; who names the holder. Unlike ReleaseHeld it does not look at
// Lost first.
func Release(t testing.TB, ls locks.Lease, who string) {
	t.Helper()
	if err := ls.Release(Timeout(t, 10*time.Second)); err != nil {
		t.Fatalf("%s release: %v", who, err)
	}
}

// TakeOver checks that a waiter gets the lock from a holder cut off from
// the servers: waiter (an AcquireAsync behind held) must still wait, cut
// then cuts the holder's links, held's Lost must close within bound
// (LossBound), and the waiter must be granted within 30s once the server
// ended the holder's lease or session. It returns the waiter's lease.
func TakeOver(t testing.TB, held locks.Lease, waiter <-chan Outcome, cut func(), bound time.Duration) locks.Lease {
	t.Helper()
	Waiting(t, waiter, "waiter behind the holder")
	at := time.Now()
	cut()
	select {
	case <-held.Lost():
	case <-time.After(bound):
		t.Fatalf("cut holder's Lost not closed within %s", bound)
	}
	ls := Granted(t, waiter, "waiter after the cut holder's lease ended")
	t.Logf("waiter granted %s after the cut", time.Since(at).Round(time.Millisecond))
	return ls
}

// Shared returns c's Locker of lock as the read-write lock it must be,
// failing the test when it is not a locks.SharedLocker.
func Shared(t testing.TB, c locks.Client, lock string) locks.SharedLocker {
	t.Helper()
	l, ok := c.Locker(lock).(locks.SharedLocker)
	if !ok {
		t.Fatalf("%T is not a locks.SharedLocker", c.Locker(lock))
	}
	return l
}

// Inside counts the holders inside a critical section, and the most that
// were ever inside at once. Safe for concurrent use; the zero value is an
// empty section.
type Inside struct{ now, peak atomic.Int64 }

// Enter counts a holder in and returns how many are inside, itself
// included.
func (c *Inside) Enter() int64 {
	n := c.now.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	return n
}

// Leave counts a holder out.
func (c *Inside) Leave() { c.now.Add(-1) }

// Now is how many holders are inside.
func (c *Inside) Now() int64 { return c.now.Load() }

// Peak is the most holders that were inside at once.
func (c *Inside) Peak() int64 { return c.peak.Load() }

// RWConformance checks a read-write lock's queue with four lockers of one
// lock, each of its own client: two readers hold together, a writer
// waits behind them and a reader behind that waiting writer; the writer
// gets the lock once both readers released, the queued reader once the
// writer released, and a second writer once that reader released. Every
// holder's token is above the one's before it.
func RWConformance(t testing.TB, l []locks.SharedLocker) {
	t.Helper()
	if len(l) < 4 {
		t.Fatalf("RWConformance needs 4 lockers, got %d", len(l))
	}
	r0 := Granted(t, AcquireAsync(t, l[0].AcquireShared), "reader 0")
	r1 := Granted(t, AcquireAsync(t, l[1].AcquireShared), "reader 1 beside reader 0")

	w := AcquireAsync(t, l[2].Acquire)
	Waiting(t, w, "writer behind two readers")
	r3 := AcquireAsync(t, l[3].AcquireShared)
	Waiting(t, r3, "reader behind a waiting writer")
	Release(t, r0, "reader 0")
	Waiting(t, w, "writer behind one reader")
	Release(t, r1, "reader 1")
	wl := Granted(t, w, "writer after the readers")
	Waiting(t, r3, "reader behind the writer")

	w1 := AcquireAsync(t, l[0].Acquire)
	Waiting(t, w1, "second writer")
	Release(t, wl, "writer")
	rl := Granted(t, r3, "reader after the writer")
	Waiting(t, w1, "second writer behind the reader")
	if rl.Token() <= wl.Token() {
		t.Errorf("reader token %d not above the writer's %d before it", rl.Token(), wl.Token())
	}
	Release(t, rl, "reader 3")
	wl1 := Granted(t, w1, "second writer")
	if wl1.Token() <= rl.Token() {
		t.Errorf("writer token %d not above %d, the holder's before it", wl1.Token(), rl.Token())
	}
	Release(t, wl1, "second writer")
}

// ContendRW runs every locker through rounds acquisitions, shared or
// exclusive at random (seeded per client), holding hold each, within 3
// minutes, and checks the read-write promise: never a writer with anybody
// else inside, a writer's token above every earlier holder's, a reader's
// above the last writer's, and readers inside together at some point.
func ContendRW(t testing.TB, lockers []locks.SharedLocker, rounds int, hold time.Duration) {
	t.Helper()
	ctx := Timeout(t, 3*time.Minute)
	var (
		readers, writers   Inside
		mu                 sync.Mutex // orders the entries' bookkeeping
		lastWrite, lastAny uint64
		wg                 sync.WaitGroup
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
				mu.Lock()
				if write {
					if w := writers.Enter(); w != 1 || readers.Now() != 0 {
						t.Errorf("client %d writer inside with %d writers and %d readers", i, w, readers.Now())
					}
					if tok <= lastAny {
						t.Errorf("writer token %d not above %d, the highest before it", tok, lastAny)
					}
					lastWrite, lastAny = tok, tok
				} else {
					readers.Enter()
					if w := writers.Now(); w != 0 {
						t.Errorf("client %d reader inside with %d writers", i, w)
					}
					if tok <= lastWrite {
						t.Errorf("reader token %d not above the last writer's %d", tok, lastWrite)
					}
					lastAny = max(lastAny, tok)
				}
				mu.Unlock()
				time.Sleep(hold) // the critical section's work
				if write {
					writers.Leave()
				} else {
					readers.Leave()
				}
				if err := ls.Release(ctx); err != nil {
					t.Errorf("client %d release %d: %v", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("readers inside together at most: %d", readers.Peak())
	if readers.Peak() < 2 {
		t.Errorf("readers never held together")
	}
}

// ContendPermits runs every locker of a semaphore of permits permits
// through rounds acquisitions holding hold each, within 3 minutes, and
// checks that never more than permits holders are inside, and more than
// one at some point.
func ContendPermits(t testing.TB, lockers []locks.Locker, permits int64, rounds int, hold time.Duration) {
	t.Helper()
	ctx := Timeout(t, 3*time.Minute)
	var (
		inside Inside
		wg     sync.WaitGroup
	)
	for i, l := range lockers {
		wg.Go(func() {
			for n := range rounds {
				ls, err := l.Acquire(ctx)
				if err != nil {
					t.Errorf("client %d acquire %d: %v", i, n, err)
					return
				}
				if in := inside.Enter(); in > permits {
					t.Errorf("client %d: %d holders of %d permits", i, in, permits)
				}
				time.Sleep(hold) // the critical section's work
				inside.Leave()
				if err := ls.Release(ctx); err != nil {
					t.Errorf("client %d release %d: %v", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("holders inside together at most: %d of %d permits", inside.Peak(), permits)
	if inside.Peak() < 2 {
		t.Errorf("never more than one holder inside: the permits are not shared")
	}
}
