package redislock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
)

func TestKindsRegistered(t *testing.T) {
	tests := []struct {
		name    string
		kind    locks.Kind
		broken  bool
		options string
	}{
		{"redis-rw", locks.KindRW, false, "[]"},
		{"redis-rw-naive", locks.KindRW, true, "[]"},
		{"redis-fair", locks.KindFair, false, "[]"},
		{"redis-semaphore", locks.KindSemaphore, false, "[permits]"},
		{"redis-semaphore-leaky", locks.KindSemaphore, true, "[permits]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := locks.Lookup(tt.name)
			if !ok {
				t.Fatal("not registered")
			}
			var names []string
			for _, o := range s.Options {
				names = append(names, o.Name)
			}
			if s.Kind != tt.kind || s.Broken != tt.broken || !s.Fencing || fmt.Sprint(names) != tt.options {
				t.Errorf("spec %+v", s)
			}
		})
	}
}

// TestKindsExclusive: the exclusive side of the read-write locks, the fair
// lock and a semaphore of one permit keep 8 clients apart and hand out
// increasing tokens in the order holders enter.
func TestKindsExclusive(t *testing.T) {
	srv := newServer(t)
	for _, v := range []redislock.Variant{redislock.RW, redislock.RWNaive, redislock.Fair, redislock.Semaphore, redislock.SemaphoreLeaky} {
		t.Run(string(v), func(t *testing.T) {
			locktest.Contend(t, locktest.Contenders{
				Connect: func(i int) locks.Client {
					cfg := locks.Config{TTL: 10 * time.Second, Seed: int64(i)}
					if v == redislock.Semaphore || v == redislock.SemaphoreLeaky {
						cfg.Options = map[string]string{locks.PermitsOption: "1"}
					}
					return srv.client(t, v, cfg)
				},
				Clients: 8, Rounds: 10, Hold: time.Millisecond, Within: 30 * time.Second, Fencing: true,
			})
		})
	}
}

// TestRWReadersShare: readers hold redis-rw together, a writer waits for
// them all, and a reader waits for the writer.
func TestRWReadersShare(t *testing.T) {
	srv := newServer(t)
	c := srv.client(t, redislock.RW, locks.Config{TTL: 5 * time.Second})
	l := c.Locker(locktest.Name(t)).(locks.SharedLocker)
	ctx := locktest.Timeout(t, 30*time.Second)
	r1, err := l.AcquireShared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := shareWithin(l, time.Second)
	if err != nil {
		t.Fatalf("second reader while one reads: %v", err)
	}
	// a writer waits until both readers left
	w := locktest.AcquireAsync(t, l.Acquire)
	locktest.Waiting(t, w, "writer among readers")
	locktest.ReleaseHeld(t, ctx, r1, "reader 1")
	locktest.Waiting(t, w, "writer while a reader reads")
	locktest.ReleaseHeld(t, ctx, r2, "reader 2")
	writer := locktest.Granted(t, w, "writer after the readers left")
	if _, err := shareWithin(l, 300*time.Millisecond); err == nil {
		t.Fatal("reader entered while a writer writes")
	}
	locktest.ReleaseHeld(t, ctx, writer, "writer")
}

func shareWithin(l locks.SharedLocker, d time.Duration) (locks.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.AcquireShared(ctx)
}

// TestRWDeadReaderExpires: a reader whose client went away (no renewal)
// stops blocking writers after its TTL, though other readers keep renewing
// theirs.
func TestRWDeadReaderExpires(t *testing.T) {
	srv := newServer(t)
	name := locktest.Name(t)
	dead := srv.client(t, redislock.RW, locks.Config{TTL: time.Second})
	live := srv.client(t, redislock.RW, locks.Config{TTL: time.Second})
	ctx := locktest.Timeout(t, 30*time.Second)
	if _, err := dead.Locker(name).(locks.SharedLocker).AcquireShared(ctx); err != nil {
		t.Fatal(err)
	}
	_ = dead.Close() // its watchdog's renewals fail from now on
	r, err := live.Locker(name).(locks.SharedLocker).AcquireShared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseHeld(t, ctx, r, "live reader")
	start := time.Now()
	w := locktest.AcquireWithin(t, live.Locker(name), 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("writer waited %s for a dead reader of ttl 1s", d)
	}
	locktest.ReleaseHeld(t, ctx, w, "writer")
}

