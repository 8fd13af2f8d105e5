package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
)

// TestPromise: the promise counts from before the acquiring command was
// sent (so it ends no later than the key), and the watchdog's renewals move
// it forward.
func TestPromise(t *testing.T) {
	s := newServer(t)
	const ttl = 600 * time.Millisecond
	for _, v := range []redislock.Variant{redislock.SetNXExpire, redislock.CAD, redislock.Watchdog, redislock.Reentrant} {
		t.Run(string(v), func(t *testing.T) {
			c := s.client(t, v, locks.Config{TTL: ttl})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			before := time.Now()
			lease, err := c.Locker("promise").Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			p := locks.PromiseOf(lease)
			if p.Unbounded || p.Estimated {
				t.Fatalf("promise %+v: want a measured time bound", p)
			}
			lo, hi := before.Add(ttl-locks.Drift(ttl)), after.Add(ttl-locks.Drift(ttl))
			if p.Until.Before(lo) || p.Until.After(hi) {
				t.Fatalf("promise ends %v after before, want within [%v, %v]", p.Until.Sub(before), lo.Sub(before), hi.Sub(before))
			}
			if v == redislock.Watchdog || v == redislock.Reentrant {
				// after two renewal periods the promise has moved on
				deadline := time.Now().Add(2 * ttl)
				for !locks.PromiseOf(lease).Until.After(p.Until) {
					if time.Now().After(deadline) {
						t.Fatalf("promise did not move after renewals: %v", locks.PromiseOf(lease))
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
