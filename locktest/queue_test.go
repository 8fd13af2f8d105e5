package locktest_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locktest"
)

// queueLock is an in-process lock with a queue of waiters, handing the lock
// to the first of them (or, with lifo, the last). With leaky, a waiter that
// gives up stays in the queue, and the lock handed to it is never released.
type queueLock struct {
	lifo, leaky bool
	mu          sync.Mutex
	held        bool
	waiting     []chan struct{}
}

func (q *queueLock) Acquire(ctx context.Context) (locks.Lease, error) {
	q.mu.Lock()
	if !q.held {
		q.held = true
		q.mu.Unlock()
		return queueLease{q}, nil
	}
	ch := make(chan struct{})
	q.waiting = append(q.waiting, ch)
	q.mu.Unlock()
	select {
	case <-ch:
		return queueLease{q}, nil
	case <-ctx.Done():
		if !q.leaky {
			q.mu.Lock()
			if i := slices.Index(q.waiting, ch); i >= 0 {
				q.waiting = slices.Delete(q.waiting, i, i+1)
				q.mu.Unlock()
			} else { // handed the lock as ctx ended: pass it on
				q.mu.Unlock()
				q.release()
			}
		}
		return nil, ctx.Err()
	}
}

func (q *queueLock) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.held = false
		return
	}
	i := 0
	if q.lifo {
		i = len(q.waiting) - 1
	}
	close(q.waiting[i])
	q.waiting = slices.Delete(q.waiting, i, i+1)
}

// queued counts the holder and the waiters.
func (q *queueLock) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.held {
		return 0
	}
	return 1 + len(q.waiting)
}

type queueLease struct{ q *queueLock }

func (ls queueLease) Token() uint64                 { return 0 }
func (ls queueLease) Release(context.Context) error { ls.q.release(); return nil }
func (ls queueLease) Lost() <-chan struct{}         { return nil }

func TestFIFO(t *testing.T) {
	for _, tt := range []struct {
		name    string
		lock    *queueLock
		failure string
	}{
		{"fifo", &queueLock{}, ""},
		{"lifo", &queueLock{lifo: true}, "acquisition order [3 2 1], want [1 2 3]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			holder, err := tt.lock.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			waiters := []locks.Locker{tt.lock, tt.lock, tt.lock}
			rec.run(func(tb testing.TB) { locktest.FIFO(tb, holder, waiters, tt.lock.queued) })
			if got := rec.failures(); got != tt.failure {
				t.Errorf("reported %q, want %q", got, tt.failure)
			}
		})
	}
}

func TestCanceledAcquire(t *testing.T) {
	for _, tt := range []struct {
		name    string
		lock    *queueLock
		failure string
	}{
		{"removed", &queueLock{}, ""},
		{"left in the queue", &queueLock{leaky: true}, "next waiter still blocked after 300ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			holder, err := tt.lock.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			rec.run(func(tb testing.TB) {
				locktest.CanceledAcquire(tb, holder, tt.lock, tt.lock, 300*time.Millisecond)
			})
			if got := rec.failures(); !strings.Contains(got, tt.failure) || (tt.failure == "") != (got == "") {
				t.Errorf("reported %q, want %q", got, tt.failure)
			}
		})
	}
}
