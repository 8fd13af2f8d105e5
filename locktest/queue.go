package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// FIFO checks that waiters get the lock in the order they queued. holder
// holds the lock; waiters[k] (waiter k+1 in failures) starts its Acquire
// once the one before it is queued, that is once queued(), the number of
// holders and waiters the backend has in its queue, reaches k+1; each may
// take 10s to get there. FIFO then releases holder and fails the test
// unless the waiters got the lock, and released it, in the order they came.
func FIFO(t testing.TB, holder locks.Lease, waiters []locks.Locker, queued func() int) {
	t.Helper()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, also when the test fails: no waiter outlives it
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		order []int
	)
	for k, l := range waiters {
		i := k + 1
		wg.Go(func() {
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
		})
		WaitFor(t, 10*time.Second, fmt.Sprintf("waiter %d queued", i), func() bool { return queued() == i+1 })
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatalf("holder release: %v", err)
	}
	wg.Wait()
	want := make([]int, len(waiters))
	for k := range want {
		want[k] = k + 1
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("acquisition order %v, want %v", order, want)
	}
}

// CanceledAcquire checks that a waiter giving up leaves nothing behind that
// blocks the next one: while holder holds the lock, canceled's Acquire
// must end with context.DeadlineExceeded after 200ms; next then waits,
// holder is released, and next must get the lock and give it back within d.
func CanceledAcquire(t testing.TB, holder locks.Lease, canceled, next locks.Locker, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := canceled.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() {
		// Longer than d: a blocked next is reported as such below.
		ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
		defer cancel()
		ls, err := next.Acquire(ctx)
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
			t.Fatalf("next waiter: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("next waiter still blocked after %s: the canceled waiter was left in the queue", d)
	}
}