// TestRWMixed: 6 clients mixing reads and writes on redis-rw: never a
// writer with anyone else inside, and readers do share.
func TestRWMixed(t *testing.T) {
	srv := newServer(t)
	name := locktest.Name(t)
	var readers, writers locktest.Inside
	var bad atomic.Int64
	var wg sync.WaitGroup
	ctx := locktest.Timeout(t, 60*time.Second)
	for i := range 6 {
		c := srv.client(t, redislock.RW, locks.Config{TTL: 10 * time.Second, Seed: int64(i)})
		l := c.Locker(name).(locks.SharedLocker)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 15 {
				read := (i+round)%3 != 0
				var lease locks.Lease
				var err error
				if read {
					lease, err = l.AcquireShared(ctx)
				} else {
					lease, err = l.Acquire(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if read {
					readers.Enter()
					if writers.Now() > 0 {
						bad.Add(1)
					}
				} else if writers.Enter() > 1 || readers.Now() > 0 {
					bad.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				if read {
					readers.Leave()
				} else {
					writers.Leave()
				}
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d entries broke the read-write promise", bad.Load())
	}
	if readers.Peak() < 2 {
		t.Errorf("readers never shared the lock (at most %d at once)", readers.Peak())
	}
}

// TestSemaphorePermits: 3 permits are taken at once, a fourth waits for a
// release; a holder whose client went away gives its permit back after the
// TTL in redis-semaphore and never in redis-semaphore-leaky.
func TestSemaphorePermits(t *testing.T) {
	srv := newServer(t)
	for _, v := range []redislock.Variant{redislock.Semaphore, redislock.SemaphoreLeaky} {
		t.Run(string(v), func(t *testing.T) {
			name := locktest.Name(t)
			opts := map[string]string{locks.PermitsOption: "3"}
			c := srv.client(t, v, locks.Config{TTL: time.Second, Options: opts})
			ctx := locktest.Timeout(t, 30*time.Second)
			var held []locks.Lease
			for range 2 {
				held = append(held, locktest.AcquireWithin(t, c.Locker(name), time.Second))
			}
			dead := srv.client(t, v, locks.Config{TTL: time.Second, Options: opts})
			locktest.AcquireWithin(t, dead.Locker(name), time.Second)
			if _, err := acquireWithin(c.Locker(name), 300*time.Millisecond); err == nil {
				t.Fatal("a fourth holder of 3 permits")
			}
			locktest.ReleaseHeld(t, ctx, held[0], "holder 1")
			held[0] = locktest.AcquireWithin(t, c.Locker(name), 5*time.Second)
			_ = dead.Close() // its permit's renewal stops
			_, err := acquireWithin(c.Locker(name), 4*time.Second)
			switch {
			case v == redislock.Semaphore && err != nil:
				t.Errorf("a dead holder's permit did not come back after its TTL: %v", err)
			case v == redislock.SemaphoreLeaky && err == nil:
				t.Errorf("the leaky semaphore gave a dead holder's permit back")
			}
			for _, l := range held {
				locktest.ReleaseHeld(t, ctx, l, "holder")
			}
		})
	}
}

func acquireWithin(l locks.Locker, d time.Duration) (locks.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.Acquire(ctx)
}

// TestFairOrder: waiters of redis-fair get the lock in the order they
// asked for it.
func TestFairOrder(t *testing.T) {
	srv := newServer(t)
	name := locktest.Name(t)
	ctx := locktest.Timeout(t, 30*time.Second)
	first := locktest.AcquireWithin(t, srv.client(t, redislock.Fair, locks.Config{TTL: 5 * time.Second}).Locker(name), time.Second)
	order := make(chan int, 4)
	for i := range 4 {
		c := srv.client(t, redislock.Fair, locks.Config{TTL: 5 * time.Second, Seed: int64(i)})
		go func() {
			lease, err := c.Locker(name).Acquire(ctx)
			if err != nil {
				t.Error(err)
				order <- -1
				return
			}
			order <- i
			time.Sleep(20 * time.Millisecond)
			_ = lease.Release(ctx)
		}()
		// each waiter has queued before the next asks
		locktest.WaitFor(t, 5*time.Second, "the waiter queued", func() bool {
			n, err := srv.raw.LLen(ctx, key(name)+":queue").Result()
			return err == nil && n == int64(i+1)
		})
	}
	locktest.ReleaseHeld(t, ctx, first, "first holder")
	for want := range 4 {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("grant %d went to waiter %d, want %d (request order)", want, got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("grant %d never came", want)
		}
	}
}
