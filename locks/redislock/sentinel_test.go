package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestSentinelWithReplica connects through Sentinel (every dial through the
// client's proxies) to a primary with one replica, where wait_replicas=1 is
// met.
func TestSentinelWithReplica(t *testing.T) {
	cl := testenv.Cluster(t, cluster.Spec{
		Redis:   &cluster.RedisSpec{Primaries: 1, Replicas: 1, Sentinels: 1},
		Clients: 1,
	})
	e := cl.Endpoints(0)
	eps := locks.Endpoints{Redis: e.Redis, Sentinels: e.Sentinels, MasterNames: e.MasterNames, Redirect: e.Redirect}
	for _, v := range []redislock.Variant{redislock.CAD, redislock.Watchdog, redislock.Reentrant} {
		t.Run(string(v), func(t *testing.T) {
			cfg := locks.Config{Endpoints: eps, TTL: 5 * time.Second}
			if v != redislock.Reentrant {
				cfg.Options = map[string]string{"wait_replicas": "1", "wait_timeout": "2s"}
			}
			c, err := redislock.New(locktest.Timeout(t, 10*time.Second), v, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			lease, err := c.Locker(t.Name()).Acquire(locktest.Timeout(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := lease.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
