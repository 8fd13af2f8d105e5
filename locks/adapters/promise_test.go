package adapters_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/all"
	"github.com/locklab/locklab/testenv"
)

// TestPromise acquires each lock that is not a single-instance Redis
// variant (those have their own test in redislock) on real servers and
// checks that its lease reports a time-bounded promise that still runs right
// after Acquire returned and never reaches past a TTL from then; the
// library adapters say that theirs is estimated.
func TestPromise(t *testing.T) {
	const ttl = 2 * time.Second
	redis := locks.Endpoints{Redis: []string{testenv.Redis(t), testenv.Redis(t), testenv.Redis(t)}}
	zk := testenv.NewEnsemble(t, locks.ZooKeeper, 1).Endpoints(0)
	etcd := testenv.NewEnsemble(t, locks.Etcd, 1).Endpoints(0)
	for _, tc := range []struct {
		lock      string
		ep        locks.Endpoints
		estimated bool
		moves     bool // a heartbeat or keep-alive moves the promise while held
	}{
		{"redlock", redis, false, false},
		{"redsync", redis, true, false},
		{"bsm-redislock", locks.Endpoints{Redis: redis.Redis[:1]}, true, false},
		{"zk-recipe", zk, false, true},
		{"zk-herd", zk, false, true},
		{"zk-lib", zk, true, true},
		{"etcd-recipe", etcd, false, true},
		{"etcd-mutex", etcd, true, false},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			spec, ok := locks.Lookup(tc.lock)
			if !ok {
				t.Fatalf("%s not registered", tc.lock)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := spec.New(ctx, locks.Config{Endpoints: tc.ep, TTL: ttl, Prefix: "promise-test/"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			lease, err := c.Locker("p").Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			p := locks.PromiseOf(lease)
			if p.Unbounded || p.Estimated != tc.estimated {
				t.Errorf("promise %+v: want bounded, estimated=%v", p, tc.estimated)
			}
			if !p.Until.After(after) || p.Until.After(after.Add(ttl)) {
				t.Errorf("promise ends %v after Acquire returned, want within (0, %v]", p.Until.Sub(after), ttl)
			}
			if tc.moves {
				// the session heartbeat / lease keep-alive runs every ttl/3
				deadline := time.Now().Add(ttl)
				for !locks.PromiseOf(lease).Until.After(p.Until) {
					if time.Now().After(deadline) {
						t.Fatalf("promise did not move within a ttl of holding: %v", locks.PromiseOf(lease))
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if err := lease.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}
