package memcachedlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memcachedlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestConformance runs memcached-add on a real server: mutual exclusion
// and increasing tokens over concurrent clients; a holder whose key
// expired is succeeded no sooner than its promise ends, and its Release
// then says ErrNotHeld without touching the new holder's key; a canceled
// Acquire leaves nothing behind.
func TestConformance(t *testing.T) {
	const clients = 4
	c := testenv.Cluster(t, cluster.Spec{Clients: clients, Backends: map[string]cluster.Settings{"memcached": {}}})
	connect := func(t *testing.T, i int, ttl time.Duration) locks.Client {
		return locktest.Connect(t, memcachedlock.Name, locks.Config{Endpoints: c.Endpoints(i), Prefix: "locklab-test/", TTL: ttl})
	}
	t.Run("MutualExclusion", func(t *testing.T) {
		locktest.Contend(t, locktest.Contenders{
			Connect: func(i int) locks.Client { return connect(t, i, 0) },
			Clients: clients, Rounds: 40, Fencing: true,
		})
	})
	t.Run("ReleaseAfterExpiry", func(t *testing.T) {
		const ttl = 1500 * time.Millisecond
		lock := locktest.Name(t)
		a, b := connect(t, 0, ttl), connect(t, 1, ttl)
		sent := time.Now()
		held := locktest.Acquire(t, a.Locker(lock))
		p := locks.PromiseOf(held)
		if p.Unbounded || p.Until.After(sent.Add(ttl)) || p.Until.Before(sent.Add(ttl-time.Second)) {
			t.Errorf("promise %+v: want at most the TTL (%v) after the add", p, ttl)
		}
		next := locktest.AcquireWithin(t, b.Locker(lock), 10*time.Second)
		if granted := time.Now(); granted.Before(p.Until) {
			t.Errorf("second holder granted %v before the first's promise ended", p.Until.Sub(granted))
		}
		t.Logf("second holder granted %v after the first's add (TTL %v, exptime %ds)",
			time.Since(sent).Round(time.Millisecond), ttl, memcachedlock.Exptime(ttl))
		if next.Token() <= held.Token() {
			t.Errorf("next token %d not above %d", next.Token(), held.Token())
		}
		ctx := locktest.Timeout(t, 10*time.Second)
		if err := held.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
			t.Errorf("stale Release = %v, want ErrNotHeld", err)
		}
		if err := next.Release(ctx); err != nil {
			t.Errorf("new holder's Release after the stale one = %v", err)
		}
		if err := next.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
			t.Errorf("second Release = %v, want ErrNotHeld", err)
		}
	})
	t.Run("CanceledAcquire", func(t *testing.T) {
		lock := locktest.Name(t)
		l := func(i int) locks.Locker { return connect(t, i, 0).Locker(lock) }
		locktest.CanceledAcquire(t, locktest.Acquire(t, l(0)), l(1), l(2), 10*time.Second)
	})
	t.Run("Tries", func(t *testing.T) {
		lock := locktest.Name(t)
		held := locktest.Acquire(t, connect(t, 0, 0).Locker(lock))
		tries := 0
		ctx, cancel := context.WithTimeout(locks.WithTries(context.Background(), func() { tries++ }), 300*time.Millisecond)
		defer cancel()
		if _, err := connect(t, 1, 0).Locker(lock).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire of a held lock = %v, want DeadlineExceeded", err)
		}
		if tries < 2 {
			t.Errorf("%d tries reported in 300ms of polling, want several", tries)
		}
		locktest.ReleaseHeld(t, context.Background(), held, "holder")
	})
}

// TestExptime: the TTL rounded up to whole seconds, plus one.
func TestExptime(t *testing.T) {
	for ttl, want := range map[time.Duration]int{time.Millisecond: 2, time.Second: 2, 1500 * time.Millisecond: 3, 10 * time.Second: 11} {
		if got := memcachedlock.Exptime(ttl); got != want {
			t.Errorf("Exptime(%v) = %d, want %d", ttl, got, want)
		}
	}
}
